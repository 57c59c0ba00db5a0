"""Whether the read replica (`DATABASE_REPLICA_URL`) is fit to read, decided briefly once per process.

The replica is fit when it answers and is behind the primary by at most `DATABASE_REPLICA_MAX_LAG`
seconds, measured on the replica itself:

- not in recovery (a primary, e.g. a replica URL naming the primary itself): nothing to wait for;
- in recovery, its WAL receiver running and everything received replayed: caught up, however long ago
  the primary last committed (an idle primary means no lag, as does a fresh replica with nothing yet
  to replay);
- otherwise (WAL received but not replayed, replay paused, no receiver): behind by the time since the
  last transaction it replayed committed on the primary; with none replayed yet, unknown: not fit.
  This overstates the lag (the first commit it misses may be later), never understates it.

A decision is kept for a moment so requests do not each probe: a fit one for at most the time the lag
could take to reach the bound (the lag grows by at most a second a second), so no answer is read from
a replica further behind than the bound; an unfit one for RECHECK_SECONDS, an unreachable one for
DOWN_SECONDS (each attempt may cost a connection timeout). While one thread probes, the others read
the primary rather than wait.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, connections

REPLICA = "replica"  # the alias of DATABASES the replica has when configured
RECHECK_SECONDS = 1.0
DOWN_SECONDS = 5.0
CONNECT_TIMEOUT_SECONDS = 2

logger = logging.getLogger(__name__)

LAG_SQL = """
SELECT NOT pg_is_in_recovery(),
       EXISTS (SELECT 1 FROM pg_stat_wal_receiver)
           AND pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn(),
       EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp())
"""


@dataclass(frozen=True)
class Decision:
    fit: bool
    until: float  # time.monotonic() after which the replica is probed again


_decision: Decision | None = None
_probing = threading.Lock()


def max_lag() -> float:
    return float(getattr(settings, "DATABASE_REPLICA_MAX_LAG", 5.0))


def lag_seconds(primary: bool, caught_up: bool | None, behind: float | None) -> float | None:
    """How far behind the primary the replica is, from what it says of itself (None: unknown)."""
    if primary or caught_up:
        return 0.0
    if behind is None:
        return None
    return max(0.0, float(behind))


def decide(lag: float | None, now: float) -> Decision:
    bound = max_lag()
    if lag is None or lag > bound:
        return Decision(fit=False, until=now + RECHECK_SECONDS)
    return Decision(fit=True, until=now + min(RECHECK_SECONDS, bound - lag))


def probe() -> Decision | None:
    """Ask the replica how far behind it is, on this thread's connection to it."""
    now = time.monotonic()
    try:
        with connections[REPLICA].cursor() as cursor:
            cursor.execute(LAG_SQL)
            primary, caught_up, behind = cursor.fetchone()
    except DatabaseError as error:
        set_aside(REPLICA, error)
        return _decision
    return decide(lag_seconds(primary, caught_up, behind), now)


def fit_to_read() -> str | None:
    """The replica's alias when reads may go to it now, else None (none configured, down, behind)."""
    global _decision
    if REPLICA not in settings.DATABASES:
        return None
    decision = _decision
    if decision is not None and time.monotonic() < decision.until:
        return REPLICA if decision.fit else None
    if not _probing.acquire(blocking=False):
        return None  # another thread is asking the replica: this request reads the primary
    try:
        _decision = probe()
    finally:
        _probing.release()
    return REPLICA if _decision is not None and _decision.fit else None  # None: the first probe failed


def set_aside(alias: str, error: Exception) -> None:
    """The replica failed: reads go to the primary for DOWN_SECONDS, on a new connection after."""
    global _decision
    logger.warning("Read replica unavailable, reading the primary: %s", error)
    _decision = Decision(fit=False, until=time.monotonic() + DOWN_SECONDS)
    try:
        connections[alias].close()
    except DatabaseError:
        pass  # a connection that is already gone


def forget() -> None:
    """Drop the kept decision (tests)."""
    global _decision
    _decision = None
