from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections

from catalog import database
from catalog.counting import drift, shipped


class Command(BaseCommand):
    help = (
        "The counting engine's SQL: compare the checked-in files (catalog/counting/sql/) with the "
        "generators (--write rewrites them), and the database's functions and triggers with the files."
    )

    def add_arguments(self, parser):
        parser.add_argument("--write", action="store_true", help="Rewrite the files from the generators.")
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS, help="The database to compare.")

    def handle(self, *args, **options):
        if options["write"]:
            changed = shipped.write()
            self.stdout.write(f"Rewrote {', '.join(changed)}." if changed else "The files were up to date.")
            return
        stale = shipped.stale()
        if stale:
            raise CommandError(
                f"Files differ from the generators: {', '.join(stale)} (run counting_sql --write)."
            )
        connection = connections[options["database"]]
        if not database.keeps_counts(connection):
            self.stdout.write("The files match the generators; this database keeps no counts.")
            return
        differing = drift.differences(connection)
        if differing:
            raise CommandError(drift.message(differing))
        self.stdout.write(self.style.SUCCESS("The files match the generators, and the database the files."))
