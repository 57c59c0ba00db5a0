"""The shipped demo fleet under its demo refresh shows every feature at any minute: clusters (at least two
sites with two or more whole identical machines free after every round), throughput plans over measured
speeds, interruptible machines and host-reported memory that differs from the datasheet. Each round is the
refresh itself (`refresh_provider` for every demo provider) reading the demo feed of a fixed minute."""
import json
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from catalog.clusters import cluster_sites
from catalog.data.demo_fleet import CLUSTER_SITES, KEPT_WHOLE_MACHINE_IDS
from catalog.models import Machine, Provider
from nodelodge.refresh import services
from nodelodge.refresh.selectors import demo_feed_document
from sizing.offers import Preferences
from tests.factories import load_shipped_catalog

pytestmark = pytest.mark.django_db

FIRST_MINUTE = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
# Minutes far apart as well as in a row: each minute is a seed of the demo feed.
MINUTES = [*range(20), *range(1_000, 100_000, 9_973)]


@pytest.fixture
def refresh_at(monkeypatch):
    """Refreshes every demo provider from its demo feed as of FIRST_MINUTE + the given minutes."""
    load_shipped_catalog()
    providers = {provider.feed_url: provider for provider in Provider.objects.order_by("slug")}
    minute = {"at": FIRST_MINUTE}
    monkeypatch.setattr(
        services, "fetch_feed",
        lambda url, timeout: json.dumps(demo_feed_document(providers[url], minute["at"])).encode(),
    )

    def refresh(minutes: int) -> None:
        minute["at"] = FIRST_MINUTE + timedelta(minutes=minutes)
        for provider in providers.values():
            run = services.refresh_provider(provider.pk)
            assert run.status == "ok", (provider.slug, run.error)

    return refresh


def whole_sites() -> dict[str, int]:
    """Each site where a cluster may be formed now: how many whole identical machines it has free."""
    return {site.site: len(site.machine_ids) for site in cluster_sites(Preferences())}


def test_two_cluster_sites_keep_two_whole_machines_free_after_every_refresh(refresh_at):
    kept = {spec["site"]: spec["kept_whole"] for spec in CLUSTER_SITES if spec["kept_whole"] >= 2}
    assert len(kept) >= 2
    free_counts = set()
    for minutes in MINUTES:
        refresh_at(minutes)
        sites = whole_sites()
        assert sum(count >= 2 for count in sites.values()) >= 2, (minutes, sites)
        for site, count in kept.items():
            assert sites.get(site, 0) >= count, (minutes, site, sites)
        free_counts.add(tuple(Machine.objects.exclude(provider_machine_id__in=KEPT_WHOLE_MACHINE_IDS)
                              .order_by("pk").values_list("free_gpus", "is_available")))
    assert len(free_counts) == len(MINUTES)  # every other machine still changes from round to round


def test_the_kept_machines_are_whole_and_online_in_the_feed_at_any_minute(db):
    load_shipped_catalog()
    kept = Machine.objects.filter(provider_machine_id__in=KEPT_WHOLE_MACHINE_IDS).select_related("provider")
    assert kept.count() == len(KEPT_WHOLE_MACHINE_IDS) >= 4
    for provider in {machine.provider for machine in kept}:
        for minutes in range(0, 1_440 * 7, 61):  # a week, every 61st minute
            document = demo_feed_document(provider, FIRST_MINUTE + timedelta(minutes=minutes))
            for entry in document["machines"]:
                if entry["id"] in KEPT_WHOLE_MACHINE_IDS:
                    assert (entry["free_gpus"], entry["available"]) == (entry["gpu_count"], True)


def recommend(*args: str) -> dict:
    out = StringIO()
    call_command("recommend", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def assert_every_feature_is_shown() -> None:
    live = Machine.objects.filter(gone_at__isnull=True, is_available=True, free_gpus__gt=0)
    assert live.filter(interruptible=True).count() >= 5
    flagged = live.exclude(memory_flag="").filter(memory_source=Machine.MemorySource.HOST)
    assert flagged.count() >= 3
    assert all("datasheet figure" in flag for flag in flagged.values_list("memory_flag", flat=True))
    plan = recommend("--model", "llama-3-1-8b", "--precision", "16", "--target-tokens", "5000")["throughput_plan"]
    assert plan["machines_with_speed"] >= 10
    assert plan["plans"] and plan["plans"][0]["usable_tokens_per_s"] >= 5000
    plan = recommend("--model", "llama-3-1-70b", "--precision", "16", "--target-tokens", "1000")["throughput_plan"]
    assert plan["plans"], plan
    clusters = recommend("--model", "llama-3-1-405b", "--precision", "16", "--context", "131072",
                         "--requests", "8")["clusters"]
    assert len(clusters) >= 2


def test_the_shipped_demo_shows_every_feature_before_and_after_refreshes(refresh_at):
    assert_every_feature_is_shown()
    for minutes in (0, 1, 2, 5_000):
        refresh_at(minutes)
        assert_every_feature_is_shown()
