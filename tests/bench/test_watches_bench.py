"""The benchmark's watch figure stays runnable: a tiny run over the shipped demo fleet (the lead measures
10,000 watches over a million machines with `python -m tests.bench --watches 10000`)."""
import pytest
from django.db import connection

from nodelodge.watches.models import Watch
from tests.bench.runner import Report, parse, server_env
from tests.bench.watches import time_watch_delivery, time_watch_evaluation
from tests.factories import load_shipped_catalog
from tests.helpers import TEST_BROKER_URL

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


def test_a_tiny_delivery_run_times_each_refresh_to_its_webhook(transactional_db, celery_worker):
    load_shipped_catalog()
    time_watch_evaluation(30, 6, "demo", Report(), None)
    report = Report()
    db = connection.settings_dict
    environment = {**server_env(), "REDIS_URL": TEST_BROKER_URL,
                   "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"}

    outcome = time_watch_delivery("demo", report, environment, rounds=2, target_seconds=60)

    [row] = report.rows
    assert row.figure.startswith("watch delivery after a refresh, p95 of 2 refreshes")
    assert len(outcome["latencies"]) == 2 and all(0 < seconds < 60 for seconds in outcome["latencies"])
    assert row.value == max(outcome["latencies"]) and row.passed is True
    assert not Watch.objects.filter(owner__username="bench-watch-probe").exists()


def test_delivery_without_redis_is_a_note_not_a_figure():
    report = Report()

    assert time_watch_delivery("demo", report, {"REDIS_URL": ""}) == {}
    assert report.rows == [] and "needs Redis" in report.notes[0]
    assert parse([]).watch_delivery_rounds == 20 and parse(["--smoke"]).watch_delivery_rounds == 0
