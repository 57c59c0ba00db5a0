"""Whether the read replica is read (catalog.replica) and what happens when it fails under a read
(catalog.database.replica_first), without servers; tests/hardening/test_read_replica.py runs a real one."""
from __future__ import annotations

import pytest
from django.db import DEFAULT_DB_ALIAS, OperationalError

from catalog import database, replica


@pytest.fixture(autouse=True)
def _no_kept_decision():
    replica.forget()
    yield
    replica.forget()


@pytest.mark.parametrize(
    ("primary", "caught_up", "behind", "lag"),
    [
        (True, None, None, 0.0),  # not in recovery: a primary has nothing to wait for
        (False, True, 120.0, 0.0),  # an idle primary: everything received is replayed
        (False, True, None, 0.0),  # a fresh replica with nothing yet to replay
        (False, False, 3.5, 3.5),  # WAL waiting to be replayed (or replay paused)
        (False, None, 2.0, 2.0),  # no WAL receiver: only the replay time says anything
        (False, False, None, None),  # behind, and nothing replayed yet: unknown
        (False, False, -0.2, 0.0),  # clocks a little apart
    ],
)
def test_the_lag_is_what_the_replica_says_of_itself(primary, caught_up, behind, lag):
    assert replica.lag_seconds(primary, caught_up, behind) == lag


def test_a_fit_replica_is_kept_only_until_its_lag_could_reach_the_bound(settings):
    settings.DATABASE_REPLICA_MAX_LAG = 1.0
    assert replica.decide(0.0, 100.0) == replica.Decision(fit=True, until=100.0 + replica.RECHECK_SECONDS)
    assert replica.decide(0.75, 100.0) == replica.Decision(fit=True, until=100.25)
    assert replica.decide(1.5, 100.0) == replica.Decision(fit=False, until=100.0 + replica.RECHECK_SECONDS)
    assert replica.decide(None, 100.0).fit is False


def test_without_a_replica_everything_reads_the_default_database(db):
    assert replica.fit_to_read() is None
    assert database.replica_first(lambda: database.reads().alias) == DEFAULT_DB_ALIAS
    assert database.ReadRouter().db_for_read(None) == DEFAULT_DB_ALIAS


def test_a_replica_failing_under_a_read_sends_the_read_to_the_primary(transactional_db, monkeypatch):
    monkeypatch.setattr(replica, "fit_to_read", lambda: "standby")
    set_aside = []
    monkeypatch.setattr(replica, "set_aside", lambda alias, error: set_aside.append(alias))
    read_from = []

    def read():
        read_from.append(database._reads_from.get())
        if len(read_from) == 1:
            raise OperationalError("the replica went away")
        return "answer"

    assert database.replica_first(read) == "answer"
    assert read_from == ["standby", DEFAULT_DB_ALIAS]
    assert set_aside == ["standby"]
    assert database.reads().alias == DEFAULT_DB_ALIAS  # the choice ends with the read


def test_writes_and_migrations_stay_on_the_primary(monkeypatch):
    router = database.ReadRouter()
    token = database._reads_from.set("standby")
    try:
        assert router.db_for_read(None) == "standby"
        assert router.db_for_write(None) == DEFAULT_DB_ALIAS
    finally:
        database._reads_from.reset(token)
    assert router.allow_migrate("standby", "catalog") is False
    assert router.allow_migrate(DEFAULT_DB_ALIAS, "catalog") is True


def test_inside_a_transaction_of_the_primary_the_replica_is_not_read(transactional_db, monkeypatch):
    from django.db import transaction

    monkeypatch.setattr(replica, "fit_to_read", lambda: "standby")
    with transaction.atomic():
        assert database.replica_first(lambda: database._reads_from.get()) == DEFAULT_DB_ALIAS


def test_a_replica_down_at_its_first_probe_leaves_the_read_on_the_primary(monkeypatch):
    class Down:
        def cursor(self):
            raise OperationalError("the replica does not answer")

    set_aside = []
    monkeypatch.setattr(replica, "settings", type("Settings", (), {"DATABASES": {replica.REPLICA: {}}}))
    monkeypatch.setattr(replica, "connections", {replica.REPLICA: Down()})
    monkeypatch.setattr(replica, "set_aside", lambda alias, error: set_aside.append(alias))
    assert replica.fit_to_read() is None  # nothing decided yet: read the primary
    assert set_aside == [replica.REPLICA]
