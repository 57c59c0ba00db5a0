"""Shared test setup. The suite runs on real PostgreSQL and Redis, and again on SQLite, the embedded
default `bin/run` uses (bin/test runs both). Tests that are PostgreSQL-only by nature carry
`@pytest.mark.postgresql(reason=...)` and are deselected, with their reasons counted, on SQLite.

A test that touches no database gives the same answer on both, so bin/test runs it once: the SQLite
run sets NODELODGE_TEST_LANE=database-only and leaves out (deselects, and counts) every test that
neither asks for the database (pytest-django's `django_db` marker, its `db`, `transactional_db`,
`live_server` or `django_db_setup` fixtures, directly or through any fixture it uses, or a Django
TransactionTestCase) nor is about the embedded default itself (`@pytest.mark.both_lanes`: the local
cache without REDIS_URL, Celery in-process, the SQLite settings).

A browser test checks what a person sees and does in the page; the page is the same HTML whichever
database answered (the answers themselves are checked on both, by the page's and the API's tests and
the differential sweeps), so bin/test runs it once too: on the SQLite run, the embedded default a
newcomer clicks through. Its PostgreSQL run sets NODELODGE_TEST_LANE=without-browser and leaves out
(deselects, and counts) every browser test that is not PostgreSQL-only."""
import os
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

TESTS = Path(__file__).resolve().parent
# The hand-made fleet's fixtures (models_and_gpus, providers, make_machine, small_fleet), and the
# real Celery worker on Redis (celery_worker).
pytest_plugins = ["tests.fleet_fixtures", "tests.celery_worker"]

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
    "hardening/test_read_replica.py",  # a primary, its streaming replica and gunicorn
    "hardening/test_schemathesis.py",  # every API operation against its schema
    "launches/test_concurrency.py",  # threads racing for the last GPU
    "launches/test_group_concurrency.py",  # threads and 200 HTTP clients booking overlapping clusters
    "matching/test_properties.py",  # hypothesis: generated fleets and needs
    "sizing/test_properties.py",  # hypothesis: hundreds of generated workloads per property
    "sizing/test_architecture_properties.py",  # hypothesis: generated architectures
    "hardening/test_hung_redis.py",  # a Redis that never answers, waited on until the breaker opens
    "throughput/test_latest_speeds_concurrency.py",  # threads writing speeds and reading at once
    "refresh/test_feed_fuzzing.py",  # hypothesis: malformed feeds
    "refresh/test_refresh_with_worker.py",  # a real Celery worker
    "refresh/test_price_history_with_worker.py",  # a real Celery worker
    "wizard/test_embedded_sqlite.py",  # manage.py in subprocesses on SQLite
    "wizard/test_fleet_counts_concurrency.py",  # threads refreshing, launching and reading at once
    "watches/test_watches_with_worker.py",  # a real Celery worker and beat
    "watches/test_auto_launch_race.py",  # auto-Launch and a manual Launch racing for the last GPU
    "test_lanes.py",  # pytest in subprocesses, collecting a sample on each lane
}
# Single tests elsewhere that run over a whole or generated fleet, or several of them (the differential
# sweeps: the engine, the ORM and the SQL compared machine by machine over random fleets):
SLOW_TESTS = {
    "catalog/test_generate_fleet.py::test_generated_machines_pass_model_validation",
    "catalog/test_shipped_catalog.py::test_demo_fleet_machines_satisfy_model_validation",
    "refresh/test_refresh_in_bulk.py::test_query_count_does_not_grow_per_machine",
    "wizard/test_counted_fleet.py::test_the_counted_answer_equals_the_engine_over_every_machine",
    "wizard/test_fleet_counts.py::test_kept_counts_equal_the_scan_through_every_write_path",
    "wizard/test_fleet_counts.py::test_shapes_holding_many_prices_are_split_at_every_price_limit_as_the_scan_splits_them",
    "wizard/test_counted_fleet.py::test_each_countrys_machines_and_cheapest_price_equal_that_countrys_own_count",
    "wizard/test_counted_fleet.py::test_the_countries_hint_equals_the_engine_country_by_country",
    "wizard/test_deep_pages.py::test_every_reachable_page_lists_the_machines_it_listed_before_in_the_same_order",
    "throughput/test_latest_speeds.py::test_kept_latest_speeds_equal_the_scan_through_every_write_path",
    "throughput/test_latest_speeds.py::test_plans_equal_those_over_every_speed_through_every_write_path",
    "i18n/test_catalogs.py::test_the_console_catalog_holds_exactly_what_the_code_marks",  # makemessages
    "matching/test_fit_thresholds.py::test_thresholds_give_the_planners_gpu_count_on_every_machine_shape",
    "wizard/test_relax.py::test_an_empty_answer_with_every_hint_costs_as_many_statements_whatever_the_fleet",
    "wizard/test_wizard_view.py::test_query_count_does_not_grow_with_the_fleet",
    "watches/test_webhook_addresses.py::test_a_receiver_that_never_answers_is_given_up_at_five_seconds",
}
# Tests that touch no test database yet are about the embedded default `bin/run` gives (SQLite, no
# REDIS_URL: a local cache, Celery in-process): marked both_lanes, so bin/test's database-only SQLite
# run keeps them. A module here marks every test in it; `@pytest.mark.both_lanes` marks one in place.
BOTH_LANES = {
    "wizard/test_embedded_sqlite.py",  # manage.py on a SQLite file of its own, as bin/run starts it
    # reads nodelodge/settings.py under this run's environment (on SQLite: without REDIS_URL)
    "refresh/test_demo_feed_and_command.py::test_demo_feeds_follow_debug_unless_the_environment_says",
}
# bin/test's full runs use two pytest-xdist workers with `--dist loadfile`: each module is one unit of
# work (its module fixtures built once), and these modules, which start servers, PostgreSQL clusters or
# hung services, or race threads against the clock, are one unit together (pytest_xdist_make_scheduler
# below): one worker runs them one after the other while the other worker runs the rest.
ONE_AT_A_TIME = {
    "hardening/test_production_layout.py",
    "hardening/test_read_replica.py",
    "hardening/test_proxies.py",
    "hardening/test_faults.py",
    "hardening/test_hung_redis.py",
    "launches/test_concurrency.py",
    "launches/test_group_concurrency.py",
    "watches/test_auto_launch_race.py",
    "watches/test_watches_with_worker.py",
    "refresh/test_refresh_with_worker.py",
    "refresh/test_price_history_with_worker.py",
    "refresh/test_feed_conflict_races.py",
    "refresh/test_refresh_races_bookings.py",
    "throughput/test_latest_speeds_concurrency.py",
    "throughput/test_plan_during_refresh.py",
    "wizard/test_fleet_counts_concurrency.py",
}
# Fixtures that start something (a worker, a server, a subprocess): any test using one is slow.
SLOW_FIXTURES = {"celery_worker", "live_server", "production_response"}
# The reasons of the PostgreSQL-only tests a SQLite run deselected, counted, for its summary.
POSTGRESQL_ONLY = pytest.StashKey[Counter]()
# The tests a lane left to the other run (they touch no database, or are browser tests), by folder.
NO_DATABASE = pytest.StashKey[Counter]()

# NODELODGE_TEST_LANE picks what a run keeps: unset or "all" every test, "database-only" the tests
# that touch a database (and those marked both_lanes), "without-browser" every test but the browser
# tests that another run runs. bin/test sets the second for SQLite, the third for PostgreSQL, when it
# runs both.
DATABASE_ONLY, WITHOUT_BROWSER = "database-only", "without-browser"
LANES = ("all", DATABASE_ONLY, WITHOUT_BROWSER)
# pytest-django's fixtures that open the test database; `item.fixturenames` is the closure of the
# test's fixtures, so a fixture that needs one of these (admin_user needs db, celery_worker needs
# django_db_setup) makes its tests database tests too. live_server serves from the test database.
DATABASE_FIXTURES = frozenset({
    "_django_db_helper", "db", "transactional_db", "django_db_reset_sequences",
    "django_db_serialized_rollback", "django_db_setup", "live_server",
})


def _lane() -> str:
    lane = os.environ.get("NODELODGE_TEST_LANE", "") or "all"
    if lane not in LANES:
        raise pytest.UsageError(f"NODELODGE_TEST_LANE={lane!r}: use one of {', '.join(LANES)}")
    return lane


def touches_database(item) -> bool:
    """Whether a collected test uses the test database (pytest-django's rule, read before it runs)."""
    if item.get_closest_marker("django_db") is not None:
        return True
    if DATABASE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    test_class = getattr(item, "cls", None)
    if test_class is not None:
        from django.test import TransactionTestCase  # TestCase is one too; SimpleTestCase is not

        return issubclass(test_class, TransactionTestCase)
    return False


def is_browser_test(item) -> bool:
    return item.get_closest_marker("browser") is not None


def is_repeated_on_postgresql(item) -> bool:
    """Marked `repeated_on_postgresql(reason=…)`: another test runs the same checks on PostgreSQL (the
    reason names it), so a run without browser leaves it to the SQLite run, as it does browser tests."""
    return item.get_closest_marker("repeated_on_postgresql") is not None


def runs_on_lane(item, lane: str) -> bool:
    """Whether the lane keeps the test. A database-only lane: it touches a database, or is marked
    both_lanes. A lane without browser: it is no browser test and not repeated on PostgreSQL by
    another test, or it is one only PostgreSQL can run."""
    if lane == DATABASE_ONLY:
        return item.get_closest_marker("both_lanes") is not None or touches_database(item)
    if lane == WITHOUT_BROWSER:
        once_elsewhere = is_browser_test(item) or is_repeated_on_postgresql(item)
        return not once_elsewhere or item.get_closest_marker("postgresql") is not None
    return True


def _database() -> dict:
    return settings.DATABASES["default"]


def _on_sqlite() -> bool:
    return _database()["ENGINE"] == "django.db.backends.sqlite3"


def pytest_configure(config):
    database = _database()
    if _on_sqlite():
        name = str(database["NAME"])
        if name == ":memory:" or name.startswith("file:"):
            raise pytest.UsageError(
                "The tests run on a SQLite file, which the live server's and the tests' threads share: "
                f"set DATABASE_URL=sqlite:////path/to/file.sqlite3 (got {name!r})."
            )
        # The test database is a file beside the one named (never that file itself), so threads,
        # the live server and subprocesses that are given its path reach the same data.
        test = database.setdefault("TEST", {})
        if not test.get("NAME"):
            path = Path(name)
            test["NAME"] = str(path.with_name(f"test_{path.name}"))
    elif database["ENGINE"] != "django.db.backends.postgresql":
        raise pytest.UsageError(
            "The tests run on PostgreSQL or SQLite: set DATABASE_URL (bin/test does), "
            f"got engine {database['ENGINE']!r}."
        )
    config.pluginmanager.register(PostgresqlOnly(), "nodelodge-postgresql-only")
    config.pluginmanager.register(Lane(_lane()), "nodelodge-lane")


def pytest_report_header(config):
    database = _database()
    if _on_sqlite():
        return f"database: SQLite, the embedded default (test database {database['TEST']['NAME']})"
    where = f"{database.get('HOST') or 'local socket'}:{database.get('PORT') or 5432}"
    return f"database: PostgreSQL {database['NAME']} at {where} (tests in its test_ copy)"


def _postgresql_reason(item) -> str | None:
    """The reason a test is PostgreSQL-only, or None. The marker must say why."""
    marker = item.get_closest_marker("postgresql")
    if marker is None:
        return None
    reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
    if not reason:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.postgresql needs reason=... saying why")
    return reason


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _one_node_id_each(items)
    for item in items:
        module = item.path.resolve().relative_to(TESTS).as_posix() if TESTS in item.path.parents else ""
        test = f"{module}::{getattr(item, 'originalname', item.name)}"
        if module in SLOW_MODULES or test in SLOW_TESTS or SLOW_FIXTURES.intersection(item.fixturenames):
            item.add_marker(pytest.mark.slow)
        if module in BOTH_LANES or test in BOTH_LANES:
            item.add_marker(pytest.mark.both_lanes)


def _one_node_id_each(items) -> None:
    """Schemathesis gives the test of each API operation the test function's node id (the operation is
    in its name only); pytest-xdist hands out work by node id, so it would run one of them. Under
    xdist, each such test gets the node id its name gives it (pytest's own id, from the private _id)."""
    counts = Counter(item.nodeid for item in items)
    for item in items:
        if counts[item.nodeid] > 1 and item.nodeid.rsplit("::", 1)[-1] != item.name:
            item._id = item.parent.id.child(item.name)
    repeated = [nodeid for nodeid, count in Counter(item.nodeid for item in items).items() if count > 1]
    if repeated:
        raise pytest.UsageError(f"pytest-xdist would run one test of each repeated node id: {repeated[:3]}")


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent with -p no:xdist
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModulesAndOneAtATime(LoadFileScheduling):
        """`--dist loadfile`, with the ONE_AT_A_TIME modules one unit of work."""

        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            return "one-at-a-time" if module.removeprefix("tests/") in ONE_AT_A_TIME else module

    return ModulesAndOneAtATime(config, log)


class PostgresqlOnly:
    """PostgreSQL-only tests leave the SQLite run as deselected (never skipped): they do not apply
    there. Runs after `-m` has chosen, so the summary counts only tests this run would have run."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        kept, postgresql_only = [], []
        for item in items:
            reason = _postgresql_reason(item)  # asked on every run: a marker without a reason fails
            (postgresql_only if reason and _on_sqlite() else kept).append(item)
        config.stash[POSTGRESQL_ONLY] = Counter(_postgresql_reason(item) for item in postgresql_only)
        if postgresql_only:
            config.hook.pytest_deselected(items=postgresql_only)
            items[:] = kept


class Lane:
    """On a database-only lane, the tests that touch no database leave as deselected; on a lane without
    browser, the browser tests: the other run ran them. Runs after `-m` has chosen, as PostgresqlOnly,
    so the summary counts what this run left."""

    def __init__(self, lane: str):
        self.lane = lane

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        kept, left = [], []
        for item in items:
            (kept if runs_on_lane(item, self.lane) else left).append(item)
        config.stash[NO_DATABASE] = Counter(_folder(item) for item in left)
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = kept


def _folder(item) -> str:
    return item.path.parent.relative_to(TESTS.parent).as_posix() if TESTS in item.path.parents else "?"


# Under pytest-xdist the workers collect and deselect; each sends its counts to the main process,
# which prints them. Every worker collects the same tests, so the first worker's counts are the run's.
def pytest_sessionfinish(session, exitstatus):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["nodelodge_postgresql_only"] = dict(session.config.stash.get(POSTGRESQL_ONLY, Counter()))
        workeroutput["nodelodge_no_database"] = dict(session.config.stash.get(NO_DATABASE, Counter()))
    # A lane given only tests the other database's run runs (none touching a database, or only browser
    # tests) ran none: they ran on the other run, so that is a pass, not pytest's "no tests collected" (which bin/test fails).
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and session.config.stash.get(NO_DATABASE, None):
        session.exitstatus = pytest.ExitCode.OK


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent with -p no:xdist
def pytest_testnodedown(node, error):
    output = getattr(node, "workeroutput", None) or {}
    if "nodelodge_no_database" in output and NO_DATABASE not in node.config.stash:
        node.config.stash[POSTGRESQL_ONLY] = Counter(output["nodelodge_postgresql_only"])
        node.config.stash[NO_DATABASE] = Counter(output["nodelodge_no_database"])


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    reasons = config.stash.get(POSTGRESQL_ONLY, Counter())
    if reasons:
        terminalreporter.section("PostgreSQL-only tests, deselected on SQLite")
        terminalreporter.write_line(
            f"{sum(reasons.values())} tests of this selection need PostgreSQL by nature; they run on the PostgreSQL run:"
        )
        for reason, count in sorted(reasons.items(), key=lambda pair: (-pair[1], pair[0])):
            terminalreporter.write_line(f"  {count:4d}  {reason}")
    folders = config.stash.get(NO_DATABASE, Counter())
    if folders:
        if _lane() == WITHOUT_BROWSER:
            terminalreporter.section("Browser tests and tests repeated on PostgreSQL, deselected on this run without browser")
            terminalreporter.write_line(
                f"{sum(folders.values())} tests of this selection show the same page on either database (browser tests) "
                f"or have their checks repeated on PostgreSQL by another test (NODELODGE_TEST_LANE={WITHOUT_BROWSER}); "
                "they run on the other database's run:"
            )
        else:
            terminalreporter.section("Tests that touch no database, deselected on this database-only run")
            terminalreporter.write_line(
                f"{sum(folders.values())} tests of this selection touch no database (NODELODGE_TEST_LANE={DATABASE_ONLY}); "
                "they run on the other database's run:"
            )
        for folder, count in sorted(folders.items(), key=lambda pair: (-pair[1], pair[0])):
            terminalreporter.write_line(f"  {count:4d}  {folder}")


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


@pytest.fixture(autouse=True)
def _rate_limits_as_marked(request):
    """The per-address limits are off in tests/settings.py; `@pytest.mark.rate_limits` turns them on
    at their production values for the tests of a limit (a test may still set the value it tests)."""
    if request.node.get_closest_marker("rate_limits") is None:
        yield
        return
    with override_settings(**settings.PRODUCTION_RATE_LIMITS):
        yield


@pytest.fixture
def feed_server():
    """Provider feeds served by a real HTTP server on loopback (refresh, fleet counts, kept speeds)."""
    from tests.feeds import FeedServer

    server = FeedServer()
    server.thread.start()
    yield server
    server.release.set()
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture
def behind_nginx(settings):
    """The console behind one trusted proxy whose read timeout is 60 s (deploy/nginx.conf)."""
    settings.TRUSTED_PROXY_COUNT = 1
    settings.PROXY_READ_TIMEOUT_SECONDS = 60
    settings.PROXY_DEADLINE_MARGIN_SECONDS = 5
    return settings
