from django.db import models

from catalog.markets import Market


class SyncRun(models.Model):
    """One attempt to refresh one provider from its feed."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        OK = "ok", "OK"  # every record accepted
        # applied; some records rejected (rejected_details) or held back in part (held_back_details)
        PARTIAL = "partial", "Partial"
        FAILED = "failed", "Failed"  # nothing changed for this provider (see error)
        SKIPPED = "skipped", "Skipped"  # another refresh of the provider was running, or none possible

    # Rejected records (and held-back parts) kept in full; the counts are always exact.
    REJECTED_DETAILS_LIMIT = 200

    provider = models.ForeignKey("catalog.Provider", on_delete=models.CASCADE, related_name="sync_runs")
    feed_url = models.CharField(max_length=300, blank=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    received = models.PositiveIntegerField(default=0, help_text="Records in the feed.")
    added = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    gone = models.PositiveIntegerField(default=0, help_text="Machines missing from the feed, marked gone.")
    rejected = models.PositiveIntegerField(default=0)
    held_back = models.PositiveIntegerField(
        default=0,
        help_text="Machines whose record contradicted running bookings: their booked shape was kept.",
    )
    error = models.TextField(blank=True)
    held_back_details = models.JSONField(
        default=list, blank=True,
        help_text="What was held back of each such record: machine id and reason (the first 200).",
    )
    rejected_details = models.JSONField(
        default=list, blank=True, help_text="Rejected records: machine id and reason (the first 200)."
    )

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["provider", "-started_at"], name="refresh_syncrun_provider_idx")]

    def __str__(self) -> str:
        return f"{self.provider} {self.started_at:%Y-%m-%d %H:%M:%S} {self.status}"

    @property
    def duration_seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class FeedConflict(models.Model):
    """A machine whose provider's feed contradicts the console's running bookings on it: a record with
    fewer GPUs than the bookings hold, another GPU type or memory, or no record at all (missing from
    the feed). The bookings and the machine's booked shape are kept, and the machine offers no GPU,
    until a record applies in full again (`nodelodge.refresh.conflicts`). One per machine at most;
    the refresh that no longer finds the contradiction removes it."""

    machine = models.OneToOneField("catalog.Machine", on_delete=models.CASCADE, related_name="feed_conflict")
    missing = models.BooleanField(default=False, help_text="The machine is missing from the feed.")
    reported_gpu_type = models.CharField(
        max_length=100, blank=True, help_text="The GPU type the feed reported (the catalog's name)."
    )
    reported_gpu_count = models.PositiveSmallIntegerField(null=True, blank=True)
    reported_memory_per_gpu_mib = models.PositiveIntegerField(null=True, blank=True)
    held_gpus = models.PositiveSmallIntegerField(
        help_text="GPUs held by running bookings when last reported."
    )
    reason = models.TextField(help_text="What was held back and why, as the sync history says it.")
    since = models.DateTimeField(help_text="The first refresh that found it.")
    last_reported_at = models.DateTimeField(help_text="The last refresh that found it.")

    class Meta:
        ordering = ["-since", "-id"]

    def __str__(self) -> str:
        return f"{self.machine_id}: {self.reason}"


# The country of a history row that counts every country at once (an hour's rows per country cannot be
# added up into it: a median, or whether any country had stock, does not add).
ALL_COUNTRIES = "*"


class PriceHistory(models.Model):
    """One hour of a GPU type's offers in one country (ALL_COUNTRIES: all of them) and one market, as
    the refreshes in that hour sampled them (`history.sample_price_history`). Bounded: one row per GPU
    type, country, market and hour, kept PRICE_HISTORY_RETENTION_DAYS (`services.prune_price_history`).

    A refresh samples the whole fleet's offers live at that moment (in the fleet, provider active, not
    stale), at most once every PRICE_HISTORY_SAMPLE_SECONDS across all providers (`HistorySampling`):
    `cheapest` is the lowest price any sampling refresh of the hour saw; `median`, `offers` and
    `offers_in_stock` are the hour's latest sample's; and `refreshes_with_stock` of `refreshes` (the
    sampling refreshes) saw at least one offer with a free GPU, so the share of them with stock is exact."""

    gpu_type = models.ForeignKey("catalog.GpuType", on_delete=models.CASCADE, related_name="+")
    market = models.CharField(max_length=16, choices=Market.choices)
    country = models.CharField(max_length=2, help_text='ISO 3166 alpha-2; "" unknown; "*" every country.')
    hour = models.DateTimeField(help_text="The hour's start (UTC).")
    cheapest_per_gpu_hour = models.DecimalField(max_digits=10, decimal_places=4)
    # The mean of the two middle prices where the count is even: one decimal place more than a price.
    median_per_gpu_hour = models.DecimalField(max_digits=11, decimal_places=5)
    offers = models.PositiveIntegerField(help_text="Offers the hour's latest refresh saw.")
    offers_in_stock = models.PositiveIntegerField(help_text="Of them, available with a free GPU.")
    refreshes = models.PositiveIntegerField(
        help_text="Sampling refreshes in the hour that saw this GPU type's offers."
    )
    refreshes_with_stock = models.PositiveIntegerField(help_text="Of them, those that saw a free GPU.")
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["gpu_type", "market", "country", "hour"]
        constraints = [
            models.UniqueConstraint(fields=["gpu_type", "market", "country", "hour"],
                                    name="refresh_pricehistory_one_per_hour"),
            models.CheckConstraint(condition=models.Q(refreshes_with_stock__lte=models.F("refreshes")),
                                   name="refresh_pricehistory_stock_le_refreshes"),
        ]
        indexes = [models.Index(fields=["hour"], name="refresh_pricehistory_hour_idx")]

    def __str__(self) -> str:
        return f"{self.gpu_type_id} {self.market} {self.country} {self.hour:%Y-%m-%d %H:00}"


class HistorySampling(models.Model):
    """When a refresh last sampled the price history: one row. A sample reads the whole fleet, so it is
    taken at most once every PRICE_HISTORY_SAMPLE_SECONDS however many providers refresh
    (`history.sample_price_history`), and the refreshes' work does not grow with their number."""

    sampled_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"price history sampled at {self.sampled_at}"
