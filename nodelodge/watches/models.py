"""Watches: a saved workload query and a condition; the console tells its owner when it is met.

A watch keeps the query with every default written out (`query`), so a later change of a default never
changes what a watch means. Each time the condition becomes true (after it was false, and once the
cool-down since the last firing has passed) a `Firing` records what matched and is delivered.
"""
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q


def new_secret() -> str:
    return secrets.token_urlsafe(32)


class Watch(models.Model):
    class Condition(models.TextChoices):
        APPEARS = "appears", "A machine that fits appears"
        CHEAPEST_BELOW = "cheapest_below", "The cheapest machine drops below a price"
        AT_LEAST = "at_least", "At least N machines are available"
        PLAN_BELOW = "plan_below", "The throughput plan's cost drops below a price"
        # Per GPU-hour: the cheapest machine's price against the median of its GPU type's history in
        # its market, every country (nodelodge.refresh.selectors.thirty_day_median).
        BELOW_MEDIAN = "below_median", "The cheapest machine drops below its GPU type's 30-day median"

    class State(models.TextChoices):
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"

    class WebhookFormat(models.TextChoices):
        JSON = "json", "JSON"
        SLACK = "slack", "Slack"
        DISCORD = "discord", "Discord"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="watches")
    query = models.JSONField(help_text="The workload query, every field written out.")
    query_key = models.CharField(
        max_length=2500,
        help_text="The query as one canonical string: watches asking the same share one read.",
    )
    condition = models.CharField(max_length=20, choices=Condition.choices, default=Condition.APPEARS)
    price_per_hour = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True,
        help_text="USD per hour: the price conditions.",
    )
    machines = models.PositiveIntegerField(null=True, blank=True, help_text="N of 'at least N machines'.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.ACTIVE)
    language = models.CharField(max_length=8, default="en", help_text="The e-mail's language.")
    email = models.BooleanField(default=True, help_text="Mail the owner when it fires.")
    cooldown_seconds = models.PositiveIntegerField(default=3600)
    # What the last check found: whether the condition held, and when it stopped holding.
    matching = models.BooleanField(default=False)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    next_check_at = models.DateTimeField(null=True, blank=True)
    last_fired_at = models.DateTimeField(null=True, blank=True)
    # Secrets: the webhook's signing key, the feed's address and the unsubscribe link.
    # Filled when a watch is first saved (`save`); not a field default, so the migrations import no
    # project code. Code that bulk-creates watches passes them itself.
    secret = models.CharField(max_length=64)
    feed_token = models.CharField(max_length=64, unique=True)
    unsubscribe_token = models.CharField(max_length=64, unique=True)
    webhook_url = models.URLField(max_length=2000, blank=True)
    webhook_format = models.CharField(
        max_length=10, choices=WebhookFormat.choices, default=WebhookFormat.JSON
    )
    webhook_failures = models.PositiveIntegerField(default=0, help_text="Deliveries failed in a row.")
    webhook_disabled_reason = models.CharField(max_length=500, blank=True)
    # Auto-Launch: book the cheapest match at most once, never above the cap.
    auto_launch = models.BooleanField(default=False)
    auto_launch_max_price = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    # The booking's id (not a foreign key: a booking is a billing record of its own app, and the watch
    # only remembers that it booked once).
    auto_launch_booking_id = models.BigIntegerField(null=True, blank=True)
    auto_launch_refusal = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["state", "query_key"], name="watches_active_query_idx")]
        constraints = [
            models.CheckConstraint(
                condition=(
                    ~Q(condition__in=["cheapest_below", "plan_below"]) | Q(price_per_hour__isnull=False)
                ),
                name="watches_watch_price_for_price_conditions",
            ),
            models.CheckConstraint(
                condition=~Q(condition="at_least") | Q(machines__gte=1),
                name="watches_watch_machines_for_at_least",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.owner} watches {self.query_key} ({self.condition})"

    def save(self, *args, **kwargs):
        for name in ("secret", "feed_token", "unsubscribe_token"):
            if not getattr(self, name):
                setattr(self, name, new_secret())
        super().save(*args, **kwargs)

    @property
    def cooldown(self) -> timedelta:
        return timedelta(seconds=self.cooldown_seconds)

    def query_key_for_launch(self) -> str:
        """The query string Launch re-reads the workload from (its own defaults written out)."""
        from urllib.parse import urlencode

        params = {k: v for k, v in self.query.items() if not (k == "gpu_plans" and v == "0")}
        return urlencode(params)

    @property
    def is_active(self) -> bool:
        return self.state == self.State.ACTIVE


class Firing(models.Model):
    """One time a watch's condition was met: what matched, and how it was delivered."""

    watch = models.ForeignKey(Watch, on_delete=models.CASCADE, related_name="firings")
    fired_at = models.DateTimeField()
    machines_total = models.PositiveIntegerField()
    cheapest_price_per_hour = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    plan_price_per_hour = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    matches = models.JSONField(help_text="The first machines matched: id, provider, GPUs, price per hour.")
    emailed_at = models.DateTimeField(null=True, blank=True)
    webhook_delivered_at = models.DateTimeField(null=True, blank=True)
    webhook_error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-fired_at", "-pk"]
        indexes = [models.Index(fields=["watch", "-fired_at"], name="watches_firing_watch_idx")]

    def __str__(self) -> str:
        return f"{self.watch_id} fired at {self.fired_at}"
