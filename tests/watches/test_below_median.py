"""The watch condition "below its 30-day median": the cheapest machine's price per GPU-hour against the
median of its GPU type's hourly medians in its market (every country) over the refreshes' history."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nodelodge.refresh.history import hour_of
from nodelodge.refresh.models import ALL_COUNTRIES, PriceHistory
from nodelodge.refresh.selectors import thirty_day_median
from nodelodge.watches import evaluation
from nodelodge.watches.evaluation import evaluate_watches
from nodelodge.watches.models import Firing, Watch
from nodelodge.watches.services import WatchRequest, create_watch
from tests.factories import make_user
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db(transaction=True)
QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))


@pytest.fixture(autouse=True)
def no_delivery(monkeypatch):
    monkeypatch.setattr(evaluation, "_queue_delivery", lambda firing_id: None)


def history(gpu_type, medians: list[str], *, market="on_demand", country=ALL_COUNTRIES, now=None, start=0):
    """One hourly row per median, the newest hour `start` hours before now."""
    now = now or timezone.now()
    PriceHistory.objects.bulk_create([
        PriceHistory(gpu_type=gpu_type, market=market, country=country,
                     hour=hour_of(now) - timedelta(hours=start + age), cheapest_per_gpu_hour=Decimal(median),
                     median_per_gpu_hour=Decimal(median), offers=1, offers_in_stock=1, refreshes=1,
                     refreshes_with_stock=1, updated_at=now)
        for age, median in enumerate(medians)
    ])


def watch() -> Watch:
    return create_watch(make_user(), WatchRequest(query=QUERY, condition="below_median"))


def test_the_median_is_of_the_hourly_medians_in_the_market_every_country_within_30_days(catalog):
    now = timezone.now()
    history(catalog.gpu_type, ["2.00", "3.00", "2.60", "9.00"], now=now)
    history(catalog.gpu_type, ["0.10"] * 9, now=now, country="DE")  # one country's rows: not these
    history(catalog.gpu_type, ["0.10"] * 9, now=now, market="interruptible")  # another market
    history(catalog.gpu_type, ["0.10"] * 9, now=now, start=720)  # older than 30 days

    with CaptureQueriesContext(connection) as statements:
        median = thirty_day_median(catalog.gpu_type.name, "on_demand", now)
    assert median == Decimal("2.80")  # (2.60 + 3.00) / 2
    assert len(statements) == 1
    assert thirty_day_median(catalog.gpu_type.name, "reserved", now) is None


def test_it_fires_when_the_cheapest_drops_below_the_median_and_not_before(catalog):
    made = watch()
    now = timezone.now()
    history(catalog.gpu_type, ["2.40", "2.50", "2.60"], now=now)
    machine = catalog.machine(price_per_gpu_hour=Decimal("2.5000"))

    assert evaluate_watches(now=now).fired == []  # at the median: not below
    machine.price_per_gpu_hour = Decimal("2.4900")
    machine.last_seen_at = now
    machine.save()
    fired = evaluate_watches(now=now + timedelta(minutes=1)).fired

    assert len(fired) == 1
    assert Firing.objects.get().cheapest_price_per_hour == Decimal("2.4900")
    made.refresh_from_db()
    assert made.matching


def test_an_interruptible_machine_is_compared_with_the_interruptible_median(catalog):
    watch()
    now = timezone.now()
    history(catalog.gpu_type, ["5.00"], now=now)  # on-demand: far above
    history(catalog.gpu_type, ["1.00"], now=now, market="interruptible")
    catalog.machine(price_per_gpu_hour=Decimal("2.0000"), interruptible=True)

    assert evaluate_watches(now=now).fired == []


def test_without_history_it_never_fires(catalog):
    watch()
    catalog.machine()
    assert evaluate_watches(now=timezone.now()).fired == []


def test_it_costs_one_statement_more_per_query_whatever_the_history(catalog):
    watch()
    catalog.machine(price_per_gpu_hour=Decimal("9.0000"))
    now = timezone.now()
    counts = []
    for hours in (1, 720):
        PriceHistory.objects.all().delete()
        history(catalog.gpu_type, ["2.00"] * hours, now=now)
        with CaptureQueriesContext(connection) as statements:
            evaluate_watches(now=now)
        counts.append(sum("refresh_pricehistory" in s["sql"] for s in statements.captured_queries))
    assert counts == [1, 1]


def test_the_condition_is_offered_on_the_page_and_said_in_german(client, catalog):
    made = watch()
    made.language = "de"
    made.save()
    from django.template.loader import render_to_string
    from django.utils import translation

    with translation.override("de"):
        said = render_to_string("watches/_condition.html", {"watch": made})
    assert said == "Günstigstes unter dem 30-Tage-Median seines GPU-Typs"
