from django.core.management.base import BaseCommand

from catalog.services import analyze_catalog_tables, load_catalog


class Command(BaseCommand):
    help = "Load or refresh the shipped catalog (models, GPU types) and the demo fleet. Safe to rerun."

    def add_arguments(self, parser):
        parser.add_argument("--no-fleet", action="store_true", help="Skip the demo fleet.")

    def handle(self, *args, **options):
        counts = load_catalog(fleet=not options["no_fleet"])
        analyze_catalog_tables()
        summary = ", ".join(f"{count} {name.replace('_', ' ')}" for name, count in counts.items())
        self.stdout.write(self.style.SUCCESS(f"Catalog loaded: {summary}."))
