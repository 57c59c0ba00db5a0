"""Each marketplace's format fetched by the refresh from a real HTTP server on loopback: the machines
land with their units converted, the bad records are refused alone in the sync history, and staff's
GPU aliases decide what a name means."""
from decimal import Decimal

import pytest

from catalog.models import GpuAlias, Machine
from catalog.services import load_gpu_aliases, load_gpu_types
from nodelodge.refresh.feeds import ADAPTERS
from nodelodge.refresh.models import SyncRun
from nodelodge.refresh.services import gpu_type_index, refresh_provider
from tests.factories import make_gpu_type, make_provider
from tests.feeds import OFFER_FIXTURE_FILES, offer_fixture

COLUMNS = (
    "provider_machine_id", "gpu_type__name", "gpu_count", "free_gpus", "memory_per_gpu_mib", "memory_source",
    "is_available", "country", "region", "price_per_gpu_hour", "interruptible", "booking_limit_hours",
)


@pytest.fixture
def shipped_gpu_types(db):
    load_gpu_types()
    load_gpu_aliases()


def refreshed(feed_server, feed_format: str, tier: str = "secure") -> SyncRun:
    provider = make_provider(f"{feed_format} cloud", tier=tier, feed_format=feed_format)
    provider.feed_url = feed_server.serve_bytes(feed_format, offer_fixture(feed_format))
    provider.save()
    return refresh_provider(provider.pk)


def landed(run: SyncRun) -> list[tuple]:
    return list(Machine.objects.filter(provider=run.provider).order_by("provider_machine_id").values_list(*COLUMNS))


@pytest.mark.django_db
@pytest.mark.parametrize("feed_format", sorted(OFFER_FIXTURE_FILES))
def test_each_format_refreshes_through_the_feed_server(feed_server, shipped_gpu_types, feed_format):
    run = refreshed(feed_server, feed_format)

    parsed = ADAPTERS[feed_format].parse(
        offer_fixture(feed_format), provider_slug="x", gpu_types=gpu_type_index(), tier="secure"
    )
    assert run.status == SyncRun.Status.PARTIAL, run.error
    assert (run.received, run.added, run.rejected) == (parsed.received, len(parsed.records), len(parsed.rejected))
    assert run.rejected_details == [r.as_dict() for r in parsed.rejected]
    assert landed(run) == sorted(
        (r.provider_machine_id, r.gpu_type.name, r.gpu_count, r.free_gpus, r.memory_mib, "datacenter", r.available,
         r.country, r.region, r.price_per_gpu_hour, r.interruptible, r.booking_limit_hours)
        for r in parsed.records
    )


@pytest.mark.django_db
def test_vast_offers_land_with_their_units_converted(feed_server, shipped_gpu_types):
    run = refreshed(feed_server, "vast-offers", tier="community")

    assert landed(run) == [
        ("8123401", "RTX 4090", 2, 2, 24564, "host", True, "SE", "Sweden, SE", Decimal("0.4006"), False, 720),
        ("8123402", "H100 SXM 80GB", 8, 8, 81559, "host", True, "US", "California, US", Decimal("2.4933"), False,
         337),
        ("8123403", "A100 80GB", 4, 0, 81920, "host", False, "DE", "Germany, DE", Decimal("1.2000"), False, None),
    ]
    assert [(d["id"], d["reason"]) for d in run.rejected_details] == [
        ("8123404", "GPU memory is missing (gpu_ram)"),
        ("8123405", "dph_total must be above zero, got 0"),
        ("8123406", "unknown GPU name 'Titan Xp' (no GPU type or alias has it)"),
    ]


@pytest.mark.django_db
def test_primes_prepaid_offer_lands_as_its_machines_reserved_price(feed_server, shipped_gpu_types):
    run = refreshed(feed_server, "prime-availability")

    reserved = Machine.objects.filter(provider=run.provider, reserved_price_per_gpu_hour__isnull=False)
    assert list(reserved.values_list("provider_machine_id", "price_per_gpu_hour", "reserved_price_per_gpu_hour",
                                     "reserved_term_days")) == [
        ("hyperstack/NVIDIA_H100_SXM5_80GB/CANADA-1/8", Decimal("2.3900"), Decimal("1.9200"), 90)]
    # 11 offers: 4 machines, the reserved price kept and 6 refused, the prepaid ones each alone with its reason.
    assert (run.received, run.added, run.rejected) == (11, 4, 6)
    assert [(d["id"], d["reason"]) for d in run.rejected_details][:3] == [
        ("datacrunch/8H100.80S.176V.30D/FIN-01/8/prepaid",
         "a prepaid offer without an on-demand offer of the same machine (datacrunch/8H100.80S.176V.30D/FIN-01/8) "
         "in the answer; the console keeps a reserved price beside a machine's on-demand price"),
        ("hyperstack/NVIDIA_H100_SXM5_80GB/CANADA-1/8/prepaid",
         "a cheaper prepaid offer of the same machine is kept (H100_80GB[5]: 1.9200 USD per GPU-hour for 90 "
         "days); a machine has one reserved price"),
        ("runpod/h100-80gb-pcie/US-KS-2/1/prepaid", "prepaidTime 129600 s is not a whole number of days"),
    ]
    # A prepaid offer's refusal names no machine: the on-demand machine beside it was applied and stays live.
    assert Machine.objects.get(provider=run.provider, provider_machine_id="runpod/h100-80gb-pcie/US-KS-2/1").gone_at is None


@pytest.mark.django_db
def test_a_gpu_alias_staff_add_makes_the_next_refresh_read_the_name(feed_server, shipped_gpu_types):
    first = refreshed(feed_server, "vast-offers")
    titan = make_gpu_type("Titan Xp", memory_mib=12_196)
    GpuAlias.objects.create(name="TITAN_XP", gpu_type=titan, notes="Vast.ai")

    second = refresh_provider(first.provider.pk)

    assert (second.added, second.unchanged, second.rejected) == (1, 3, 2)
    machine = Machine.objects.get(provider=first.provider, provider_machine_id="8123406")
    assert (machine.gpu_type, machine.price_per_gpu_hour, machine.memory_per_gpu_mib) == (
        titan, Decimal("0.0800"), 12_288
    )


@pytest.mark.django_db
def test_the_provider_tier_picks_runpods_cloud(feed_server, shipped_gpu_types):
    run = refreshed(feed_server, "runpod-gpu-types", tier="community")

    prices = dict(Machine.objects.filter(provider=run.provider).values_list("provider_machine_id", "price_per_gpu_hour"))
    assert prices == {
        "NVIDIA GeForce RTX 4090": Decimal("0.3400"), "NVIDIA H100 80GB HBM3": Decimal("2.6900"),
        "NVIDIA A100-SXM4-80GB": Decimal("1.3900"),
    }
    assert "not offered on RunPod's community cloud" in str(run.rejected_details)


@pytest.mark.django_db
def test_a_document_in_another_format_fails_whole_and_changes_nothing(feed_server, shipped_gpu_types):
    run = refreshed(feed_server, "vast-offers")
    provider = run.provider
    provider.feed_format = "lambda-instance-types"
    provider.save()

    failed = refresh_provider(provider.pk)

    assert failed.status == SyncRun.Status.FAILED
    assert failed.error == 'Feed rejected: the answer has no "data" object of instance types.'
    assert Machine.objects.filter(provider=provider, gone_at__isnull=True).count() == 3
