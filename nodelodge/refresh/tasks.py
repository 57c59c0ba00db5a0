"""Celery tasks: beat runs refresh_all_providers, which queues one refresh per provider.

The tasks are bound to the project's app rather than made "shared": Celery's current app is
per-thread, and a shared task called from a threaded server's request thread would find the
unconfigured fallback app instead of ours.
"""
from catalog.models import Provider
from nodelodge.celery import app

from . import services

REFRESH_PROVIDER = "nodelodge.refresh.tasks.refresh_provider"
REFRESH_ALL_PROVIDERS = "nodelodge.refresh.tasks.refresh_all_providers"


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
