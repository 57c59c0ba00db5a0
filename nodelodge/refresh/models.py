from django.db import models


class SyncRun(models.Model):
    """One attempt to refresh one provider from its feed."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        OK = "ok", "OK"  # every record accepted
        PARTIAL = "partial", "Partial"  # applied; some records rejected (see rejected_details)
        FAILED = "failed", "Failed"  # nothing changed for this provider (see error)
        SKIPPED = "skipped", "Skipped"  # another refresh of the provider was running, or none possible

    # Rejected records kept in full; the count is always exact.
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
    error = models.TextField(blank=True)
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
