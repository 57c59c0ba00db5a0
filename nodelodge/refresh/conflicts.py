"""A feed record that contradicts the console's running bookings, decided in one place.

A provider may report a machine with fewer GPUs than the console's running bookings hold on it, with
another GPU type or memory, or not at all. The feed may be a broken export, a GPU the host lost or a
machine relabelled; the console cannot tell which. A booking was made, and its workload sized, on the
shape the machine had then, so a refresh does not rewrite a booked machine under its tenant, and does
not hand out GPUs nobody can account for either. While bookings run on such a machine:

- the bookings keep running and the machine keeps its booked shape: GPU type, GPU count and memory
  are left as they were (so a machine never has fewer GPUs than its bookings hold);
- it offers no GPU (free = 0) until a record applies in full again, and a booking that ends on it
  gives none back (`nodelodge.launches.holding.give_back_gpus`): what it really has is unknown;
- the rest of the record is applied: price, availability, location, terms, being seen;
- what was held back goes, with its reason, into the run's history (`SyncRun.held_back_details`)
  and onto the machine (`FeedConflict`), which the admin lists and My launches tells the booking's
  owner about;
- a machine missing from the feed is marked gone like any other (offered to nobody); its bookings
  keep running, and it is flagged the same way;
- once its bookings have ended, the next record applies in full and the flag goes.

A record that lowers the GPU count to no fewer than the bookings hold contradicts nothing: it is
applied, and its free GPUs are capped by the bookings as always (`cap_free_gpus_by_bookings`).

`keep_booked_shapes` runs in the refresh's transaction after its writes (`services.apply_feed`, the
one path every feed format goes through): those writes hold the machines' row locks on PostgreSQL and
the write lock on SQLite, so the bookings it reads are exactly those that count, none can commit in
between, and a Launch waiting on a machine's row finds it as the refresh left it.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, fields
from datetime import datetime

from django.db.models import Sum

from catalog.models import GpuType, Machine, Provider
from nodelodge.launches.models import Booking

from .models import FeedConflict


@dataclass(frozen=True)
class Shape:
    """What a booking was made on: the figures a feed may not change under running bookings."""

    gpu_type_id: int
    gpu_count: int
    memory_per_gpu_mib: int | None
    memory_source: str
    memory_flag: str

    @classmethod
    def of(cls, machine) -> Shape:
        return cls(*(getattr(machine, name) for name in SHAPE_FIELDS))


SHAPE_FIELDS = tuple(field.name for field in fields(Shape))


@dataclass(frozen=True)
class Conflict:
    """A machine whose feed contradicts its running bookings: `reported` is the shape held back
    (None when the machine is missing from the feed)."""

    machine_pk: int
    machine_id: str  # the provider's
    held_gpus: int
    reason: str
    booked: Shape | None = None
    reported: Shape | None = None

    @property
    def gpu_type_held_back(self) -> bool:
        return (self.reported is not None and self.booked is not None
                and self.reported.gpu_type_id != self.booked.gpu_type_id)


def _gpus(count: int) -> str:
    return f"{count} GPU" if count == 1 else f"{count} GPUs"


def _memory(mib: int | None) -> str:
    return "unknown memory" if mib is None else f"{mib:,} MiB per GPU"


def contradiction(booked: Shape, reported: Shape, held: int, names: Mapping[int, str]) -> str | None:
    """Why `reported` may not replace `booked` while running bookings hold `held` GPUs of the machine,
    in words for the sync history; None when it may (nothing held, or nothing they were booked on
    changes)."""
    if held <= 0:
        return None
    what = []
    if reported.gpu_count < held:
        what.append(f"{_gpus(reported.gpu_count)}, fewer than the {held} held by running bookings")
    if reported.gpu_type_id != booked.gpu_type_id:
        what.append(f"GPU type {names[reported.gpu_type_id]} instead of {names[booked.gpu_type_id]}")
    elif reported.memory_per_gpu_mib != booked.memory_per_gpu_mib:
        what.append(f"{_memory(reported.memory_per_gpu_mib)} instead of {_memory(booked.memory_per_gpu_mib)}")
    if not what:
        return None
    return (
        f"The feed reported {' and '.join(what)}. Kept {booked.gpu_count} × {names[booked.gpu_type_id]} "
        f"as booked ({_gpus(held)} held) and offered none until the bookings end; the rest of the record "
        "was applied."
    )


def missing_reason(held: int) -> str:
    return (
        f"Missing from the feed while running bookings hold {_gpus(held)}: marked gone (offered to "
        "nobody); the bookings keep running on the shape they were booked on."
    )


def keep_booked_shapes(
    provider: Provider,
    reported: Mapping[str, Machine],
    booked: Callable[[str], Shape | None],
    untouched: Collection[str],
    now: datetime,
) -> list[Conflict]:
    """Gives every machine of `provider` whose feed contradicts its running bookings its booked shape
    back, offering no GPU, and keeps its `FeedConflict` up to date; returns the conflicts, by machine
    id. Run in the refresh's transaction after its writes (they hold the machines' locks).

    `reported`: the machines as the feed's records wrote them, by the provider's machine id;
    `booked(id)`: that machine's shape before the refresh (None for a new one); `untouched`: ids of
    machines whose records were rejected (left exactly as they were, their flag included). Reads and
    writes only the machines that running bookings hold, whatever the size of the feed."""
    # The GPUs running bookings hold on each machine, read after the writes: exact, the rows are locked.
    booked_machines = (
        Machine.objects.filter(provider=provider, bookings__status=Booking.Status.RUNNING)
        .values_list("pk", "provider_machine_id", "gone_at")
        .annotate(held=Sum("bookings__gpus"))
        .order_by("provider_machine_id")
    )
    untouched = set(untouched)
    conflicts: list[Conflict] = []
    undecided: list[int] = []  # flags this refresh cannot judge: left as they are
    names: dict[int, str] = {}
    for pk, key, gone_at, held in booked_machines:
        if key in untouched:
            undecided.append(pk)
        elif gone_at is not None:  # missing from this feed, or an earlier one, while booked
            conflicts.append(Conflict(pk, key, held, missing_reason(held)))
        elif key not in reported:  # not in the feed, yet not marked gone (no sweep this time)
            undecided.append(pk)
        elif (before := booked(key)) is not None and (shape := Shape.of(reported[key])) != before:
            names = names or dict(GpuType.objects.values_list("pk", "name"))
            reason = contradiction(before, shape, held, names)
            if reason is not None:
                conflicts.append(Conflict(pk, key, held, reason, booked=before, reported=shape))

    kept = [conflict for conflict in conflicts if conflict.reported is not None]
    if kept:
        Machine.objects.bulk_update(
            [
                Machine(pk=conflict.machine_pk, free_gpus=0, updated_at=now,
                        **{name: getattr(conflict.booked, name) for name in SHAPE_FIELDS})
                for conflict in kept
            ],
            [*SHAPE_FIELDS, "free_gpus", "updated_at"],
        )
    # Every other flag of the provider goes: its machine has no running booking left, or its record
    # no longer contradicts them.
    FeedConflict.objects.filter(machine__provider=provider).exclude(
        machine_id__in=[conflict.machine_pk for conflict in conflicts] + undecided
    ).delete()
    if conflicts:
        _flag(conflicts, names, now)
    return conflicts


def _flag(conflicts: list[Conflict], names: Mapping[int, str], now: datetime) -> None:
    """The machines' flags written, each keeping when it was first found."""
    FeedConflict.objects.bulk_create(
        [
            FeedConflict(
                machine_id=conflict.machine_pk,
                missing=conflict.reported is None,
                reported_gpu_type=names[conflict.reported.gpu_type_id] if conflict.reported else "",
                reported_gpu_count=conflict.reported.gpu_count if conflict.reported else None,
                reported_memory_per_gpu_mib=(
                    conflict.reported.memory_per_gpu_mib if conflict.reported else None
                ),
                held_gpus=conflict.held_gpus,
                reason=conflict.reason,
                since=now,
                last_reported_at=now,
            )
            for conflict in conflicts
        ],
        update_conflicts=True,
        unique_fields=["machine"],
        update_fields=[
            "missing", "reported_gpu_type", "reported_gpu_count", "reported_memory_per_gpu_mib", "held_gpus",
            "reason", "last_reported_at",
        ],
    )
