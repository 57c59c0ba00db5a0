"""The benchmark's watch figure stays runnable: a tiny run over the shipped demo fleet (the lead measures
10,000 watches over a million machines with `python -m tests.bench --watches 10000`)."""
import pytest

from nodelodge.watches.models import Watch
from tests.bench.runner import Report, parse
from tests.bench.watches import time_watch_evaluation
from tests.factories import load_shipped_catalog

pytestmark = pytest.mark.postgresql(
    reason="the benchmark measures the PostgreSQL deployment: the kept fleet counts"
)


def test_a_tiny_watch_evaluation_fills_its_row(transactional_db):
    load_shipped_catalog()
    report = Report()

    outcome = time_watch_evaluation(60, 12, "demo", report, None)

    first, after_refresh = report.rows
    assert first.figure.startswith("watch evaluation, first check of new watches (")
    assert after_refresh.figure == "watch evaluation after a refresh, 60 watches (12 distinct queries)"
    assert first.value > 0 and after_refresh.value > 0 and after_refresh.passed is None
    assert (outcome["watches"], outcome["queries"]) == (60, 12)
    assert 0 < outcome["fired"] == outcome["queued"] <= 60
    assert Watch.objects.filter(matching=True).count() == outcome["fired"]


def test_the_option_sets_the_number_and_smoke_leaves_it_out():
    assert parse(["--watches", "25"]).watches == 25
    assert parse([]).watches == 10_000
    assert parse(["--smoke"]).watches == 0
