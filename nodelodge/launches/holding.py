"""The GPUs bookings hold: how many, given back when a booking ends (Stop, or its booking limit).

The rule every path that sets free GPUs keeps: a machine never offers more GPUs than it has less
those its running console bookings hold. A provider's feed may or may not yet reflect the console's
bookings, so the free GPUs it reports are taken as an upper bound, never added to what Launch took:
free = min(reported free, gpu_count - GPUs of running bookings), and never below zero.

A machine booked alone is a group of one: Stop and the booking limit end a group's bookings together
(a cluster short of one machine serves nothing), and lock them in the order of their ids, then write
their machines in the order of theirs, so two of them never deadlock. Lock order is always booking,
then machine, as Launch keeps it.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import cast

from django.db import transaction
from django.db.models import F, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce, Greatest, Least
from django.utils import timezone

from catalog.models import Machine

from .models import Booking, LaunchGroup


class BookingNotFound(Exception):
    """No booking (or group) with that id belongs to this user."""


@dataclass(frozen=True)
class StopOutcome:
    bookings: list[Booking]  # every booking that stopped with the one asked: its group's, by machine
    stopped: bool  # False when they had already ended (a second click on Stop)
    group: LaunchGroup | None = None  # None for a machine booked alone
    asked: int | None = None  # the booking asked for by its id; None when a group was

    @property
    def booking(self) -> Booking:
        """The booking asked for (a group's first when the group was)."""
        return next((b for b in self.bookings if b.pk == self.asked), self.bookings[0])


def _running_held():
    """GPUs of the running bookings on the outer query's machine, as a subquery."""
    return (
        Booking.objects.filter(machine=OuterRef("pk"), status=Booking.Status.RUNNING)
        .order_by().values("machine").annotate(held=Sum("gpus")).values("held")
    )


def gpus_held(machines) -> dict[int, int]:
    """GPUs held by running bookings on each of these machines (a queryset), by machine id; machines
    without a running booking are left out. One query."""
    return dict(
        Booking.objects.filter(machine__in=machines, status=Booking.Status.RUNNING)
        .order_by()
        .values("machine_id")
        .annotate(held=Sum("gpus"))
        .values_list("machine_id", "held")
    )


def with_held_gpus(machines):
    """These machines (a queryset), each with the GPUs its running bookings hold (`held_by_bookings`),
    in the same statement: a refusal for too few free GPUs says whether bookings or the provider's feed
    took them without another read."""
    return machines.annotate(held_by_bookings=Coalesce(Subquery(_running_held()), 0))


def cap_free_gpus_by_bookings(machines, now: datetime | None = None) -> int:
    """Lowers the free GPUs of these machines (a queryset) that hold running bookings to at most
    gpu_count less the booked GPUs. One UPDATE, whatever the number of machines; run it in the
    transaction that wrote the counts, after the write, so a Launch that committed in between is
    counted (the write holds the rows' locks until commit, so none can commit after). Returns how many
    machines were lowered."""
    capped = Greatest(F("gpu_count") - Subquery(_running_held()), 0)
    over = (
        machines.filter(bookings__status=Booking.Status.RUNNING)
        .alias(capped=capped)
        .filter(free_gpus__gt=F("capped"))
        .values("pk")
    )
    return Machine.objects.filter(pk__in=over).update(
        free_gpus=Least(F("free_gpus"), capped), updated_at=now or timezone.now()
    )


def give_back_gpus(machine_id: int, gpus: int) -> None:
    """The GPUs of a booking that ended, offered again: capped at gpu_count, as a provider refresh may
    already have reported them free. A machine whose provider's feed contradicts its bookings (it
    keeps the shape it was booked on, `nodelodge.refresh.conflicts`) offers none: what it really has
    is known again only when a record of its feed applies in full.

    The machine's row is locked first and its flag read after, by a statement of its own: on
    PostgreSQL a statement sees what committed before it began, so a refresh that flagged the machine
    while this waited for its row is seen (a single UPDATE joining the flag would read it as it was
    before the wait)."""
    list(Machine.objects.select_for_update().filter(pk=machine_id).values_list("pk", flat=True))
    Machine.objects.filter(pk=machine_id, feed_conflict__isnull=True).update(
        free_gpus=Least(F("free_gpus") + gpus, F("gpu_count"))
    )


def _lock(*, group_id: int | None, booking_id: int | None, user=None) -> list[Booking]:
    """The group's bookings (or the one booked alone, the user's when `user` is given), locked in
    the order of their ids."""
    rows = Booking.objects.select_for_update()
    if group_id is not None:
        return list(rows.filter(group_id=group_id).order_by("pk"))
    rows = rows.filter(pk=cast(int, booking_id))  # without a group, a booking is named
    return list(rows.filter(user=user) if user is not None else rows)


def _end_locked(bookings: list[Booking], ended_at: datetime | None = None, *,
                due_by: datetime | None = None) -> list[Booking]:
    """Ends the running ones of these bookings (locked, one group's or one alone) at `ended_at` (with
    `due_by` instead: at the first booking limit reached by then, if any) and gives their GPUs back,
    machines in the order of their ids; returns those ended."""
    running = [booking for booking in bookings if booking.is_running]
    if due_by is not None:
        due = [b.ends_at for b in running if b.ends_at is not None and b.ends_at <= due_by]
        if not due:
            return []
        ended_at = min(due)
    for booking in running:
        booking.status = Booking.Status.ENDED
        booking.ended_at = ended_at
    Booking.objects.bulk_update(running, ["status", "ended_at"])
    for booking in sorted(running, key=lambda b: b.machine_id):
        give_back_gpus(booking.machine_id, booking.gpus)
    return running


def stop(user, booking_id: int | None = None, *, group_id: int | None = None,
         now: datetime | None = None) -> StopOutcome:
    """End the user's booking (`booking_id`) or group (`group_id`) and give the GPUs back, in one
    transaction. A booking of a group stops its whole group: a cluster short of one machine serves
    nothing. Another user's, or none: BookingNotFound. Stopping what already ended changes nothing (a
    second click on Stop)."""
    if group_id is None:
        group_id = Booking.objects.filter(pk=cast(int, booking_id), user=user).values_list(  # one is named
            "group_id", flat=True).first()
    with transaction.atomic():
        group = None
        if group_id is not None:
            group = LaunchGroup.objects.filter(pk=group_id, user=user).first()
            if group is None:
                raise BookingNotFound(group_id)
        bookings = _lock(group_id=group_id, booking_id=booking_id, user=user)
        if not bookings:
            raise BookingNotFound(booking_id)
        ended = _end_locked(bookings, now or timezone.now())
        if group is not None:
            bookings = list(
                group.bookings.select_related("machine__provider", "machine__gpu_type").order_by("machine_id")
            )
    return StopOutcome(bookings, stopped=bool(ended), group=group, asked=booking_id)


def end_expired_bookings(*, now: datetime | None = None, user=None) -> int:
    """End every running booking that has reached its machine's booking limit, at the moment the
    limit was reached, and give its GPUs back; a group's bookings end together, when the first of
    them reaches its limit. Run by Celery beat (`launches.tasks`) and before "My launches" is read, so
    a booking never shows as running past its limit. Returns how many ended. Each booking is locked
    and checked again, so a Stop at the same moment ends it once."""
    now = now or timezone.now()
    # The end is stored when booked (`Booking.ends_at`), so this is a plain indexed comparison that
    # every database evaluates alike: no date arithmetic in SQL.
    due = Booking.objects.filter(status=Booking.Status.RUNNING, ends_at__lte=now)
    if user is not None:
        due = due.filter(user=user)
    ended = 0
    for booking_id in list(due.values_list("pk", flat=True)):
        with transaction.atomic():
            group_id = Booking.objects.filter(pk=booking_id).values_list("group_id", flat=True).first()
            ended += len(_end_locked(_lock(group_id=group_id, booking_id=booking_id), due_by=now))
    return ended
