"""Reads for "My launches"."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import Case, IntegerField, Value, When
from django.utils import timezone

from .models import Booking


@dataclass(frozen=True)
class BookingRow:
    booking: Booking
    hours_elapsed: Decimal
    cost_so_far: Decimal  # hours elapsed × price per hour, to the cent
    ends_by: datetime | None  # start + booking limit, when the machine has one


def bookings_for(user, now: datetime | None = None) -> list[BookingRow]:
    """The user's bookings, running first, newest first within each."""
    now = now or timezone.now()
    bookings = (
        Booking.objects.filter(user=user)
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
    return [
        BookingRow(
            booking=booking,
            hours_elapsed=booking.hours_elapsed(now),
            cost_so_far=booking.cost_so_far(now),
            ends_by=(
                booking.started_at + timedelta(hours=booking.booking_limit_hours)
                if booking.booking_limit_hours is not None
                else None
            ),
        )
        for booking in bookings
    ]
