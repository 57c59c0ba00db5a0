"""The marketplaces' formats read from their fixtures (tests/refresh/offer_fixtures/, written from each
public reference): every field the console has a place for lands with its unit converted exactly, the
figures it has none for yet are read, and each bad record is refused alone with its reason. Pure
parsing: no database."""
import json
from decimal import Decimal

import pytest

from nodelodge.refresh.feeds import ADAPTERS, SHORT_NAMES
from nodelodge.refresh.feeds.base import FeedError, ParsedFeed
from tests.feeds import OFFER_FIXTURE_FILES, offer_fixture, shipped_gpu_types

GPU_TYPES = shipped_gpu_types()
D = Decimal


def parse(feed_format: str, body: bytes | None = None, tier: str = "secure") -> ParsedFeed:
    return ADAPTERS[feed_format].parse(
        offer_fixture(feed_format) if body is None else body, provider_slug="acme", gpu_types=GPU_TYPES, tier=tier
    )


def machines(parsed: ParsedFeed) -> list[tuple]:
    """(id, GPU type, GPUs, free, MiB per GPU, available, country, region, USD per GPU-hour, interruptible,
    booking limit in hours) of each machine, in the feed's order."""
    return [
        (r.provider_machine_id, r.gpu_type.name, r.gpu_count, r.free_gpus, r.memory_mib, r.available, r.country,
         r.region, r.price_per_gpu_hour, r.interruptible, r.booking_limit_hours)
        for r in parsed.records
    ]


def unplaced(parsed: ParsedFeed) -> list[tuple]:
    """(interruptible price per GPU-hour, reliability, stock word, whether free GPUs were counted)."""
    return [
        (r.interruptible_price_per_gpu_hour, r.reliability, r.stock, r.free_gpus_reported) for r in parsed.records
    ]


def reserved(parsed: ParsedFeed) -> list[tuple]:
    """(reserved price per GPU-hour, term in days) of each machine."""
    return [(r.reserved_price_per_gpu_hour, r.reserved_term_days) for r in parsed.records]


def refused(parsed: ParsedFeed) -> list[tuple]:
    return [(r.machine_id, r.reason) for r in parsed.rejected]


def test_every_format_has_an_adapter_a_short_name_and_a_fixture():
    assert sorted(SHORT_NAMES) == ["gpuhunt", "lambda", "nodelodge", "prime", "runpod", "skypilot", "vast"]
    assert set(OFFER_FIXTURE_FILES) == set(ADAPTERS) - {"nodelodge-v1"}


def test_vast_offers():
    parsed = parse("vast-offers")

    assert machines(parsed) == [
        # gpu_ram is MB as the driver reports it (MiB); dph_total is for all the offer's GPUs; duration in s
        ("8123401", "RTX 4090", 2, 2, 24564, True, "SE", "Sweden, SE", D("0.4006"), False, 720),
        ("8123402", "H100 SXM 80GB", 8, 8, 81559, True, "US", "California, US", D("2.4933"), False, 337),
        ("8123403", "A100 80GB", 4, 0, 81920, False, "DE", "Germany, DE", D("1.2000"), False, None),
    ]
    assert unplaced(parsed) == [
        (D("0.2500"), D("0.9981"), "", True),  # min_bid 0.5 over 2 GPUs
        (D("1.5000"), D("0.9995"), "", True),
        (None, D("0.97"), "", True),  # a min_bid of 0 is no interruptible price
    ]
    assert refused(parsed) == [
        ("8123404", "GPU memory is missing (gpu_ram)"),
        ("8123405", "dph_total must be above zero, got 0"),
        ("8123406", "unknown GPU name 'Titan Xp' (no GPU type or alias has it)"),
    ]


@pytest.mark.parametrize(
    ("tier", "expected", "spot"),
    [
        ("secure", [
            ("NVIDIA GeForce RTX 4090", "RTX 4090", 8, 5, 24576, True, "CA", "", D("0.6900"), False, None),
            ("NVIDIA H100 80GB HBM3", "H100 SXM 80GB", 8, 8, 81920, True, "US", "", D("2.9900"), False, None),
            ("NVIDIA A100-SXM4-80GB", "A100 80GB", 8, 0, 81920, False, "", "", D("1.8900"), False, None),
            ("AMD Instinct MI300X OAM", "MI300X", 8, 8, 196608, True, "US", "", D("2.4900"), False, None),
        ], [D("0.3500"), None, D("1.0500"), None]),
        ("community", [
            ("NVIDIA GeForce RTX 4090", "RTX 4090", 8, 5, 24576, True, "CA", "", D("0.3400"), False, None),
            # the community cloud's largest pod: 2 GPUs, of which 12 unreserved means both
            ("NVIDIA H100 80GB HBM3", "H100 SXM 80GB", 2, 2, 81920, True, "US", "", D("2.6900"), False, None),
            ("NVIDIA A100-SXM4-80GB", "A100 80GB", 8, 0, 81920, False, "", "", D("1.3900"), False, None),
        ], [D("0.2000"), D("1.7500"), D("0.7900")]),
    ],
)
def test_runpod_gpu_types_are_read_for_the_providers_tier(tier, expected, spot):
    parsed = parse("runpod-gpu-types", tier=tier)

    assert machines(parsed) == expected
    assert [r.interruptible_price_per_gpu_hour for r in parsed.records] == spot
    assert [r.stock for r in parsed.records][:3] == ["high", "low", "none"]
    reasons = dict(refused(parsed))
    assert reasons["NVIDIA L40S"] == "GPU memory is missing (memoryInGb)"
    assert reasons["NVIDIA RTX A6000"] == f"{tier}Price must be above zero, got 0"
    assert reasons["NVIDIA RTX PRO 6000 Blackwell Server Edition"] == (
        "unknown GPU name 'NVIDIA RTX PRO 6000 Blackwell Server Edition' / 'RTX PRO 6000' "
        "(no GPU type or alias has it)"
    )
    if tier == "community":
        assert reasons["AMD Instinct MI300X OAM"] == "not offered on RunPod's community cloud (communityCloud is false)"
        assert len(parsed.rejected) == 4
    else:
        assert len(parsed.rejected) == 3
        assert parsed.records[3].free_gpus_reported is False  # no maxUnreservedGpuCount: in stock, count unknown


def test_lambda_instance_types():
    parsed = parse("lambda-instance-types")

    assert machines(parsed) == [
        # price_cents_per_hour is US cents for the whole instance; gpu_description's GB are GiB per GPU
        ("gpu_1x_a10@us-east-1", "A10", 1, 1, 24576, True, "US", "us-east-1", D("0.7500"), False, None),
        ("gpu_1x_a10@europe-central-1", "A10", 1, 1, 24576, True, "", "europe-central-1", D("0.7500"), False, None),
        ("gpu_8x_h100_sxm5@us-south-1", "H100 SXM 80GB", 8, 8, 81920, True, "US", "us-south-1", D("2.9900"), False,
         None),
        # capacity nowhere: one machine, not available
        ("gpu_8x_a100_80gb_sxm4", "A100 80GB", 8, 0, 81920, False, "", "", D("1.7900"), False, None),
        # "a100_sxm4" names the 40GB and the 80GB board: the memory picks the 40GB
        ("gpu_1x_a100_sxm4@us-west-1", "A100 40GB", 1, 1, 40960, True, "US", "us-west-1", D("1.2900"), False, None),
    ]
    assert {figures for figures in unplaced(parsed)} == {(None, None, "", False), (None, None, "", True)}
    assert refused(parsed) == [
        ("gpu_2x_a6000", "GPU memory is missing (gpu_description)"),
        ("gpu_4x_a6000", "price_cents_per_hour must be above zero, got 0"),
        ("gpu_1x_rtx6000", "unknown GPU name 'gpu_1x_rtx6000' / 'rtx6000' (no GPU type or alias has it)"),
    ]


def test_skypilot_catalog():
    parsed = parse("skypilot-catalog")

    assert machines(parsed) == [
        # Price and SpotPrice are per instance: 32.7726 / 8 = 4.096575 -> 4.0966
        ("p4d.24xlarge@us-east-1a", "A100 40GB", 8, 8, 40960, True, "US", "us-east-1", D("4.0966"), False, None),
        ("p4de.24xlarge@us-east-1b", "A100 80GB", 8, 8, 81920, True, "US", "us-east-1", D("5.1207"), False, None),
        ("g5.xlarge@eu-central-1a", "A10", 1, 1, 24576, True, "", "eu-central-1", D("1.0060"), False, None),
        # no SizeInMiB: TotalGpuMemoryInMiB 65536 over 4 GPUs, nearest the V100 16GB
        ("p3.8xlarge@us-west-2a", "V100 16GB", 4, 4, 16384, True, "US", "us-west-2", D("3.0600"), False, None),
    ]
    assert [r.interruptible_price_per_gpu_hour for r in parsed.records] == [D("1.2290"), None, D("0.4023"),
                                                                            D("0.9180")]
    assert refused(parsed) == [  # the CPU instance m5.large is skipped, neither a machine nor refused
        ("a2-highgpu-1g@us-central1-a", "GPU memory is missing (GpuInfo memory)"),
        ("g6.xlarge@us-east-1c", "Price must be above zero, got 0"),
        ("dl1.24xlarge@us-east-1a", "unknown GPU name 'Gaudi HL-205' (no GPU type or alias has it)"),
    ]
    assert [r.where for r in parsed.rejected] == ["line 7", "line 8", "line 9"]


def test_gpuhunt_offers_from_its_catalog_csv():
    parsed = parse("gpuhunt-offers")

    assert machines(parsed) == [
        ("p4d.24xlarge@us-east-1", "A100 40GB", 8, 8, 40960, True, "US", "us-east-1", D("4.0966"), False, None),
        # a spot offer is an interruptible machine at its price
        ("p4d.24xlarge@us-east-1/spot", "A100 40GB", 8, 8, 40960, True, "US", "us-east-1", D("1.2290"), True, None),
        ("NVIDIA GeForce RTX 4090@CA", "RTX 4090", 1, 1, 24576, True, "", "CA", D("0.6900"), False, None),
        ("gpu_1x_a6000@us-west-1", "RTX A6000", 1, 1, 49152, True, "US", "us-west-1", D("0.8000"), False, None),
    ]
    assert [r.interruptible_price_per_gpu_hour for r in parsed.records] == [None, D("1.2290"), None, None]
    assert refused(parsed) == [
        ("g6.xlarge@us-east-2", "GPU memory is missing (gpu_memory)"),
        ("Standard_NC24ads_A100_v4@eastus", "price must be above zero, got 0"),
        ("RTX2000Ada-1x@EU-SE-1", "unknown GPU name 'RTX2000Ada' (no GPU type or alias has it)"),
    ]


def test_gpuhunt_offers_as_json_name_their_provider():
    body = (
        b'[{"provider": "vastai", "instance_name": "8123401", "location": "Sweden, SE", "price": 0.8012,'
        b' "cpu": 16, "memory": 125.0, "gpu_count": 2, "gpu_name": "RTX4090", "gpu_memory": 24.0,'
        b' "spot": false, "disk_size": 200.0, "gpu_vendor": "nvidia"},'
        b' {"provider": "vastai", "instance_name": "8123401", "location": "Sweden, SE", "price": 0.5,'
        b' "gpu_count": 2, "gpu_name": "RTX4090", "gpu_memory": 24.0, "spot": "yes"}]'
    )
    parsed = parse("gpuhunt-offers", body)

    assert machines(parsed) == [
        ("vastai/8123401@Sweden, SE", "RTX 4090", 2, 2, 24576, True, "", "Sweden, SE", D("0.4006"), False, None),
    ]
    assert refused(parsed) == [("vastai/8123401@Sweden, SE", "spot must be True or False, got 'yes'")]


def test_prime_availability():
    parsed = parse("prime-availability")

    assert machines(parsed) == [
        # onDemand is for the whole offer: 19.12 / 8; the socket tells the H100 boards apart
        ("hyperstack/NVIDIA_H100_SXM5_80GB/CANADA-1/8", "H100 SXM 80GB", 8, 8, 81920, True, "CA", "CANADA-1",
         D("2.3900"), False, None),
        # communityPrice, where given, is the price (as Prime's CLI reads it)
        ("runpod/h100-80gb-pcie/US-KS-2/1", "H100 PCIe 80GB", 1, 1, 81920, True, "US", "US-KS-2", D("1.9900"),
         False, None),
        ("datacrunch/2H100.80S.30V/FIN-01/2/spot", "H100 SXM 80GB", 2, 2, 81920, True, "FI", "FIN-01", D("1.0500"),
         True, None),
        ("lambdalabs/a100-80gb-sxm4-4x/us-west-1/4", "A100 80GB", 4, 0, 81920, False, "US", "us-west-1",
         D("1.2900"), False, None),
    ]
    assert unplaced(parsed) == [
        (None, None, "available", False), (None, None, "low", False), (D("1.0500"), None, "high", False),
        (None, None, "unavailable", False),
    ]
    # The cheaper of hyperstack's two prepaid offers: 15.36 / 8 for 7,776,000 s, 90 days.
    assert reserved(parsed) == [(D("1.9200"), 90), (None, None), (None, None), (None, None)]
    assert refused(parsed) == [
        ("datacrunch/8H100.80S.176V.30D/FIN-01/8/prepaid",
         "a prepaid offer without an on-demand offer of the same machine (datacrunch/8H100.80S.176V.30D/FIN-01/8) in "
         "the answer; the console keeps a reserved price beside a machine's on-demand price"),
        ("hyperstack/NVIDIA_H100_SXM5_80GB/CANADA-1/8/prepaid",
         "a cheaper prepaid offer of the same machine is kept (H100_80GB[5]: 1.9200 USD per GPU-hour for 90 "
         "days); a machine has one reserved price"),
        ("runpod/h100-80gb-pcie/US-KS-2/1/prepaid", "prepaidTime 129600 s is not a whole number of days"),
        ("tensordock/a100-80gb-nomem/DE-FRA-1/1", "GPU memory is missing (gpuMemory)"),
        ("oblivus/a100-80gb-free/US-NY-1/1", "prices.onDemand must be above zero, got 0"),
        ("tensordock/rtx3060-1x/US-TX-1/1",
         "unknown GPU name 'RTX3060_12GB PCIe' / 'RTX3060_12GB' (no GPU type or alias has it)"),
    ]
    # Every offer is counted once: a machine, a refusal, or the reserved price kept.
    assert (parsed.merged, parsed.received) == (1, 11)


def test_prime_availability_paginated_answer_reads_the_same():
    legacy = parse("prime-availability")
    items = [offer for offers in json.loads(offer_fixture("prime-availability")).values()
             for offer in offers]
    paged = parse("prime-availability", json.dumps({"items": items, "totalCount": len(items)}).encode())

    assert machines(paged) == machines(legacy) and reserved(paged) == reserved(legacy)
    # The same refusals; the prepaid offer kept is named by its place in each answer.
    assert refused(paged) == [(id_, reason.replace("H100_80GB[5]", "items[5]")) for id_, reason in refused(legacy)]
    assert [r.where for r in paged.rejected] == ["items[3]", "items[4]", "items[6]", "items[8]", "items[9]",
                                                 "items[10]"]


# --- Prime's prepaid offers: each its machine's reserved price -----------------------------------------

ON_DEMAND = {
    "cloudId": "h200-8x", "gpuType": "H100_80GB", "socket": "SXM5", "provider": "nebius", "dataCenter": "FI-1",
    "country": "FI", "gpuCount": 8, "gpuMemory": 80, "stockStatus": "High",
    "prices": {"onDemand": 24.0, "communityPrice": None, "currency": "USD"}, "isSpot": False, "prepaidTime": None,
}
MACHINE = "nebius/h200-8x/FI-1/8"


def prepaid_offer(price=16.0, term=2_592_000, **changes) -> dict:
    return ON_DEMAND | {"prices": {"onDemand": price, "currency": "USD"}, "prepaidTime": term} | changes


def parse_prime(*offers) -> ParsedFeed:
    return parse("prime-availability", json.dumps({"items": list(offers)}).encode())


@pytest.mark.parametrize("offers", [
    [ON_DEMAND, prepaid_offer()],
    [prepaid_offer(), ON_DEMAND],  # the prepaid offer first: the same machine
])
def test_a_prepaid_offer_is_the_reserved_price_and_term_of_its_on_demand_machine(offers):
    parsed = parse_prime(*offers)

    assert [(r.provider_machine_id, r.price_per_gpu_hour, r.interruptible) for r in parsed.records] == [
        (MACHINE, D("3.0000"), False)]
    assert reserved(parsed) == [(D("2.0000"), 30)]  # 16.0 / 8 GPUs; 2,592,000 s is 30 days
    assert (parsed.rejected, parsed.received) == ([], 2)


@pytest.mark.parametrize(("term", "reason"), [
    ("30 days", "prepaidTime '30 days' is not a number"),
    (True, "prepaidTime must be a number, got True"),
    ({"days": 30}, "prepaidTime must be a number, got {'days': 30}"),
    (0, "prepaidTime must be above zero, got 0"),
    (-2_592_000, "prepaidTime must be above zero, got -2592000"),
    (3_600, "prepaidTime 3600 s is not a whole number of days"),
    (2_592_000.5, "prepaidTime 2592000.5 s is not a whole number of days"),
    (86_400 * 3_661, "prepaidTime 316310400 s is above 3,660 days"),
    ("NaN", "prepaidTime must be a finite number"),
])
def test_a_malformed_prepaid_time_refuses_the_prepaid_offer_alone(term, reason):
    parsed = parse_prime(ON_DEMAND, prepaid_offer(term=term))

    assert [r.provider_machine_id for r in parsed.records] == [MACHINE]
    assert reserved(parsed) == [(None, None)]  # the on-demand machine, without the term it could not read
    assert refused(parsed) == [(MACHINE + "/prepaid", reason)]


def test_the_longest_term_is_read_exactly():
    parsed = parse_prime(ON_DEMAND, prepaid_offer(term="316224000"))  # 3,660 days in seconds, as text
    assert reserved(parsed) == [(D("2.0000"), 3_660)]


@pytest.mark.parametrize(("changes", "reason"), [
    ({"prices": {"onDemand": 0, "currency": "USD"}}, "prices.onDemand must be above zero, got 0"),
    ({"prices": {"onDemand": 16, "currency": "EUR"}}, "prices are in EUR; the console keeps USD"),
    ({"prices": None}, "prices must be a JSON object, got NoneType"),
    ({"isSpot": True}, "a prepaid offer marked isSpot: a prepaid term is not taken back"),
    ({"isSpot": "no"}, "isSpot must be true or false, got 'no'"),
])
def test_a_prepaid_offer_with_a_bad_figure_is_refused_alone(changes, reason):
    parsed = parse_prime(ON_DEMAND, prepaid_offer(**changes))

    assert reserved(parsed) == [(None, None)]
    assert [reason_ for _id, reason_ in refused(parsed)] == [reason]


def test_a_prepaid_offer_without_its_on_demand_offer_is_refused_and_nothing_else_is_lost():
    other = ON_DEMAND | {"cloudId": "h100-1x", "gpuCount": 1, "prices": {"onDemand": 2.5, "currency": "USD"}}

    parsed = parse_prime(other, prepaid_offer(dataCenter="FI-2"))

    assert [(r.provider_machine_id, r.reserved_price_per_gpu_hour) for r in parsed.records] == [
        ("nebius/h100-1x/FI-1/1", None)]
    assert refused(parsed) == [("nebius/h200-8x/FI-2/8/prepaid", (
        "a prepaid offer without an on-demand offer of the same machine (nebius/h200-8x/FI-2/8) in the answer; "
        "the console keeps a reserved price beside a machine's on-demand price"))]


def test_a_prepaid_offer_whose_on_demand_offer_was_refused_says_so():
    parsed = parse_prime(ON_DEMAND | {"gpuMemory": None}, prepaid_offer())

    assert parsed.records == []
    assert refused(parsed) == [
        (MACHINE, "GPU memory is missing (gpuMemory)"),
        (MACHINE + "/prepaid", f"a prepaid offer whose on-demand offer ({MACHINE}) was refused"),
    ]


def test_of_two_prepaid_offers_as_cheap_the_first_is_kept():
    parsed = parse_prime(ON_DEMAND, prepaid_offer(16.0, term=2_592_000), prepaid_offer(16.0, term=7_776_000))

    assert reserved(parsed) == [(D("2.0000"), 30)]
    assert refused(parsed) == [(MACHINE + "/prepaid", (
        "an as cheap and earlier prepaid offer of the same machine is kept (items[1]: 2.0000 USD per GPU-hour "
        "for 30 days); a machine has one reserved price"))]
    assert [r.where for r in parsed.rejected] == ["items[2]"]


def test_a_prepaid_spot_offer_does_not_join_the_spot_machine():
    spot = ON_DEMAND | {"isSpot": True, "prices": {"onDemand": 12.0, "currency": "USD"}}

    parsed = parse_prime(spot, prepaid_offer(isSpot=True))

    assert [(r.provider_machine_id, r.reserved_price_per_gpu_hour) for r in parsed.records] == [
        (MACHINE + "/spot", None)]
    assert refused(parsed) == [(MACHINE + "/spot/prepaid", "a prepaid offer marked isSpot: a prepaid term is not taken back")]


@pytest.mark.parametrize(
    ("feed_format", "body", "message"),
    [
        ("vast-offers", b"{not json", "not valid JSON"),
        ("vast-offers", b'{"offers": {}}', 'no "offers" list'),
        ("runpod-gpu-types", b'{"errors": [{"message": "Unauthorized"}]}', "reports an error: Unauthorized"),
        ("runpod-gpu-types", b'{"data": {}}', 'no "data.gpuTypes" list'),
        ("lambda-instance-types", b'{"data": []}', 'no "data" object'),
        ("skypilot-catalog", b"InstanceType,Price\nx,1\n", "no AcceleratorName, AcceleratorCount, Region column"),
        ("skypilot-catalog", b"\xff\xfe", "not UTF-8"),
        ("gpuhunt-offers", b'{"offers": []}', "must be a list of offers"),
        ("prime-availability", b"[]", "must be a JSON object"),
        ("prime-availability", b'{"H100_80GB": "none"}', "is not a list of offers"),
    ],
)
def test_an_unreadable_document_fails_as_a_whole(feed_format, body, message):
    with pytest.raises(FeedError, match=message):
        parse(feed_format, body)


def test_a_record_that_is_not_an_object_is_refused_alone_with_its_place():
    parsed = parse("vast-offers", b'{"offers": [7, {"id": 1, "gpu_name": "RTX 4090", "num_gpus": 1,'
                                  b' "gpu_ram": 24564, "dph_total": "0.35"}]}')

    assert [r.provider_machine_id for r in parsed.records] == ["1"]
    assert [(r.machine_id, r.where, r.reason) for r in parsed.rejected] == [
        (None, "offers[0]", "an offer must be a JSON object, got int"),
    ]


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"num_gpus": 0}, "num_gpus must be between 1 and 16, got 0"),
        ({"num_gpus": 1.5}, "num_gpus must be a whole number, got 1.5"),
        ({"num_gpus": True}, "num_gpus must be a number, got True"),
        ({"num_gpus": None}, "num_gpus is missing"),
        ({"gpu_ram": 24}, "gpu_ram 24 MiB is below 1 GiB per GPU (a unit mix-up?)"),
        ({"dph_total": -0.4}, "dph_total must be above zero, got -0.4"),
        ({"dph_total": "NaN"}, "dph_total must be a finite number"),
        ({"dph_total": 0.00001}, "dph_total must be above zero, got 0.00001"),  # rounds to 0.0000 per GPU
        ({"reliability2": 1.2}, "reliability2 must be between 0 and 1, got 1.2"),
        ({"duration": 1800}, "duration 1800 s is under an hour"),
        ({"rentable": "yes"}, "rentable must be true or false, got 'yes'"),
        ({"gpu_name": ""}, "the GPU name is missing"),
        ({"gpu_name": "A100 SXM4", "gpu_ram": None}, "GPU memory is missing (gpu_ram)"),
    ],
)
def test_each_bad_vast_figure_is_refused_with_its_field(changes, reason):
    good = {"id": 1, "gpu_name": "RTX 4090", "num_gpus": 1, "gpu_ram": 24564, "dph_total": 0.35}
    body = json.dumps({"offers": [good | {"id": 2} | changes, good]}).encode()

    parsed = parse("vast-offers", body)

    assert [r.provider_machine_id for r in parsed.records] == ["1"]
    assert refused(parsed) == [("2", reason)]


def test_an_id_seen_twice_keeps_the_first_machine():
    offer = {"id": 1, "gpu_name": "RTX 4090", "num_gpus": 1, "gpu_ram": 24564, "dph_total": "0.35"}
    parsed = parse("vast-offers", json.dumps({"offers": [offer, offer | {"dph_total": "0.40"}]}).encode())

    assert [(r.provider_machine_id, r.price_per_gpu_hour) for r in parsed.records] == [("1", D("0.3500"))]
    assert refused(parsed) == [("1", "the id appears more than once in the feed")]
