"""`manage.py import_offers --format FORMAT [--provider SLUG] [--dry-run] [--json] FILE`: a one-off
import of a document of offers into a provider's machines, through the sync a refresh runs."""
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from catalog.models import Provider
from nodelodge.refresh import services
from nodelodge.refresh.feeds import SHORT_NAMES
from nodelodge.refresh.feeds.base import FeedError
from nodelodge.refresh.fetching import MAX_FEED_BYTES
from nodelodge.refresh.models import SyncRun
from nodelodge.refresh.offer_listing import offers_document


class Command(BaseCommand):
    help = (
        "Imports offers from a file in a marketplace's format into a provider's machines, as a refresh "
        "applies its feed (the run shows in the sync history). With --dry-run, shows what it would apply "
        "and refuse, and changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", metavar="FILE", help="The document: the marketplace's answer or catalog.")
        parser.add_argument(
            "--format", required=True, choices=sorted(SHORT_NAMES), dest="feed_format",
            help="The document's format: " + ", ".join(sorted(SHORT_NAMES)) + ".",
        )
        parser.add_argument("--provider", metavar="SLUG", help="The provider whose machines the offers are.")
        parser.add_argument("--dry-run", action="store_true", help="Read and check only; change nothing.")
        parser.add_argument("--json", action="store_true", help="Write the outcome as JSON.")

    def handle(self, *args, **options):
        feed_format = SHORT_NAMES[options["feed_format"]]
        provider = self.provider(options["provider"])
        path = Path(options["file"])
        if options["dry_run"]:
            body = read_file(path)
            try:
                parsed = services.read_offers(body, feed_format=feed_format, provider=provider)
            except FeedError as error:
                named = options["feed_format"]
                raise CommandError(f"{path.name} cannot be read as {named}: {error}.") from None
            self.show_offers(offers_document(parsed), options["json"])
            return
        if provider is None:
            raise CommandError("--provider is needed to import (or use --dry-run to read the file only).")
        body = read_file(path)
        source = f"import: {path.name}"
        run = services.import_offers(provider, body, feed_format=feed_format, source=source)
        self.show_run(run, options["json"])
        if run.status == SyncRun.Status.FAILED:
            raise CommandError(f"nothing was imported. {run.error}")
        from nodelodge.watches.evaluation import evaluate_watches  # as a refresh does after applying

        evaluate_watches()

    @staticmethod
    def provider(slug: str | None) -> Provider | None:
        if slug is None:
            return None
        provider = Provider.objects.filter(slug=slug).first()
        if provider is None:
            raise CommandError(f"No provider with slug {slug}.")
        return provider

    def show_offers(self, document: dict, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(document, indent=2, ensure_ascii=False))
            return
        for offer in document["offers"]:
            spot = offer["interruptible_price_per_gpu_hour"]
            reserved = offer["reserved_price_per_gpu_hour"]
            free = "?" if offer["available_gpus"] is None else offer["available_gpus"]
            self.stdout.write(
                f"{offer['id']}: {offer['gpus']}× {offer['gpu_type']}, {offer['memory_per_gpu_gib']} GiB "
                f"per GPU, ${offer['price_per_gpu_hour']}/GPU-h"
                + (f" (interruptible ${spot})" if spot else "")
                + (f" (reserved ${reserved} for {offer['reserved_term_days']} days)" if reserved else "")
                + f", {free} free"
                + (f", {offer['country']}" if offer["country"] else "")
            )
        for refusal in document["refused"]:
            self.stdout.write(self.style.WARNING(f"refused {refusal['record']}: {refusal['reason']}"))
        counts = f"{len(document['offers'])} offers read, {len(document['refused'])} refused"
        self.stdout.write(f"{counts}; nothing changed.")

    def show_run(self, run: SyncRun, as_json: bool) -> None:
        if as_json:
            outcome = {
                "provider": run.provider.slug, "status": run.status, "received": run.received,
                "added": run.added, "updated": run.updated, "unchanged": run.unchanged, "gone": run.gone,
                "rejected": run.rejected, "refused": run.rejected_details, "error": run.error or None,
            }
            self.stdout.write(json.dumps(outcome, indent=2, ensure_ascii=False))
            return
        line = (
            f"{run.provider.slug}: {run.status} — {run.received} received, {run.added} added, {run.updated} "
            f"updated, {run.unchanged} unchanged, {run.gone} gone, {run.rejected} rejected"
        )
        style = self.style.SUCCESS if run.status == SyncRun.Status.OK else self.style.WARNING
        self.stdout.write(style(line))
        for refusal in run.rejected_details:
            record = refusal.get("id") or refusal.get("where") or "?"
            self.stdout.write(f"refused {record}: {refusal['reason']}")


def read_file(path: Path) -> bytes:
    """The file's bytes, at most a feed's largest size; CommandError saying why not otherwise."""
    try:
        with path.open("rb") as file:
            body = file.read(MAX_FEED_BYTES + 1)
    except FileNotFoundError:
        raise CommandError(f"No such file: {path}.") from None
    except IsADirectoryError:
        raise CommandError(f"{path} is a folder, not a file.") from None
    except OSError as error:
        raise CommandError(f"Cannot read {path}: {error.strerror or error}.") from None
    if len(body) > MAX_FEED_BYTES:
        largest = MAX_FEED_BYTES // (1024 * 1024)
        raise CommandError(f"{path.name} is larger than {largest} MiB, a feed's largest size.")
    return body
