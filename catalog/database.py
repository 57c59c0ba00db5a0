"""What differs between the two databases the console runs on, said once.

PostgreSQL (production) keeps the fleet's counts by triggers, reads an answer from one snapshot and
holds locks for the session; the embedded SQLite run (the README's first command) does without. Every
other module asks this one what the database can do, never which database it is.
"""
from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.cache import cache
from django.db import connection, transaction


def keeps_counts(on=None) -> bool:
    """Whether the database (`on`: a connection; the default one without) keeps the fleet's counts
    (the triggers and counting functions of PostgreSQL); without them the engine counts every
    machine itself."""
    return (on or connection).vendor == "postgresql"


@contextmanager
def one_snapshot(*, lock_on_sqlite: bool = False) -> Iterator[None]:
    """Every read inside sees one state of the catalog.

    PostgreSQL: one REPEATABLE READ transaction, so what a refresh commits meanwhile is not seen (reads
    take no locks and wait for no one). SQLite, only with `lock_on_sqlite`: one transaction, which on
    the embedded run takes the write lock when it begins, so no refresh commits until it ends.
    Inside a caller's transaction, that transaction decides."""
    if connection.in_atomic_block:
        yield
        return
    if connection.vendor == "postgresql":
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield
    elif lock_on_sqlite:
        with transaction.atomic():
            yield
    else:
        yield


@contextmanager
def try_lock(key: int, cache_key: str, expiry_seconds: int) -> Iterator[bool]:
    """Yields whether this process now holds the lock `key` (never waits).

    On PostgreSQL a session advisory lock: released on exit, or by the server if the process dies.
    Elsewhere (the embedded SQLite run) a cache entry under `cache_key` that expires after
    `expiry_seconds`, which is enough for one machine."""
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


def analyze(tables: list[str]) -> None:
    """Refresh the planner's statistics of `tables` after a bulk load. PostgreSQL: ANALYZE of each
    table; SQLite: ANALYZE (of every table), then PRAGMA optimize."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for table in tables:
                cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")  # noqa: S608 - our own table names
        else:
            cursor.execute("ANALYZE")
            cursor.execute("PRAGMA optimize")
