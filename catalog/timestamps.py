"""PostgreSQL's dates and times read in C where they are UTC (PostgreSQL only).

Django reads every `timestamptz` through a loader written in Python (psycopg's parser, then its
time zone set): about 10 µs each, and an answer reads a few hundred (each machine's sighting, the
measured speeds'). With the session in UTC, as Django sets it, PostgreSQL writes them
"2026-12-06 18:45:24.007102+00", which Python's own `datetime.fromisoformat` reads in under 2 µs.
`UtcTimestampLoader` reads those so, to the same value, and hands anything else (another offset,
infinity, a year past 9999) to Django's loader, so no value reads differently.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.backends.postgresql.psycopg_any import BaseTzLoader

UTC_SUFFIX = b"+00"


class UtcTimestampLoader(BaseTzLoader):
    """Django's timestamptz loader, with the UTC values PostgreSQL writes read by `fromisoformat`."""

    def load(self, data: Any) -> datetime:
        raw = bytes(data)
        if raw.endswith(UTC_SUFFIX):
            try:
                return datetime.fromisoformat(raw[: -len(UTC_SUFFIX)].decode()).replace(tzinfo=self.timezone)
            except ValueError:
                pass
        return super().load(data)


def register(connection) -> None:
    """The PostgreSQL connection `connection` (Django's) reads its timestamptz values by
    `UtcTimestampLoader`, in the connection's time zone as Django's loader would."""
    loader = type("ConnectionUtcTimestampLoader", (UtcTimestampLoader,), {"timezone": connection.timezone})
    connection.connection.adapters.register_loader("timestamptz", loader)
