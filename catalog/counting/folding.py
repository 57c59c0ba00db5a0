"""Whether the snapshot being read has folded its own changes into the kept counts.

`catalog.database.one_snapshot` notes here the snapshot it opens (`reading`); the kept counts
(`catalog.counting.fleet_counts.merge_pending`) ask, before a count read, whether its transaction may
still hold changes of its own to fold (`counts_folded`), and note when they folded them
(`note_counts_folded`). Neither needs the other: both need this record alone.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class _Snapshot:
    """The `one_snapshot` being read, on the connection `alias`: whether its transaction may still hold
    changes of its own to fold into the kept counts (only a caller's transaction that wrote machines
    has any, and reads add none)."""

    def __init__(self, alias: str, folded: bool):
        self.alias = alias
        self.folded = folded


_snapshot: ContextVar[_Snapshot | None] = ContextVar("catalog_snapshot", default=None)


def in_snapshot(connection) -> bool:
    """Whether a `one_snapshot` is being read on `connection` (its alias)."""
    current = _snapshot.get()
    return current is not None and current.alias == connection.alias


@contextmanager
def reading(connection, *, folded: bool) -> Iterator[None]:
    """A snapshot is read on `connection` inside: `folded` when its transaction has no changes of its
    own to fold (one of its own, which only reads)."""
    token = _snapshot.set(_Snapshot(connection.alias, folded))
    try:
        yield
    finally:
        _snapshot.reset(token)


def counts_folded(connection) -> bool:
    """Whether the current `one_snapshot` on `connection` has no changes of its own left to fold into
    the kept counts (False outside one: every read must see to it)."""
    current = _snapshot.get()
    return current is not None and current.alias == connection.alias and current.folded


def note_counts_folded(connection) -> None:
    """The current `one_snapshot` on `connection` (if any) has folded its changes: its reads write no
    machines, so none of its later count reads needs to fold again."""
    current = _snapshot.get()
    if current is not None and current.alias == connection.alias:
        current.folded = True
