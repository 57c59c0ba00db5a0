"""The price history page in Debian's chromium, English and German: the chart and its table are shown,
a filter swaps the history in place (htmx) and pushes its address, and axe-core finds nothing serious."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from nodelodge.refresh.history import hour_of
from nodelodge.refresh.models import ALL_COUNTRIES, PriceHistory
from tests.a11y import assert_accessible
from tests.factories import make_gpu_type

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def h100_history(transactional_db):
    gpu_type = make_gpu_type()
    now = timezone.now()
    PriceHistory.objects.bulk_create([
        PriceHistory(gpu_type=gpu_type, market="on_demand", country=country, hour=hour_of(now) - timedelta(hours=age),
                     cheapest_per_gpu_hour=Decimal("1.50") + Decimal(age % 24) / 100,
                     median_per_gpu_hour=Decimal("2.10") + (Decimal("0.40") if country == "DE" else 0),
                     offers=4, offers_in_stock=1, refreshes=2, refreshes_with_stock=age % 3 and 1,
                     updated_at=now)
        for age in range(24 * 30) for country in (ALL_COUNTRIES, "DE")
    ])
    return gpu_type


@pytest.mark.parametrize(("prefix", "median"), [("", "$2.10"), ("/de", "2,10 $")])
def test_the_history_page_filters_in_place_and_passes_axe(page, live_server, h100_history, prefix, median):
    page.goto(f"{live_server.url}{prefix}/gpus/{h100_history.slug}/history/")

    expect(page.get_by_test_id("history-chart")).to_be_visible()
    expect(page.get_by_test_id("history")).to_contain_text(median)
    assert_accessible(page, f"history page {prefix or '/'}")

    page.select_option("#id_country", "DE")
    expect(page.get_by_test_id("history")).to_contain_text(median.replace("2,10", "2,50").replace("2.10", "2.50"))
    assert "country=DE" in page.url
    assert_accessible(page, f"history page {prefix or '/'}, Germany")
