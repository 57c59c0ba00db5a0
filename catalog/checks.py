"""System checks of the catalog. `manage.py check --database default` (run at deploy, after migrate)
compares the counting engine's SQL installed in PostgreSQL with the shipped files."""
from __future__ import annotations

from django.core import checks
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from catalog import database
from catalog.counting import drift


@checks.register(checks.Tags.database)
def counting_sql_as_shipped(app_configs=None, databases=None, **kwargs):
    errors = []
    for alias in databases or ():
        connection = connections[alias]
        if not database.keeps_counts(connection):
            continue
        executor = MigrationExecutor(connection)
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):
            continue  # migrate installs the SQL; `migrate` itself runs this check before it does
        found = drift.differences(connection)
        if found:
            errors.append(checks.Error(
                drift.message(found),
                hint="Add a migration that installs catalog/counting/sql/ as it is now.",
                id="catalog.E001",
            ))
    return errors
