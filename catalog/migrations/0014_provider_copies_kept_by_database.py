"""Machines keep copies of their provider's tier and active flag, so the availability rule and the
fleet counts need no join. Until now only the admin's save kept the copies in step; a queryset
update, a data migration or a shell left them stale (a deactivated provider's machines stayed
recommended). From here the database keeps them, on both databases: a machine always takes its
provider's figures when written, and a provider's change is copied onto its machines in the same
statement. The SQL is written out here, frozen, as migrations must not import live code."""
from django.db import migrations

POSTGRESQL_INSTALL = [
    """
    CREATE OR REPLACE FUNCTION catalog_machine_takes_provider_figures() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        SELECT p.tier, p.is_active INTO NEW.tier, NEW.provider_is_active
        FROM catalog_provider p WHERE p.id = NEW.provider_id;
        RETURN NEW;
    END
    $$
    """,
    """
    CREATE TRIGGER catalog_machine_takes_provider_figures
    BEFORE INSERT OR UPDATE OF provider_id, tier, provider_is_active ON catalog_machine
    FOR EACH ROW EXECUTE FUNCTION catalog_machine_takes_provider_figures()
    """,
    """
    CREATE OR REPLACE FUNCTION catalog_provider_figures_to_machines() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE catalog_machine SET tier = NEW.tier, provider_is_active = NEW.is_active
        WHERE provider_id = NEW.id
          AND (tier IS DISTINCT FROM NEW.tier OR provider_is_active IS DISTINCT FROM NEW.is_active);
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER catalog_provider_figures_to_machines
    AFTER UPDATE OF tier, is_active ON catalog_provider
    FOR EACH ROW
    WHEN (OLD.tier IS DISTINCT FROM NEW.tier OR OLD.is_active IS DISTINCT FROM NEW.is_active)
    EXECUTE FUNCTION catalog_provider_figures_to_machines()
    """,
]
POSTGRESQL_UNINSTALL = [
    "DROP TRIGGER IF EXISTS catalog_provider_figures_to_machines ON catalog_provider",
    "DROP FUNCTION IF EXISTS catalog_provider_figures_to_machines()",
    "DROP TRIGGER IF EXISTS catalog_machine_takes_provider_figures ON catalog_machine",
    "DROP FUNCTION IF EXISTS catalog_machine_takes_provider_figures()",
]

# SQLite has no BEFORE trigger that can change the row: the machine's row is corrected right after
# the write instead (recursive triggers are off, so the correction fires nothing more).
SQLITE_INSTALL = [
    """
    CREATE TRIGGER catalog_machine_takes_provider_figures_insert
    AFTER INSERT ON catalog_machine FOR EACH ROW
    BEGIN
        UPDATE catalog_machine
        SET tier = (SELECT p.tier FROM catalog_provider p WHERE p.id = NEW.provider_id),
            provider_is_active = (SELECT p.is_active FROM catalog_provider p WHERE p.id = NEW.provider_id)
        WHERE id = NEW.id;
    END
    """,
    """
    CREATE TRIGGER catalog_machine_takes_provider_figures_update
    AFTER UPDATE OF provider_id, tier, provider_is_active ON catalog_machine FOR EACH ROW
    BEGIN
        UPDATE catalog_machine
        SET tier = (SELECT p.tier FROM catalog_provider p WHERE p.id = NEW.provider_id),
            provider_is_active = (SELECT p.is_active FROM catalog_provider p WHERE p.id = NEW.provider_id)
        WHERE id = NEW.id;
    END
    """,
    """
    CREATE TRIGGER catalog_provider_figures_to_machines
    AFTER UPDATE OF tier, is_active ON catalog_provider FOR EACH ROW
    WHEN OLD.tier IS NOT NEW.tier OR OLD.is_active IS NOT NEW.is_active
    BEGIN
        UPDATE catalog_machine SET tier = NEW.tier, provider_is_active = NEW.is_active
        WHERE provider_id = NEW.id;
    END
    """,
]
SQLITE_UNINSTALL = [
    "DROP TRIGGER IF EXISTS catalog_provider_figures_to_machines",
    "DROP TRIGGER IF EXISTS catalog_machine_takes_provider_figures_update",
    "DROP TRIGGER IF EXISTS catalog_machine_takes_provider_figures_insert",
]
# Copies written before the triggers existed are brought in step once.
CATCH_UP = """
    UPDATE catalog_machine SET
        tier = (SELECT p.tier FROM catalog_provider p WHERE p.id = catalog_machine.provider_id),
        provider_is_active = (SELECT p.is_active FROM catalog_provider p WHERE p.id = catalog_machine.provider_id)
    WHERE EXISTS (
        SELECT 1 FROM catalog_provider p WHERE p.id = catalog_machine.provider_id
          AND (p.tier <> catalog_machine.tier OR p.is_active <> catalog_machine.provider_is_active)
    )
"""


def install(apps, schema_editor):
    postgresql = schema_editor.connection.vendor == "postgresql"
    for statement in [CATCH_UP, *(POSTGRESQL_INSTALL if postgresql else SQLITE_INSTALL)]:
        schema_editor.execute(statement)


def uninstall(apps, schema_editor):
    postgresql = schema_editor.connection.vendor == "postgresql"
    for statement in POSTGRESQL_UNINSTALL if postgresql else SQLITE_UNINSTALL:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("catalog", "0013_counting_functions_laid_out")]

    operations = [migrations.RunPython(install, uninstall)]
