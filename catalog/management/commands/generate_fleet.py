import time

from django.core.management.base import BaseCommand, CommandError

from catalog.fleets import generate_fleet
from catalog.services import analyze_catalog_tables


class Command(BaseCommand):
    help = "Create (or refresh) a reproducible synthetic fleet: same seed, same machines."

    def add_arguments(self, parser):
        parser.add_argument("--machines", type=int, required=True)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--provider-prefix", default="Synthetic")

    def handle(self, *args, **options):
        if options["machines"] < 0:
            raise CommandError("--machines must not be negative.")
        started = time.perf_counter()
        count = generate_fleet(
            options["machines"], options["seed"], provider_prefix=options["provider_prefix"]
        )
        analyze_catalog_tables()
        elapsed = time.perf_counter() - started
        self.stdout.write(self.style.SUCCESS(f"{count} machines written in {elapsed:.1f} s."))
