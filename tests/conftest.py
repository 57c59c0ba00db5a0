"""Shared test setup. The suite runs against real PostgreSQL and Redis (bin/test starts them)."""
import os
from pathlib import Path

import pytest
from django.conf import settings

TESTS = Path(__file__).resolve().parent

# The developer's fast lane, `-m "not browser and not slow"`, leaves these to the full run (CI runs
# everything). Whole modules that start processes, workers or servers, race threads, or run many
# generated examples:
SLOW_MODULES = {
    "accuracy/test_measure_plumbing.py",  # builds tiny models with torch in subprocesses
    "accuracy/test_cache_layouts.py",  # builds small models of every layer kind with torch
    "accuracy/test_parameter_recount.py",  # builds every shipped architecture on the meta device
    "bench/test_smoke.py",  # a benchmark run over a generated fleet
    "hardening/test_faults.py",  # a production process without a database; killed connections
    "hardening/test_fuzzing.py",  # hypothesis: hundreds of requests per test
    "hardening/test_limits.py",  # every model at and past the limits, and hypothesis over the rest
    "hardening/test_production_layout.py",  # nginx and gunicorn processes
    "hardening/test_proxies.py",  # a production process behind a proxy
    "hardening/test_schemathesis.py",  # every API operation against its schema
    "launches/test_concurrency.py",  # threads racing for the last GPU
    "refresh/test_feed_fuzzing.py",  # hypothesis: malformed feeds
    "refresh/test_refresh_with_worker.py",  # a real Celery worker
    "wizard/test_embedded_sqlite.py",  # manage.py in subprocesses on SQLite
    "wizard/test_fleet_counts_concurrency.py",  # threads refreshing, launching and reading at once
}
# Single tests elsewhere that run over a whole or generated fleet, or several of them:
SLOW_TESTS = {
    "catalog/test_generate_fleet.py::test_generated_machines_pass_model_validation",
    "catalog/test_shipped_catalog.py::test_demo_fleet_machines_satisfy_model_validation",
    "refresh/test_refresh_in_bulk.py::test_query_count_does_not_grow_per_machine",
    "wizard/test_counted_fleet.py::test_the_counted_answer_equals_the_engine_over_every_machine",
    "wizard/test_fleet_counts.py::test_kept_counts_equal_the_scan_through_every_write_path",
    "i18n/test_catalogs.py::test_the_console_catalog_holds_exactly_what_the_code_marks",  # makemessages
}
# Fixtures that start something (a worker, a server, a subprocess): any test using one is slow.
SLOW_FIXTURES = {"celery_worker", "live_server", "production_response"}


def pytest_configure(config):
    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgresql" not in engine and not os.environ.get("NODELODGE_ALLOW_SQLITE_TESTS"):
        raise pytest.UsageError(
            "The tests run on PostgreSQL: set DATABASE_URL (bin/test does), "
            f"got engine {engine!r}."
        )
    # Production's password hasher costs about a quarter of a second of CPU per hash, paid for every
    # user a test creates or signs in; what the tests check does not depend on the hash's strength
    # (production settings are checked in their own processes, which this does not reach).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.path.resolve().relative_to(TESTS).as_posix() if TESTS in item.path.parents else ""
        if (
            module in SLOW_MODULES
            or f"{module}::{getattr(item, 'originalname', item.name)}" in SLOW_TESTS
            or SLOW_FIXTURES.intersection(item.fixturenames)
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": "/usr/bin/chromium",
        "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    }


@pytest.fixture(autouse=True, scope="session")
def _allow_sync_orm_beside_playwright():
    """Playwright's sync API runs an event loop in the test thread; Django then refuses ORM calls
    from that thread unless told the access is synchronous on purpose."""
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(autouse=True)
def _english_between_tests():
    """A request activates its page's language on the thread that serves it; the test client serves
    in the test's own thread, so each test starts in the default language, as a fresh process does."""
    from django.utils import translation

    translation.activate(settings.LANGUAGE_CODE)
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture
def feed_server():
    """Provider feeds served by a real HTTP server on loopback (refresh, fleet counts, kept speeds)."""
    from tests.refresh.conftest import FeedServer

    server = FeedServer()
    server.thread.start()
    yield server
    server.release.set()
    server.server.shutdown()
    server.server.server_close()
