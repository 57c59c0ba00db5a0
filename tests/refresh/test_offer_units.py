"""The unit conversions the marketplaces' formats share, and GPU names found through aliases: exact
Decimal arithmetic, one rounding rule, a clear refusal for each bad figure. No database."""
from decimal import Decimal

import pytest

from catalog.gpu_names import gpu_name_key
from nodelodge.refresh.feeds import units
from nodelodge.refresh.feeds.base import GpuTypeIndex, GpuTypeRef, RecordRejected
from tests.feeds import shipped_gpu_types


@pytest.mark.parametrize(
    ("amount", "unit", "mib"),
    [
        (Decimal("24564"), "MiB", 24564),  # Vast's gpu_ram, nvidia-smi's figure, kept as it is
        (Decimal("80"), "GiB", 81920),  # RunPod's memoryInGb, gpuhunt's and Prime's GB
        (Decimal("23.99"), "GiB", 24566),  # 24565.76 MiB, to the nearest MiB
        (Decimal("16384.5"), "MiB", 16384),  # half to even
    ],
)
def test_memory_becomes_whole_mib_per_gpu(amount, unit, mib):
    assert units.memory_mib(amount, "memory", unit) == mib


@pytest.mark.parametrize(
    ("total", "gpus", "per_gpu"),
    [
        (Decimal("19.9467"), 8, Decimal("2.4933")),  # 2.4933375
        (Decimal("32.7726"), 8, Decimal("4.0966")),  # 4.096575
        (Decimal("1.0001"), 2, Decimal("0.5000")),  # 0.50005: half to even, as every price the console keeps
        (Decimal("1.0003"), 2, Decimal("0.5002")),  # 0.50015
        (units.dollars_from_cents(Decimal("2392")), 8, Decimal("2.9900")),
    ],
)
def test_a_price_for_several_gpus_is_divided_exactly_then_kept_to_four_places(total, gpus, per_gpu):
    assert units.price_per_gpu_hour(total, gpus, "price") == per_gpu


def test_numbers_are_read_through_their_text_so_floats_bring_no_binary_surprise():
    assert units.number(0.1, "x") + units.number(0.2, "x") == Decimal("0.3")
    assert units.number("8.0", "x") == 8
    assert units.whole("8.0", "count") == 8
    with pytest.raises(RecordRejected, match="count must be a whole number, got 0.5"):
        units.whole("0.5", "count")
    with pytest.raises(RecordRejected, match="x 'eight' is not a number"):
        units.number("eight", "x")
    with pytest.raises(RecordRejected, match="x must be a finite number"):
        units.number(float("inf"), "x")


def test_seconds_become_whole_hours_rounded_down():
    assert units.whole_hours(Decimal("2592000"), "duration") == 720  # 30 days
    assert units.whole_hours(Decimal("7199"), "duration") == 1
    assert units.whole_hours(None, "duration") is None


@pytest.mark.parametrize(("word", "in_stock"), [("High", True), ("MEDIUM", True), (" low ", True),
                                                 ("Available", True), ("Unavailable", False), (None, False)])
def test_stock_words(word, in_stock):
    stock, available = units.stock(word, "stockStatus")
    assert available is in_stock
    assert stock == ("none" if word is None else word.strip().lower())


def test_an_unknown_stock_word_is_refused():
    with pytest.raises(RecordRejected, match="stockStatus 'Plenty' is not a stock word"):
        units.stock("Plenty", "stockStatus")


def test_an_interruptible_price_of_zero_or_none_is_not_offered():
    assert units.optional_price_per_gpu_hour(Decimal("0"), 2, "min_bid") is None
    assert units.optional_price_per_gpu_hour(None, 2, "min_bid") is None
    assert units.optional_price_per_gpu_hour(Decimal("0.5"), 2, "min_bid") == Decimal("0.2500")


@pytest.mark.parametrize(
    "spelling", ["NVIDIA GeForce RTX 4090", "nvidia geforce rtx 4090", "NVIDIA_GeForce_RTX_4090", "  RTX 4090 "]
)
def test_gpu_names_are_found_whatever_their_case_and_separators(spelling):
    assert shipped_gpu_types().resolve([spelling], 24564).name == "RTX 4090"


def test_the_marketplaces_names_of_the_issue_are_shipped():
    index = shipped_gpu_types()
    named = {
        "RTX 4090": "RTX 4090", "NVIDIA GeForce RTX 4090": "RTX 4090", "H100 80GB HBM3": "H100 SXM 80GB",
        "H100_SXM5": "H100 SXM 80GB", "A100-SXM4-80GB": "A100 80GB", "NVIDIA A100 80GB PCIe": "A100 80GB",
        "Tesla V100-SXM2-16GB": "V100 16GB", "L40S": "L40S", "RTX A6000": "RTX A6000", "MI300X": "MI300X",
    }
    assert {name: index.resolve([name], None).name for name in named} == named


def test_an_alias_of_several_types_takes_the_nearest_memory_and_needs_one():
    index = GpuTypeIndex(
        [GpuTypeRef(1, "A100 40GB", 40960), GpuTypeRef(2, "A100 80GB", 81920)], {},
        {gpu_name_key("A100"): [2, 1]},
    )

    assert index.resolve(["A100"], 40960).name == "A100 40GB"
    assert index.resolve(["A100"], 79000).name == "A100 80GB"
    assert index.find("A100") is None  # the nodelodge-v1 feed names one type
    with pytest.raises(RecordRejected, match="GPU name 'A100' may be A100 40GB or A100 80GB; the record gives no"):
        index.resolve(["A100"], None)


def test_a_catalog_name_wins_over_an_alias_and_the_first_known_name_is_taken():
    index = GpuTypeIndex(
        [GpuTypeRef(1, "L40S", 46068), GpuTypeRef(2, "L40", 46068)], {}, {gpu_name_key("L40S"): [2]}
    )

    assert index.resolve(["L40S"], None).name == "L40S"
    assert index.resolve(["nothing", "L40"], None).name == "L40"
    with pytest.raises(RecordRejected, match=r"unknown GPU name 'X1' / 'X2' \(no GPU type or alias has it\)"):
        index.resolve(["X1", "X2"], None)
