import threading

from django.core.management.base import BaseCommand, CommandError

from catalog.models import Provider
from nodelodge.refresh import services


class Command(BaseCommand):
    help = "Refreshes providers from their feeds now, in this process (no worker needed)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--provider", action="append", metavar="SLUG",
            help="Refresh only this provider (repeatable). Default: every active provider with a feed.",
        )
        parser.add_argument(
            "--every", type=float, metavar="SECONDS",
            help="Keep refreshing, waiting this long before each round (the embedded run's beat).",
        )

    def handle(self, *args, **options):
        interval = options["every"]
        if interval is None:
            self.refresh_once(options)
            return
        if interval <= 0:
            raise CommandError("--every must be a positive number of seconds.")
        stop = threading.Event()
        while not stop.wait(interval):
            self.refresh_once(options)

    def refresh_once(self, options):
        slugs = options["provider"]
        if slugs:
            found = dict(Provider.objects.filter(slug__in=slugs).values_list("slug", "pk"))
            unknown = sorted(set(slugs) - found.keys())
            if unknown:
                raise CommandError(f"No provider with slug {', '.join(unknown)}.")
            provider_ids = [found[slug] for slug in slugs]
        else:
            provider_ids = services.providers_to_refresh()
            if not provider_ids:
                self.stdout.write("No active provider has a feed URL; nothing to refresh.")
                return
        for provider_id in provider_ids:
            run = services.refresh_provider(provider_id)
            line = (
                f"{run.provider.slug}: {run.status} — {run.received} received, {run.added} added, "
                f"{run.updated} updated, {run.unchanged} unchanged, {run.gone} gone, {run.rejected} rejected"
            )
            if run.duration_seconds is not None:
                line += f" in {run.duration_seconds:.2f} s"
            if run.error:
                line += f". {run.error}"
            style = self.style.SUCCESS if run.status == "ok" else self.style.WARNING
            self.stdout.write(style(line))
        # The watches are checked after the round, as the worker checks them after each refresh.
        from nodelodge.watches.evaluation import evaluate_watches

        evaluation = evaluate_watches()
        if evaluation.watches:
            self.stdout.write(f"watches: {evaluation.watches} checked, {len(evaluation.fired)} fired")
