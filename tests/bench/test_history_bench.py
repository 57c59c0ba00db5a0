"""The benchmark's price history figure stays runnable: a tiny run over the shipped demo fleet (the
figure itself is measured at 1,000,000 machines with `python -m tests.bench --history-only`)."""
import pytest

from nodelodge.refresh.models import ALL_COUNTRIES, PriceHistory
from tests.bench.history import KEPT_DAYS, time_history_page
from tests.bench.runner import Report, parse
from tests.factories import load_shipped_catalog

pytestmark = pytest.mark.postgresql(reason="the benchmark measures the PostgreSQL deployment (generate_series)")


def test_a_tiny_history_run_fills_its_rows(transactional_db, client):
    load_shipped_catalog()
    report = Report()

    time_history_page("demo", report, runs=2, warmup=1, target=False)

    groups = PriceHistory.objects.values("gpu_type", "market", "country").distinct().count()
    assert groups > 0 and PriceHistory.objects.count() == groups * KEPT_DAYS * 24
    assert PriceHistory.objects.filter(country=ALL_COUNTRIES).exists()
    figures = [row.figure for row in report.rows]
    assert figures[0].startswith("price history built: ")
    assert len(figures) == 1 + 4 * 2 and all(row.value > 0 for row in report.rows)


def test_the_modes():
    assert parse(["--history-only"]).sizes == (1_000_000,)
    assert parse(["--history-only"]).queries == 0 and parse(["--history-only"]).history
    assert not parse(["--smoke"]).history and not parse(["--no-history"]).history
