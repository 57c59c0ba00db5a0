"""`catalog.database.one_snapshot`: an answer's reads in one REPEATABLE READ transaction, begun in one
statement, and the connection as it was afterwards."""
from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from catalog import database

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgresql(reason="isolation levels are PostgreSQL's; on the embedded SQLite run a snapshot "
                                  "is a plain transaction or none (`lock_on_sqlite`)"),
]


def isolation() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW transaction_isolation")
        return cursor.fetchone()[0]


def test_reads_inside_a_snapshot_run_repeatable_read():
    with database.one_snapshot():
        assert connection.in_atomic_block
        assert isolation() == "repeatable read"


def test_the_snapshot_begins_without_a_statement_of_its_own():
    with CaptureQueriesContext(connection) as statements, database.one_snapshot():
        isolation()
    sent = [statement["sql"] for statement in statements.captured_queries]
    assert not any("SET TRANSACTION" in sql for sql in sent), sent
    assert len(sent) == 3, sent  # BEGIN, the read, COMMIT


def test_the_next_transaction_has_the_connections_own_level_again():
    with database.one_snapshot():
        isolation()
    with transaction.atomic():
        assert isolation() == "read committed"
    assert isolation() == "read committed"


def test_a_snapshot_left_by_an_error_leaves_the_connection_usable_at_its_own_level():
    with pytest.raises(ZeroDivisionError), database.one_snapshot():
        isolation()
        1 / 0  # noqa: B018
    with transaction.atomic():
        assert isolation() == "read committed"
