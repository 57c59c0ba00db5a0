"""`manage.py gpu_history SLUG [--market M] [--country CC] [--json]`: a GPU type's price and stock history
over the last 30 days, as its page and `GET /api/v1/gpu-types/{slug}/history` read it."""
import json

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from catalog.models import GpuType
from nodelodge.refresh.selectors import gpu_type_history, history_document
from nodelodge.wizard.history_page import HistoryFilterForm


class Command(BaseCommand):
    help = "Shows a GPU type's price and stock history over the last 30 days, by day (hour by hour: --json)."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="The GPU type's slug, e.g. h100-sxm-80gb.")
        parser.add_argument("--market", default="", help="on_demand (default), interruptible or reserved.")
        parser.add_argument("--country", default="", help="ISO 3166 alpha-2 code; empty for every country.")
        parser.add_argument("--json", action="store_true", help="Write the API's answer.")

    def handle(self, *args, **options):
        form = HistoryFilterForm({"market": options["market"], "country": options["country"]})
        if not form.is_valid():
            errors = form.errors_by_field()
            raise CommandError("; ".join(f"--{name}: {message}" for name, message in errors.items()))
        gpu_type = GpuType.objects.filter(slug=options["slug"]).first()
        if gpu_type is None:
            raise CommandError(f"No GPU type has the slug “{options['slug']}”.")
        history = gpu_type_history(gpu_type, market=form.cleaned_data["market"],
                                   country=form.cleaned_data["country"], now=timezone.now())
        if options["json"]:
            self.stdout.write(json.dumps(history_document(history), indent=2))
            return
        median = history.median_30d
        self.stdout.write(f"{gpu_type.name}, {history.market}, {history.country or 'every country'}: "
                          f"30-day median {'none' if median is None else f'${median}'} per GPU-hour")
        for day in history.days:
            self.stdout.write(f"{day.day}  cheapest ${day.cheapest}  median ${day.median}  "
                              f"stock {day.refreshes_with_stock}/{day.refreshes} refreshes")
