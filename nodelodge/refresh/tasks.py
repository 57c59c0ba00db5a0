"""Celery tasks: beat runs refresh_all_providers, which queues one refresh per provider.

The tasks are bound to the project's app rather than made "shared": Celery's current app is
per-thread, and a shared task called from a threaded server's request thread would find the
unconfigured fallback app instead of ours.

Staff's refresh on request (`request_refresh`) is here too: it runs these tasks, in-process on the
embedded run, queued for the worker otherwise.
"""
from dataclasses import dataclass, field

from django.utils import timezone

from catalog.models import Provider
from nodelodge.celery import app

from . import history, services
from .models import SyncRun

REFRESH_PROVIDER = "nodelodge.refresh.tasks.refresh_provider"
REFRESH_ALL_PROVIDERS = "nodelodge.refresh.tasks.refresh_all_providers"
PRUNE_PRICE_HISTORY = "nodelodge.refresh.tasks.prune_price_history"


@app.task(name=REFRESH_PROVIDER)
def refresh_provider(provider_id: int) -> dict:
    try:
        run = services.refresh_provider(provider_id)
    except Provider.DoesNotExist:  # deleted after the refresh was queued
        return {"provider_id": provider_id, "sync_run_id": None, "status": "no such provider"}
    if run.status in (run.Status.OK, run.Status.PARTIAL):
        # The fleet changed: the watches are checked against it (delivery runs in its own tasks).
        from nodelodge.watches.tasks import evaluate_watches

        evaluate_watches.delay()
    return {
        "provider_id": provider_id,
        "sync_run_id": run.pk,
        "status": run.status,
        "added": run.added,
        "updated": run.updated,
        "gone": run.gone,
        "rejected": run.rejected,
        "error": run.error,
    }


@app.task(name=REFRESH_ALL_PROVIDERS)
def refresh_all_providers() -> list[dict]:
    """Queues a refresh of every active provider with a feed; each runs (and fails) on its own.
    Returns the queued task per provider, so a caller can follow them."""
    return [
        {"provider_id": provider_id, "task_id": refresh_provider.delay(provider_id).id}
        for provider_id in services.providers_to_refresh()
    ]


@app.task(name=PRUNE_PRICE_HISTORY)
def prune_price_history() -> int:
    """Deletes the price history past its retention (beat, hourly); returns the rows deleted."""
    return history.prune_price_history(timezone.now())


# --- Refreshing on request (staff) ----------------------------------------------------------------


@dataclass(frozen=True)
class RefreshRequest:
    """What asking for a refresh of some providers did."""

    requested: int
    runs: list[SyncRun] = field(default_factory=list)  # refreshed in this process, in order
    task_ids: list[str] = field(default_factory=list)  # handed to the worker, in order
    broker_error: str = ""  # the task queue could not be reached: the exception's class name

    @property
    def queued(self) -> int:
        return len(self.task_ids)


def request_refresh(provider_ids: list[int]) -> RefreshRequest:
    """Refreshes the providers now where tasks run in-process (the embedded run); otherwise queues one
    task per provider for the worker. A task queue that cannot be reached is reported, not raised:
    what was not queued changed nothing, and `refresh_providers` still works without a worker."""
    if not provider_ids:
        return RefreshRequest(requested=0)
    if app.conf.task_always_eager:
        return RefreshRequest(requested=len(provider_ids),
                              runs=[services.refresh_provider(pk) for pk in provider_ids])
    task_ids: list[str] = []
    try:
        for provider_id in provider_ids:
            task_ids.append(refresh_provider.delay(provider_id).id)
    except Exception as error:  # any broker failure (kombu, redis, socket) lands here
        broker_error = type(error).__name__
    else:
        broker_error = ""
    return RefreshRequest(requested=len(provider_ids), task_ids=task_ids, broker_error=broker_error)
