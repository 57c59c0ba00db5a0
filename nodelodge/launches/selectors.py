"""Reads for "My launches"."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Case, IntegerField, Value, When
from django.utils import timezone

from catalog.models import ImagePipeline, LanguageModel, SpeechModel
from sizing.workloads import WORKLOAD_WORDS

from .models import Booking


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


def bookings_for(user, now: datetime | None = None, pk: int | None = None) -> list[BookingRow]:
    """The user's bookings (or the one with `pk`), running first, newest first within each."""
    now = now or timezone.now()
    mine = Booking.objects.filter(user=user)
    if pk is not None:
        mine = mine.filter(pk=pk)
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
