"""What differs between the databases the console runs on, said once.

PostgreSQL (production) keeps the fleet's counts by triggers, reads an answer from one snapshot and
holds locks for the session; the embedded SQLite run (the README's first command) does without. Every
other module asks this one what the database can do, never which database it is.

Reads may go to a PostgreSQL streaming replica (`DATABASE_REPLICA_URL`): only inside
`replica_first`, which the wizard's and the API's answers use; everything else, writes and Launch's
re-check included, uses the primary. `reads()` is the connection the current reads go to, and
`ReadRouter` sends the ORM's reads to the same one. Whether the replica is fit to read is
`catalog.replica`'s business.
"""
from __future__ import annotations

import os
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import wraps
from typing import Any, TypeVar

from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections, transaction

from catalog import replica, timestamps
from catalog.counting import fleet_counts, folding

T = TypeVar("T")
_reads_from: ContextVar[str] = ContextVar("catalog_reads_from", default=DEFAULT_DB_ALIAS)


def connection_settings(database: MutableMapping[str, Any]) -> list[str]:
    """Sets what the console needs on the connection `database` (a `DATABASES` entry, changed in place)
    for the database it is, and returns the system checks that do not apply there (the settings'
    `SILENCED_SYSTEM_CHECKS`). Read by the settings, before any app is loaded."""
    if database["ENGINE"] == "django.db.backends.postgresql":
        # The console's statements run in milliseconds; compiling one with JIT (chosen on the
        # planner's estimates, which a walk of a few hundred rows can exceed) costs 80-300 ms. Nor
        # does one run on parallel workers: starting them costs more than the few thousand rows of
        # kept counts take to read (an empty answer's hints: 13 ms with workers, 7 ms without), and
        # the cores are the other requests'.
        options = database.setdefault("OPTIONS", {})
        options["options"] = (
            f"{options.get('options', '')} -c jit=off -c max_parallel_workers_per_gather=0".strip()
        )
        return []
    if database["ENGINE"] == "django.db.backends.sqlite3":
        # The embedded run serves requests on threads. A transaction takes SQLite's write lock when it
        # begins and waits for it (up to 20 s), so two Launches or Stops at once queue instead of one
        # failing with "database is locked" when it turns from reading to writing.
        database.setdefault("OPTIONS", {}).update({"transaction_mode": "IMMEDIATE", "timeout": 20})
        # SQLite has no covering indexes: the columns an index carries besides its key (the cluster
        # sites' index) are left out there, which the embedded run's small fleet does not miss.
        return ["models.W040"]
    return []


def use_fast_timestamps(sender, connection, **kwargs) -> None:
    """On each new connection (`connection_created`): PostgreSQL's dates and times read in C where they
    are UTC (`catalog.timestamps`); SQLite's are text Django parses itself."""
    if connection.vendor == "postgresql":
        timestamps.register(connection)


def reads():
    """The connection this request's reads go to: the replica inside `replica_first` when it is
    fit to read, else the primary."""
    return connections[_reads_from.get()]


def replica_first(read: Callable[[], T]) -> T:
    """`read()` with its reads on the replica when one is configured and fit to read (not down, not
    behind by more than `DATABASE_REPLICA_MAX_LAG`); on the primary otherwise. `read` must only
    read: when the replica fails under it (stopped, restarted, a query cancelled by its recovery),
    the replica is set aside and `read()` runs again on the primary, so the caller sees no error.
    Inside a transaction of the primary, that transaction decides: no replica."""
    alias = replica.fit_to_read()
    if alias is None or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return read()
    token = _reads_from.set(alias)
    try:
        return read()
    except (OperationalError, InterfaceError) as error:
        replica.set_aside(alias, error)
    finally:
        _reads_from.reset(token)
    return read()


def reads_replica_first(view):
    """A read-only view's reads through `replica_first`, its template rendered inside so the reads
    the template makes (a model list made when the page reaches it) go there too."""

    @wraps(view)
    def replica_first_view(request, *args, **kwargs):
        def answered():
            response = view(request, *args, **kwargs)
            if callable(getattr(response, "render", None)) and not response.is_rendered:
                response.render()
            return response

        return replica_first(answered)

    return replica_first_view


class ReadRouter:
    """The ORM's side of `replica_first`: reads go where `reads()` does, writes and migrations to
    the primary, whatever the caller."""

    def db_for_read(self, model, **hints):
        return _reads_from.get()

    def db_for_write(self, model, **hints):
        return DEFAULT_DB_ALIAS

    def allow_relation(self, first, second, **hints):
        return True  # one database: the replica holds the primary's rows

    def allow_migrate(self, db, app_label, **hints):
        return db == DEFAULT_DB_ALIAS


def keeps_counts(on=None) -> bool:
    """Whether the database (`on`: a connection; without, the one the current read uses) keeps the
    fleet's counts (the triggers and counting functions of PostgreSQL); without them the engine
    counts every machine itself."""
    return (on or reads()).vendor == "postgresql"


def lower_of_two() -> str:
    """The SQL function that gives the lower of two values: LEAST on PostgreSQL, MIN on SQLite (whose
    MIN of two arguments is scalar)."""
    return "LEAST" if connections[DEFAULT_DB_ALIAS].vendor == "postgresql" else "MIN"


def aggregates_in_order(on=None) -> bool:
    """Whether the database (`on`: a connection; without, the one the current read uses) gathers a
    group's values into an array in an order of its choosing (PostgreSQL's `array_agg(… ORDER BY …)`),
    so a statement may return one row per group with its members in order. SQLite's aggregates take
    their rows in no promised order."""
    return (on or reads()).vendor == "postgresql"


def takes_arrays(on=None) -> bool:
    """Whether the database (`on`: a connection; without, the one the current read uses) takes a list as
    one statement parameter (PostgreSQL's arrays: `id = ANY(%s)`), so a statement's text does not depend
    on how many values it is given."""
    return (on or reads()).vendor == "postgresql"


@contextmanager
def one_snapshot(*, lock_on_sqlite: bool = False) -> Iterator[None]:
    """Every read inside sees one state of the catalog.

    PostgreSQL: one REPEATABLE READ transaction, so what a refresh commits meanwhile is not seen (reads
    take no locks and wait for no one). SQLite, only with `lock_on_sqlite`: one transaction, which on
    the embedded run takes the write lock when it begins, so no refresh commits until it ends.
    Inside a caller's transaction, that transaction decides. On a replica (`replica_first`) the same
    REPEATABLE READ transaction, read-only as every transaction there is.

    The reads inside write no machines: the kept counts are folded at most once per snapshot (none
    in a transaction of its own, which has written nothing; `catalog.counting.folding`)."""
    connection = reads()
    if folding.in_snapshot(connection) and connection.in_atomic_block:
        yield  # inside another snapshot on this connection: that one decides
        return
    if connection.in_atomic_block:
        # The caller's transaction may have written machines: their changes are folded once, before
        # the first count read (`folding.counts_folded`).
        with folding.reading(connection, folded=False):
            yield
        return
    if connection.vendor == "postgresql":
        # A transaction of its own that only reads: nothing of its own to fold into the counts.
        with folding.reading(connection, folded=True):
            with _begins_repeatable_read(connection), transaction.atomic(using=connection.alias):
                yield
    elif lock_on_sqlite:
        with transaction.atomic(using=connection.alias):
            yield
    else:
        yield


@contextmanager
def _begins_repeatable_read(connection) -> Iterator[None]:
    """The next transaction on `connection` (PostgreSQL) begins REPEATABLE READ in its BEGIN: one
    statement, not a BEGIN and a SET TRANSACTION. The connection's own level comes back after."""
    import psycopg  # only here: the embedded run never opens a PostgreSQL connection

    connection.ensure_connection()
    driver = connection.connection
    before = driver.isolation_level
    driver.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    try:
        yield
    finally:
        # Set only between transactions; a connection lost meanwhile is replaced by Django anyway.
        if not driver.closed and driver.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            driver.isolation_level = before


@contextmanager
def try_lock(key: int, cache_key: str, expiry_seconds: int) -> Iterator[bool]:
    """Yields whether this process now holds the lock `key` (never waits).

    On PostgreSQL a session advisory lock: released on exit, or by the server if the process dies.
    Elsewhere (the embedded SQLite run) a cache entry under `cache_key` that expires after
    `expiry_seconds`, which is enough for one machine."""
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
            acquired = bool(cursor.fetchone()[0])
        try:
            yield acquired
        finally:
            if acquired:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
        return
    token = secrets.token_hex(8)
    acquired = cache.add(cache_key, token, timeout=expiry_seconds)
    try:
        yield acquired
    finally:
        if acquired and cache.get(cache_key) == token:
            cache.delete(cache_key)


def write_state() -> str | None:
    """What the database the current reads go to holds of the fleet, as a value that changes with
    every committed write that changes an answer's machines, whoever made it and however (ORM,
    trigger, raw SQL, another process); reads never change it. None: this database cannot say (an
    in-memory SQLite), so nothing is served again.

    PostgreSQL: the kept fleet counts' state (`catalog.counting.fleet_counts.state`: every change of a
    machine's availability, free GPUs, last report, location, memory, tier or price moves it), on the
    replica inside `replica_first`, the primary otherwise. An edit that changes no count (a model's
    figures or a machine's region in the admin) reaches answers when the time step ends
    (`nodelodge.recommendations.fleet_state`). SQLite: `PRAGMA data_version` of a connection of this
    process's own that never writes, which moves whenever another connection commits anything. Inside
    a transaction that writes, its own writes do not move either: read it outside one."""
    connection = reads()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            return "pg:" + fleet_counts.state(cursor)
    if connection.vendor == "sqlite":
        return _sqlite_data_version(str(connection.settings_dict["NAME"]))
    return None


class _DataVersion:
    """A read-only connection to one SQLite file, kept by the process to read its data version."""

    def __init__(self, path: str):
        self.path = path
        self.inode = os.stat(path).st_ino
        self.lock = threading.Lock()
        self.nonce = secrets.token_hex(4)  # a data version means something only on its connection
        self.connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)

    def read(self) -> str:
        with self.lock:
            version = self.connection.execute("PRAGMA data_version").fetchone()[0]
        return f"sqlite:{self.nonce}:{version}"


_data_versions: dict[str, _DataVersion] = {}
_data_versions_lock = threading.Lock()


def _sqlite_data_version(path: str) -> str | None:
    if not path or path == ":memory:" or "mode=memory" in path:
        return None
    try:
        inode = os.stat(path).st_ino
    except OSError:
        return None
    with _data_versions_lock:
        watcher = _data_versions.get(path)
        if watcher is None or watcher.inode != inode:  # a new file under the same name
            try:
                watcher = _data_versions[path] = _DataVersion(path)
            except (OSError, sqlite3.Error):
                return None
    try:
        return watcher.read()
    except sqlite3.Error:
        return None


def analyze(tables: list[str]) -> None:
    """Refresh the planner's statistics of `tables` after a bulk load. PostgreSQL: ANALYZE of each
    table; SQLite: ANALYZE (of every table), then PRAGMA optimize."""
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for table in tables:
                cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")  # noqa: S608 - our own table names
        else:
            cursor.execute("ANALYZE")
            cursor.execute("PRAGMA optimize")
