"""bin/test runs each test that touches no database once: its SQLite run (NODELODGE_TEST_LANE=
database-only) keeps only the tests that touch a database, however indirectly, and those marked
both_lanes; and each browser test, and each test another test repeats on PostgreSQL, once: its
PostgreSQL run (without-browser) leaves them out, except those only PostgreSQL runs. Checked by collecting a sample of every shape in a pytest of its own,
whose conftest is this suite's."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

SAMPLE = '''
import pytest
from django.test import SimpleTestCase, TestCase, TransactionTestCase


@pytest.fixture
def needs_db(db):
    return 1


@pytest.fixture
def needs_needs_db(needs_db):
    return needs_db


@pytest.fixture
def needs_admin(admin_user):
    return admin_user


@pytest.fixture
def needs_settings_only(settings):
    return settings


def test_pure():
    ...  # collected, never run


def test_with_client_and_settings_only(client, needs_settings_only):
    ...  # collected, never run


def test_with_db(db):
    ...  # collected, never run


def test_with_transactional_db(transactional_db):
    ...  # collected, never run


@pytest.mark.django_db
def test_marked_django_db():
    ...  # collected, never run


@pytest.mark.django_db
class TestMarkedClass:
    def test_in_a_marked_class(self):
        ...  # collected, never run


def test_through_a_fixture_two_levels_down(needs_needs_db):
    ...  # collected, never run


def test_through_admin_user(needs_admin):
    ...  # collected, never run


def test_through_the_projects_fleet(small_fleet):
    ...  # collected, never run


def test_through_the_celery_worker(celery_worker):
    ...  # collected, never run


def test_with_live_server(live_server):
    ...  # collected, never run


@pytest.mark.both_lanes
def test_pure_but_about_the_embedded_default():
    ...  # collected, never run


@pytest.mark.parametrize("n", [1, 2])
def test_pure_parametrized(n):
    assert n


class DjangoTestCase(TestCase):
    def test_in_a_django_testcase(self):
        ...  # collected, never run


class DjangoTransactionTestCase(TransactionTestCase):
    def test_in_a_django_transactiontestcase(self):
        ...  # collected, never run


class DjangoSimpleTestCase(SimpleTestCase):
    def test_in_a_django_simpletestcase(self):
        ...  # collected, never run


@pytest.mark.browser
def test_in_the_browser(live_server):
    ...  # collected, never run


@pytest.mark.browser
@pytest.mark.postgresql(reason="a sample")
def test_in_the_browser_on_postgresql_only(live_server):
    ...  # collected, never run


@pytest.mark.repeated_on_postgresql(reason="a sample")
def test_repeated_on_postgresql_by_another(db):
    ...  # collected, never run
'''

# The suite's hooks, its fixtures (the fleet's, the Celery worker) and its plugins.
CONFTEST = "from tests.conftest import *  # noqa: F403\n"

EVERY_TEST = {
    "test_pure", "test_with_client_and_settings_only", "test_with_db", "test_with_transactional_db",
    "test_marked_django_db", "TestMarkedClass::test_in_a_marked_class", "test_through_a_fixture_two_levels_down",
    "test_through_admin_user", "test_through_the_projects_fleet", "test_through_the_celery_worker",
    "test_with_live_server", "test_pure_but_about_the_embedded_default", "test_pure_parametrized[1]",
    "test_pure_parametrized[2]", "DjangoTestCase::test_in_a_django_testcase",
    "DjangoTransactionTestCase::test_in_a_django_transactiontestcase",
    "DjangoSimpleTestCase::test_in_a_django_simpletestcase", "test_in_the_browser",
    "test_in_the_browser_on_postgresql_only", "test_repeated_on_postgresql_by_another",
}
# What a run without browser leaves to the SQLite run: the browser tests a PostgreSQL-only marker does
# not keep, and the tests another test repeats on PostgreSQL.
ONCE_ON_SQLITE = {"test_in_the_browser", "test_repeated_on_postgresql_by_another"}
NO_DATABASE = {
    "test_pure", "test_with_client_and_settings_only", "test_pure_parametrized[1]", "test_pure_parametrized[2]",
    "DjangoSimpleTestCase::test_in_a_django_simpletestcase",
}


def collect(tmp_path: Path, lane: str | None) -> tuple[set[str], str]:
    """The sample's tests a run on `lane` keeps, and its output."""
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nDJANGO_SETTINGS_MODULE = tests.settings\nmarkers =\n    both_lanes\n    browser\n    postgresql\n    repeated_on_postgresql\n    slow\n"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(REPO)
    env.pop("NODELODGE_TEST_LANE", None)
    if lane is not None:
        env["NODELODGE_TEST_LANE"] = lane
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--collect-only", "-q",
         "test_sample.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    kept = {line.split("::", 1)[1] for line in done.stdout.splitlines() if line.startswith("test_sample.py::")}
    return kept, done.stdout


def test_a_database_only_run_keeps_exactly_the_tests_that_touch_a_database_or_are_marked_both_lanes(tmp_path):
    kept, output = collect(tmp_path, "database-only")

    assert kept == EVERY_TEST - NO_DATABASE
    assert "5 tests of this selection touch no database" in output
    assert re.search(r"15/20 tests collected \(5 deselected\)", output), output


def test_a_run_without_browser_leaves_out_browser_tests_and_those_repeated_on_postgresql_but_not_postgresql_only(tmp_path):
    kept, output = collect(tmp_path, "without-browser")

    assert kept == EVERY_TEST - ONCE_ON_SQLITE
    assert "2 tests of this selection show the same page on either database (browser tests) or have their checks repeated" in output
    assert re.search(r"18/20 tests collected \(2 deselected\)", output), output


def test_a_run_without_a_lane_keeps_every_test(tmp_path):
    kept, output = collect(tmp_path, None)

    assert kept == EVERY_TEST
    assert "touch no database" not in output


def test_an_unknown_lane_is_refused_with_the_lanes_named(monkeypatch):
    from tests.conftest import _lane

    monkeypatch.setenv("NODELODGE_TEST_LANE", "sqlite-only")
    with pytest.raises(pytest.UsageError, match="'sqlite-only': use one of all, database-only, without-browser"):
        _lane()


@pytest.mark.parametrize("lane", ["", "all"])
def test_an_empty_or_all_lane_is_every_test(lane, monkeypatch):
    from tests.conftest import _lane

    monkeypatch.setenv("NODELODGE_TEST_LANE", lane)
    assert _lane() == "all"


def test_a_database_only_run_given_only_tests_that_touch_no_database_passes_having_run_none(tmp_path):
    (tmp_path / "test_sample.py").write_text("def test_pure():\n    assert False, 'ran on the other run'\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    env = {**os.environ, "PYTHONPATH": str(REPO), "NODELODGE_TEST_LANE": "database-only"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "--ds=tests.settings", "-q",
         "test_sample.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 deselected" in done.stdout
