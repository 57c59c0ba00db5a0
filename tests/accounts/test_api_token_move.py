"""API tokens moved from Watches to Accounts: the table, its rows and the tokens themselves stay."""
from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from nodelodge.accounts import tokens
from tests.factories import make_user

BEFORE = [("watches", "0001_initial"), ("accounts", None)]
AFTER = [("watches", "0002_apitoken_to_accounts"), ("accounts", "0001_initial")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state([t for t in targets if t[1] is not None]).apps


def latest():
    graph = MigrationExecutor(connection).loader.graph
    return [*graph.leaf_nodes("watches"), *graph.leaf_nodes("accounts")]


@pytest.mark.django_db(transaction=True)
def test_a_token_made_before_the_move_still_signs_its_owner_in_after_it():
    owner = make_user("ada")
    token = tokens.PREFIX + "made-before-the-move"
    old = migrate(BEFORE)
    try:
        assert "apitoken" not in old.all_models["accounts"]
        old.get_model("watches", "ApiToken").objects.create(
            owner_id=owner.pk, digest=tokens.digest(token), prefix=token[:10]
        )
    finally:
        new = migrate(AFTER)
    try:
        assert "apitoken" not in new.all_models["watches"]
        assert new.get_model("accounts", "ApiToken").objects.get().owner_id == owner.pk
        assert tokens.user_for(token) == owner
    finally:
        migrate(latest())


@pytest.mark.django_db(transaction=True)
def test_going_back_before_the_move_keeps_the_table_and_its_rows():
    owner = make_user("ada")
    _row, token = tokens.create_token(owner)
    try:
        old = migrate(BEFORE)
        assert "watches_apitoken" in connection.introspection.table_names()
        assert old.get_model("watches", "ApiToken").objects.get().digest == tokens.digest(token)
    finally:
        migrate(latest())
    assert tokens.user_for(token) == owner
