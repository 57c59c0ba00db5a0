"""Bookings: the GPUs of one machine held for one user, from Launch until Stop; a group of them
booked all or nothing (a cluster, a throughput plan) and stopped together."""
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from catalog.models import Machine

# What an idempotency key from a form or a script may be. A group's bookings get keys with a colon
# (`group:<id>:<machine id>`), which no request can send, so they never meet one.
IDEMPOTENCY_KEY = r"[A-Za-z0-9_-]{8,64}"
# An Auto-Launch books with the key `watch-<watch id>`: My launches tells its bookings by it.
AUTO_LAUNCH_KEY_PREFIX = "watch-"
# The kind of a Launch of one machine booked alone: a group of one that keeps no LaunchGroup row
# (a cluster's and a plan's kinds are LaunchGroup.Kind's).
ALONE = "alone"


class LaunchGroup(models.Model):
    """Machines booked together, all or nothing: a cluster serving one model, or a throughput plan.
    Its bookings start together and end together (Stop, or the first booking limit reached), so its
    status is theirs."""

    class Kind(models.TextChoices):
        CLUSTER = "cluster", "Cluster"
        PLAN = "plan", "Throughput plan"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="launch_groups")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    price_per_hour = models.DecimalField(
        max_digits=14, decimal_places=4,
        help_text="USD per hour for every machine of the group, at booking time.",
    )
    workload = models.JSONField(help_text="The wizard's inputs, as query parameters.")
    result_url = models.CharField(max_length=2500, help_text="The result page the group was booked from.")
    created_at = models.DateTimeField()
    idempotency_key = models.CharField(
        max_length=64, help_text="From the review form; a resubmitted form carries the same key."
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["user", "idempotency_key"], name="launches_group_unique_key"),
            models.CheckConstraint(
                condition=Q(price_per_hour__gte=0), name="launches_group_price_nonnegative"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user}: {self.kind} {self.pk}"

    @property
    def status(self) -> str:
        """Its bookings': running while any runs (they start and end together)."""
        running = any(booking.is_running for booking in self.bookings.all())
        return Booking.Status.RUNNING if running else Booking.Status.ENDED

    @property
    def is_running(self) -> bool:
        return self.status == Booking.Status.RUNNING


class Booking(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        ENDED = "ended", "Ended"

    class Market(models.TextChoices):  # `sizing.markets`' names
        ON_DEMAND = "on_demand", "On demand"
        INTERRUPTIBLE = "interruptible", "Interruptible"
        RESERVED = "reserved", "Reserved"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="bookings")
    # PROTECT: a booking is a billing record; the machine it ran on must outlive it.
    machine = models.ForeignKey(Machine, on_delete=models.PROTECT, related_name="bookings")
    gpus = models.PositiveSmallIntegerField(help_text="GPUs held on the machine.")
    price_per_gpu_hour = models.DecimalField(
        max_digits=10, decimal_places=4, help_text="USD per GPU-hour at booking time."
    )
    price_per_hour = models.DecimalField(
        max_digits=12, decimal_places=4, help_text="USD per hour for all GPUs held, at booking time."
    )
    market = models.CharField(
        max_length=14, choices=Market.choices, default=Market.ON_DEMAND,
        help_text="The market booked, as the review showed it: the machine's listed price's (on demand, "
                  "or interruptible for a machine listed so; the provider may take it back).",
    )
    bid_per_gpu_hour = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True,
        help_text="An interruptible booking's bid, USD per GPU-hour, which it is booked at: the machine runs "
                  "while the bid is at least its floor (the interruptible price). Empty = no bid (booked at "
                  "the listed price).",
    )
    workload = models.JSONField(help_text="The wizard's inputs, as query parameters.")
    result_url = models.CharField(max_length=2500, help_text="The result page the booking was made from.")
    hours_covered = models.DecimalField(
        max_digits=14,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Hours the budget covers at this price, capped by the booking limit. Empty = no budget.",
    )
    booking_limit_hours = models.PositiveIntegerField(
        null=True, blank=True, help_text="The machine's booking limit at booking time. Empty = none."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField()
    ends_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the booking limit ends it: start + limit, stored when booked. Empty = no limit.",
    )
    ended_at = models.DateTimeField(null=True, blank=True)
    idempotency_key = models.CharField(
        max_length=64, help_text="From the Launch form; a resubmitted form carries the same key."
    )
    # PROTECT: the group is the billing record of its bookings.
    group = models.ForeignKey(
        LaunchGroup, on_delete=models.PROTECT, null=True, blank=True, related_name="bookings",
        help_text="The cluster or plan this booking was booked with. Empty = booked alone.",
    )

    class Meta:
        ordering = ["-started_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["user", "idempotency_key"], name="launches_booking_unique_key"),
            models.CheckConstraint(condition=Q(gpus__gte=1), name="launches_booking_gpus_positive"),
            models.CheckConstraint(
                condition=Q(price_per_hour__gte=0) & Q(price_per_gpu_hour__gte=0),
                name="launches_booking_price_nonnegative",
            ),
            models.CheckConstraint(
                condition=Q(booking_limit_hours__isnull=True, ends_at__isnull=True)
                | Q(booking_limit_hours__isnull=False, ends_at__isnull=False),
                name="launches_booking_ends_at_matches_limit",
            ),
            models.CheckConstraint(
                condition=(Q(status="running", ended_at__isnull=True))
                | Q(status="ended", ended_at__isnull=False),
                name="launches_booking_ended_at_matches_status",
            ),
            # A bid is the price of an interruptible booking: booked at it, in that market alone.
            models.CheckConstraint(
                condition=Q(bid_per_gpu_hour__isnull=True)
                | Q(market="interruptible", bid_per_gpu_hour=F("price_per_gpu_hour")),
                name="launches_booking_bid_is_its_interruptible_price",
            ),
        ]
        indexes = [
            models.Index(fields=["user", "status", "-started_at"], name="launches_booking_user_idx"),
            # The running bookings due to end: what beat and My launches look up by time.
            models.Index(
                fields=["ends_at"], condition=Q(status="running"), name="launches_booking_due_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} on {self.machine_id}: {self.gpus} GPU(s), {self.status}"

    @property
    def is_running(self) -> bool:
        return self.status == self.Status.RUNNING

    @staticmethod
    def end_for(started_at: datetime, booking_limit_hours: int | None) -> datetime | None:
        """When a booking started at `started_at` reaches the booking limit; None without one."""
        if booking_limit_hours is None:
            return None
        return started_at + timedelta(hours=booking_limit_hours)

    def hours_elapsed(self, now) -> Decimal:
        """Hours billed so far: start to end (or now), never past the booking limit."""
        until = self.ended_at or now
        if self.ends_at is not None:
            until = min(until, self.ends_at)
        seconds = max(0, int((until - self.started_at).total_seconds()))
        return Decimal(seconds) / Decimal(3600)

    def cost_so_far(self, now) -> Decimal:
        """Exact; shown with the one money rounding (`sizing.units.money_text`)."""
        return self.hours_elapsed(now) * self.price_per_hour
