"""Reads for "My launches"."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import cast

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Case, IntegerField, Value, When
from django.utils import timezone
from django.utils.translation import gettext

from catalog.models import ImagePipeline, LanguageModel, SpeechModel
from sizing.markets import market_name
from sizing.units import MIB, fmt_gib, money_text
from sizing.workloads import WORKLOAD_WORDS

from .models import AUTO_LAUNCH_KEY_PREFIX, Booking, LaunchGroup

# What My launches reads of each booking's machine: its provider, GPU type and feed's contradiction.
MACHINE_RELATIONS = ("machine__provider", "machine__gpu_type", "machine__feed_conflict")


def feed_note(booking: Booking) -> str | None:
    """A word to the owner of a running booking whose provider now reports its machine otherwise
    (`nodelodge.refresh.conflicts`): the booking keeps the shape it was booked on. None otherwise."""
    if not booking.is_running:
        return None
    machine = booking.machine
    try:
        conflict = machine.feed_conflict
    except ObjectDoesNotExist:
        return None
    booked = f"{booking.gpus} × {machine.gpu_type.name}"
    if conflict.missing:
        return gettext(
            "The provider no longer lists this machine. Your booking keeps running on the %(booked)s it "
            "was booked on until it ends."
        ) % {"booked": booked}
    reported = f"{conflict.reported_gpu_count} × {conflict.reported_gpu_type}"
    if conflict.reported_gpu_type == machine.gpu_type.name:
        memory = conflict.reported_memory_per_gpu_mib
        if memory is None:
            reported = gettext("%(shape)s of unknown memory") % {"shape": reported}
        elif memory != machine.memory_per_gpu_mib:
            reported = gettext("%(shape)s with %(memory)s per GPU") % {
                "shape": reported, "memory": fmt_gib(memory * MIB)
            }
    return gettext(
        "The provider now reports this machine as %(reported)s. Your booking keeps the %(booked)s it was "
        "booked on until it ends."
    ) % {"reported": reported, "booked": booked}


@dataclass(frozen=True)
class BookingRow:
    booking: Booking
    hours_elapsed: Decimal
    cost_so_far: Decimal  # hours elapsed × price per hour, to the cent
    ends_by: datetime | None  # when the booking limit ends it (`Booking.ends_at`), when there is one
    model_name: str | None = None  # the catalog name of the model the booking was sized for

    @property
    def auto_launch_watch_id(self) -> int | None:
        """The watch whose Auto-Launch made this booking (its key is `watch-<id>`), or None."""
        key = self.booking.idempotency_key or ""
        if key.startswith(AUTO_LAUNCH_KEY_PREFIX) and key[len(AUTO_LAUNCH_KEY_PREFIX):].isdigit():
            return int(key[len(AUTO_LAUNCH_KEY_PREFIX):])
        return None

    @property
    def workload_words(self) -> str:
        workload = self.booking.workload.get("workload", "")
        words = WORKLOAD_WORDS.get(workload, workload)
        model = self.model_name or self.booking.workload.get("model")
        return f"{words}: {model}" if model else words

    @property
    def feed_note(self) -> str | None:
        return feed_note(self.booking)

    @property
    def market_text(self) -> str | None:
        """The market booked where it is not on demand, in words, with an interruptible booking's bid."""
        booking = self.booking
        if booking.bid_per_gpu_hour is not None:
            return gettext("interruptible, at your bid of %(bid)s per GPU-hour") % {
                "bid": money_text(booking.bid_per_gpu_hour)
            }
        return market_name(booking.market) if booking.market != Booking.Market.ON_DEMAND else None


def _model_names(slugs: set[str]) -> dict[str, str]:
    names: dict[str, str] = {}
    for model in (LanguageModel, SpeechModel, ImagePipeline):
        names.update(dict(model.objects.filter(slug__in=slugs).values_list("slug", "name")))
    return names


def booking_for(user, pk: int, now: datetime | None = None) -> BookingRow | None:
    return next((row for row in bookings_for(user, now, pk=pk)), None)


def bookings_for(user, now: datetime | None = None, pk: int | None = None,
                 alone: bool = False) -> list[BookingRow]:
    """The user's bookings (or the one with `pk`; with `alone`, those booked alone, not in a group),
    running first, newest first within each."""
    now = now or timezone.now()
    mine = Booking.objects.filter(user=user)
    if pk is not None:
        mine = mine.filter(pk=pk)
    if alone:
        mine = mine.filter(group__isnull=True)
    bookings = list(
        mine
        .select_related(*MACHINE_RELATIONS)
        .annotate(
            running_first=Case(
                When(status=Booking.Status.RUNNING, then=Value(0)),
                default=Value(1),
                output_field=IntegerField(),
            )
        )
        .order_by("running_first", "-started_at", "-pk")
    )
    names = _model_names({b.workload.get("model") for b in bookings if b.workload.get("model")})
    return [
        BookingRow(
            booking=booking,
            hours_elapsed=booking.hours_elapsed(now),
            cost_so_far=booking.cost_so_far(now),
            ends_by=booking.ends_at,
            model_name=names.get(booking.workload.get("model")),
        )
        for booking in bookings
    ]


@dataclass(frozen=True)
class GroupRow:
    """A cluster or plan as My launches shows it: one entry, its machines listed."""

    group: LaunchGroup
    bookings: list[Booking]  # in the order of their machines' ids
    hours_elapsed: Decimal
    cost_so_far: Decimal
    ends_by: datetime | None  # when the first booking limit ends the group, when there is one
    model_name: str | None = None

    @property
    def is_running(self) -> bool:
        return any(booking.is_running for booking in self.bookings)

    @property
    def gpus(self) -> int:
        return sum(booking.gpus for booking in self.bookings)

    @property
    def started_at(self) -> datetime:
        return self.group.created_at

    @property
    def ended_at(self) -> datetime | None:
        ends = [booking.ended_at for booking in self.bookings if booking.ended_at is not None]
        return None if self.is_running or not ends else max(ends)

    @property
    def machines(self) -> list[tuple[Booking, str | None]]:
        """Each booking with the word to its owner about its machine's feed, if any (`feed_note`)."""
        return [(booking, feed_note(booking)) for booking in self.bookings]

    @property
    def workload_words(self) -> str:
        workload = self.group.workload.get("workload", "")
        words = WORKLOAD_WORDS.get(workload, workload)
        model = self.model_name or self.group.workload.get("model")
        return f"{words}: {model}" if model else words


def group_for(user, pk: int, now: datetime | None = None) -> GroupRow | None:
    return next((row for row in groups_for(user, now, pk=pk)), None)


def groups_for(user, now: datetime | None = None, pk: int | None = None) -> list[GroupRow]:
    """The user's groups (or the one with `pk`), running first, newest first within each; two queries."""
    now = now or timezone.now()
    chosen = LaunchGroup.objects.filter(user=user)
    if pk is not None:
        chosen = chosen.filter(pk=pk)
    groups = list(chosen.order_by("-created_at", "-pk"))
    bookings: dict[int, list[Booking]] = {group.pk: [] for group in groups}
    for booking in (
        Booking.objects.filter(group__in=groups)
        .select_related(*MACHINE_RELATIONS)
        .order_by("machine_id")
    ):
        bookings[cast(int, booking.group_id)].append(booking)  # bookings of these groups
    names = _model_names({g.workload.get("model") for g in groups if g.workload.get("model")})
    rows = []
    for group in groups:
        held = bookings[group.pk]
        ends = [booking.ends_at for booking in held if booking.ends_at is not None]
        rows.append(GroupRow(
            group=group,
            bookings=held,
            hours_elapsed=max((booking.hours_elapsed(now) for booking in held), default=Decimal(0)),
            cost_so_far=sum((booking.cost_so_far(now) for booking in held), Decimal(0)),
            ends_by=min(ends) if ends else None,
            model_name=names.get(group.workload.get("model")),
        ))
    return sorted(rows, key=lambda row: not row.is_running)  # stable: newest first within each
