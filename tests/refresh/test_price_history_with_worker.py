"""The history as the real Celery worker keeps it: a refresh from a feed served over HTTP on loopback
adds its hour, a failed one adds nothing, and the periodic task prunes past the retention."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from nodelodge.refresh import tasks
from nodelodge.refresh.history import hour_of
from nodelodge.refresh.models import ALL_COUNTRIES, PriceHistory
from tests.factories import make_machine
from tests.feeds import feed, record

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker")]
TASK_TIMEOUT = 60


def test_each_refresh_on_the_worker_adds_to_the_hour(feed_server, gpu_types, providers, settings):
    settings.PRICE_HISTORY_SAMPLE_SECONDS = 0  # every refresh samples (the worker runs in this process)
    secure = providers["secure"]
    secure.feed_url = feed_server.serve_json("history", feed(secure.slug, [
        record("a", price_per_gpu_hour="2.49", free_gpus=0),
        record("b", price_per_gpu_hour="1.99", free_gpus=2, country="US"),
        record("c", price_per_gpu_hour="0.99", interruptible=True),
    ]))
    secure.save()

    for _ in range(2):
        assert tasks.refresh_provider.delay(secure.pk).get(timeout=TASK_TIMEOUT)["status"] == "ok"

    history = {(row.market, row.country): (row.cheapest_per_gpu_hour, row.offers, row.offers_in_stock,
                                           row.refreshes, row.refreshes_with_stock)
               for row in PriceHistory.objects.filter(gpu_type=gpu_types["h100"])}
    assert history == {
        ("on_demand", "DE"): (Decimal("2.4900"), 1, 0, 2, 0),
        ("on_demand", "US"): (Decimal("1.9900"), 1, 1, 2, 2),
        ("on_demand", ALL_COUNTRIES): (Decimal("1.9900"), 2, 1, 2, 2),
        ("interruptible", "DE"): (Decimal("0.9900"), 1, 1, 2, 2),
        ("interruptible", ALL_COUNTRIES): (Decimal("0.9900"), 1, 1, 2, 2),
    }


def test_a_failed_refresh_adds_nothing(feed_server, gpu_types, providers):
    secure = providers["secure"]
    make_machine(secure, gpu_types["h100"])
    secure.feed_url = feed_server.serve_bytes("broken", b"{not json")
    secure.save()

    assert tasks.refresh_provider.delay(secure.pk).get(timeout=TASK_TIMEOUT)["status"] == "failed"
    assert not PriceHistory.objects.exists()


def test_the_periodic_task_prunes_past_the_retention(gpu_types, providers, settings):
    now = timezone.now()
    values = dict(gpu_type=gpu_types["h100"], market="on_demand", country="DE", cheapest_per_gpu_hour=1,
                  median_per_gpu_hour=1, offers=1, offers_in_stock=1, refreshes=1, refreshes_with_stock=1,
                  updated_at=now)
    for days in (200, 91, 89, 0):
        PriceHistory.objects.create(hour=hour_of(now - timedelta(days=days)), **values)

    assert tasks.prune_price_history.delay().get(timeout=TASK_TIMEOUT) == 2
    assert sorted(PriceHistory.objects.values_list("hour", flat=True)) == [
        hour_of(now - timedelta(days=89)), hour_of(now)]
    assert "prune-price-history" in settings.CELERY_BEAT_SCHEDULE
