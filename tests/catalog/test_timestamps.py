"""PostgreSQL's dates and times are read in C where they are UTC (`catalog.timestamps`): the same values
Django's own loader reads, whatever the microseconds, and anything else handed to Django's loader."""
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import register_tzloader
from psycopg.pq import Format

from catalog.timestamps import UtcTimestampLoader

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.postgresql(reason="timestamptz loaders are the PostgreSQL driver's; SQLite stores text"),
]

LITERALS = [
    "2026-12-06 18:45:24.007102+00",
    "2026-12-06 18:45:24+00",
    "2026-12-06 18:45:24.5+00",
    "1999-01-01 00:00:00.000001+00",
    "9999-12-31 23:59:59.999999+00",
    "2026-06-01 12:00:00+02",
]


def _read(sql: str, django_loader: bool) -> list[tuple]:
    with connection.cursor() as cursor:
        if django_loader:
            register_tzloader(connection.timezone, cursor.cursor)
        cursor.execute(sql)
        return cursor.fetchall()


def test_every_connection_reads_timestamps_with_the_fast_loader_in_its_time_zone():
    connection.ensure_connection()
    loader = connection.connection.adapters.get_loader(
        connection.connection.adapters.types["timestamptz"].oid, Format.TEXT
    )
    assert issubclass(loader, UtcTimestampLoader)
    assert loader.timezone == connection.timezone


def test_the_fast_loader_reads_what_djangos_loader_reads():
    sql = "SELECT " + ", ".join(f"'{literal}'::timestamptz" for literal in LITERALS)
    fast, django = _read(sql, django_loader=False), _read(sql, django_loader=True)
    assert fast == django
    assert fast[0][0] == datetime(2026, 12, 6, 18, 45, 24, 7102, tzinfo=UTC)
    assert fast[0][5] == datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def test_a_session_in_another_time_zone_reads_as_djangos_loader_reads_it():
    """PostgreSQL writes "+05:30" there: the fast loader hands it to Django's, value for value."""
    sql = "SELECT '2026-12-06 18:45:24.007102+00'::timestamptz, NULL::timestamptz"
    with connection.cursor() as cursor:
        cursor.execute("SET TIME ZONE 'Asia/Kolkata'")
    try:
        fast, django = _read(sql, django_loader=False), _read(sql, django_loader=True)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET TIME ZONE 'UTC'")
    assert fast == django
    assert fast[0][1] is None


def test_infinity_is_refused_as_djangos_loader_refuses_it():
    from django.db import DataError

    for django_loader in (False, True):
        with pytest.raises(DataError):
            _read("SELECT 'infinity'::timestamptz", django_loader=django_loader)
