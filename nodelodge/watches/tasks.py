"""Celery tasks of watches: evaluation after every refresh and on beat's schedule; delivery.

Delivery always runs here, never in a request. A webhook that fails is retried with backoff
(WATCH_WEBHOOK_RETRY_DELAYS); after WATCH_WEBHOOK_MAX_FAILURES failed deliveries in a row the watch's
webhook is disabled with the reason, which My launches shows.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.core.cache import cache
from django.db.models import F
from django.utils import timezone

from nodelodge.celery import app

from . import auto, delivery, evaluation, webhooks
from .dispatch import AUTO_LAUNCH, DELIVER_FIRING, DELIVER_WEBHOOK, EVALUATE_DUE_WATCHES, EVALUATE_WATCHES
from .models import Firing, Watch

logger = logging.getLogger(__name__)

# Refreshes of several providers end together: one evaluation runs at a time, and one asked for
# meanwhile makes the running one go round again, so no refresh is left unseen.
LOCK_KEY = "watches:evaluating"
AGAIN_KEY = "watches:evaluate-again"


@app.task(name=EVALUATE_WATCHES)
def evaluate_watches() -> dict:
    cache.set(AGAIN_KEY, 1, timeout=settings.CELERY_TASK_TIME_LIMIT)
    if not cache.add(LOCK_KEY, 1, timeout=settings.CELERY_TASK_TIME_LIMIT):
        return {"skipped": True}
    fired, rounds = [], 0
    try:
        while cache.get(AGAIN_KEY) and rounds < 5:
            cache.delete(AGAIN_KEY)
            rounds += 1
            checked = evaluation.evaluate_watches()
            fired += checked.fired
    finally:
        cache.delete(LOCK_KEY)
    if cache.get(AGAIN_KEY):
        # Asked for again after the last round began (the asker found the lock still held), or more
        # often than five rounds allow: a task of its own goes round again, so no refresh is left
        # unseen.
        evaluate_watches.delay()
    return {"skipped": False, "rounds": rounds, "fired": fired}


@app.task(name=EVALUATE_DUE_WATCHES)
def evaluate_due_watches() -> dict:
    """Beat's: the watches whose next check has come (the fleet goes stale without any refresh)."""
    checked = evaluation.evaluate_watches(due_only=True)
    return {"queries": checked.queries, "watches": checked.watches, "fired": checked.fired}


@app.task(name=DELIVER_FIRING)
def deliver_firing(firing_id: int) -> dict:
    firing = Firing.objects.select_related("watch", "watch__owner").filter(pk=firing_id).first()
    if firing is None:
        return {"firing": firing_id, "delivered": False}
    watch = firing.watch
    done = {"firing": firing_id, "email": False, "webhook": False, "auto_launch": False}
    if watch.email and watch.owner.email and firing.emailed_at is None:
        delivery.send_email(watch, firing)
        Firing.objects.filter(pk=firing.pk).update(emailed_at=timezone.now())
        done["email"] = True
    if watch.webhook_url and not watch.webhook_disabled_reason:
        deliver_webhook.delay(firing.pk, 0)
        done["webhook"] = True
    if watch.auto_launch and watch.auto_launch_booking_id is None:
        auto_launch.delay(firing.pk)
        done["auto_launch"] = True
    return done


@app.task(name=DELIVER_WEBHOOK)
def deliver_webhook(firing_id: int, attempt: int) -> dict:
    firing = Firing.objects.select_related("watch").filter(pk=firing_id).first()
    if firing is None or not firing.watch.webhook_url or firing.watch.webhook_disabled_reason:
        return {"firing": firing_id, "status": "not sent"}
    watch = firing.watch
    body = webhooks.body_for(
        delivery.payload(watch, firing), watch.webhook_format, delivery.summary(watch, firing)
    )
    try:
        status = webhooks.post(watch.webhook_url, body, watch.secret)
        error = None if 200 <= status < 300 else f"The receiver answered {status}."
        if 300 <= status < 400:
            error = f"The receiver answered {status}; redirects are not followed."
    except webhooks.WebhookRefused as refusal:
        error = f"Refused: {refusal}"
    except (OSError, Exception) as failure:  # noqa: BLE001 - any failure to deliver is recorded as such
        error = f"Could not deliver: {failure.__class__.__name__}: {failure}"[:400]
    if error is None:
        Firing.objects.filter(pk=firing.pk).update(webhook_delivered_at=timezone.now(), webhook_error="")
        Watch.objects.filter(pk=watch.pk).update(webhook_failures=0)
        return {"firing": firing_id, "status": "delivered", "attempt": attempt}
    Firing.objects.filter(pk=firing.pk).update(webhook_error=error[:500])
    Watch.objects.filter(pk=watch.pk).update(webhook_failures=F("webhook_failures") + 1)
    watch.refresh_from_db(fields=["webhook_failures"])
    if watch.webhook_failures >= settings.WATCH_WEBHOOK_MAX_FAILURES:
        reason = f"Disabled after {watch.webhook_failures} failed deliveries in a row. Last: {error}"
        Watch.objects.filter(pk=watch.pk).update(webhook_disabled_reason=reason[:500])
        return {"firing": firing_id, "status": "disabled", "error": error}
    delays = settings.WATCH_WEBHOOK_RETRY_DELAYS
    if attempt < len(delays):
        deliver_webhook.apply_async((firing_id, attempt + 1), countdown=delays[attempt])
        return {"firing": firing_id, "status": "retrying", "error": error}
    return {"firing": firing_id, "status": "failed", "error": error}


@app.task(name=AUTO_LAUNCH)
def auto_launch(firing_id: int) -> dict:
    return auto.launch_for(firing_id)
