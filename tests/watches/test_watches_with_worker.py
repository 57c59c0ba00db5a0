"""Watches with a real Celery worker and beat on Redis: a provider refresh on the worker brings the
machine an empty answer was waiting for, the worker evaluates and delivers to a real receiver; beat
alone (no refresh) checks the watches that are due."""
import os
import subprocess
import sys
import time
from decimal import Decimal

import pytest
from django.core import mail

from catalog.models import Machine
from nodelodge.refresh import tasks as refresh_tasks
from nodelodge.watches.models import Firing, Watch
from nodelodge.watches.services import WatchRequest, create_watch
from tests.factories import make_user
from tests.feeds import feed, record
from tests.helpers import LLAMA_8B, TEST_BROKER_URL
from tests.webhooks import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker")]
QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))
DEADLINE_SECONDS = 60


def eventually(check, what: str):
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {DEADLINE_SECONDS} s: {what}")


def test_a_refresh_on_the_worker_fires_the_watch_and_the_worker_delivers(catalog, feed_server, settings):
    settings.WATCH_WEBHOOK_ALLOW_LOOPBACK = True
    receiver = Receiver()
    settings.WATCH_WEBHOOK_ALLOWED_PORTS = [receiver.port]
    try:
        watch = create_watch(make_user(), WatchRequest(query=QUERY, webhook_url=receiver.url()))
        catalog.provider.feed_url = feed_server.serve_json("p", feed(catalog.provider.slug, [
            record("fra-7", gpu_count=1, free_gpus=1, price_per_gpu_hour="2.49"),
        ]))
        catalog.provider.save()

        outcome = refresh_tasks.refresh_provider.delay(catalog.provider.pk).get(timeout=DEADLINE_SECONDS)

        assert outcome["status"] == "ok"
        [call] = receiver.wait_for(1, timeout=DEADLINE_SECONDS)
        assert call.signed_by(watch.secret)
        machine = Machine.objects.get(provider_machine_id="fra-7")
        assert [m["id"] for m in call.document["matches"]] == [machine.pk]
        eventually(lambda: mail.outbox, "the e-mail")
        assert Firing.objects.filter(watch=watch).count() == 1
        # A second refresh with the same machine fires nothing more.
        refresh_tasks.refresh_provider.delay(catalog.provider.pk).get(timeout=DEADLINE_SECONDS)
        eventually(lambda: Watch.objects.get(pk=watch.pk).last_checked_at > Firing.objects.get().fired_at,
                   "the second check")
        assert Firing.objects.filter(watch=watch).count() == 1 and len(receiver.received) == 1
    finally:
        receiver.close()


def test_beat_checks_the_watches_that_are_due(catalog, tmp_path):
    watch = create_watch(make_user(), WatchRequest(query=QUERY, email=False))
    catalog.machine(price_per_gpu_hour=Decimal("2.49"))
    environment = {
        **os.environ, "REDIS_URL": TEST_BROKER_URL, "DJANGO_SETTINGS_MODULE": "nodelodge.settings",
        "WATCH_BEAT_SECONDS": "1", "PROVIDER_REFRESH_INTERVAL_SECONDS": "3600",
    }
    beat = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "celery", "-A", "nodelodge", "beat", "--loglevel=WARNING",
         "-s", str(tmp_path / "schedule")],
        env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        firing = eventually(lambda: Firing.objects.filter(watch=watch).first(), "beat's check")
        assert firing.machines_total == 1
    finally:
        beat.terminate()
        beat.wait(timeout=30)
