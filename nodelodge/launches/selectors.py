"""Reads for "My launches"."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Case, IntegerField, Value, When
from django.utils import timezone

from catalog.models import ImagePipeline, LanguageModel, SpeechModel
from sizing.workloads import WORKLOAD_WORDS

from .models import Booking, LaunchGroup


@dataclass(frozen=True)
class BookingRow:
    booking: Booking
    hours_elapsed: Decimal
    cost_so_far: Decimal  # hours elapsed × price per hour, to the cent
    ends_by: datetime | None  # when the booking limit ends it (`Booking.ends_at`), when there is one
    model_name: str | None = None  # the catalog name of the model the booking was sized for

    @property
    def workload_words(self) -> str:
        workload = self.booking.workload.get("workload", "")
        words = WORKLOAD_WORDS.get(workload, workload)
        model = self.model_name or self.booking.workload.get("model")
        return f"{words}: {model}" if model else words


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
        .select_related("machine__provider", "machine__gpu_type")
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
    groups = LaunchGroup.objects.filter(user=user)
    if pk is not None:
        groups = groups.filter(pk=pk)
    groups = list(groups.order_by("-created_at", "-pk"))
    bookings: dict[int, list[Booking]] = {group.pk: [] for group in groups}
    for booking in (
        Booking.objects.filter(group__in=groups)
        .select_related("machine__provider", "machine__gpu_type")
        .order_by("machine_id")
    ):
        bookings[booking.group_id].append(booking)
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
