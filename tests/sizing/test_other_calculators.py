"""GPUs for a throughput target and the rule-of-thumb size (SPEC §8)."""
import math
from decimal import Decimal

import pytest

from sizing.calculators import gpus_for_throughput, rule_of_thumb
from sizing.errors import SizingError


def test_180000_tokens_per_s_at_75000_per_gpu_and_75_percent_needs_4_plus_1_gpus():
    plan = gpus_for_throughput(180_000, 75_000, 75, 1)

    assert plan.usable_per_gpu == Decimal(56_250)
    assert plan.productive_gpus == 4
    assert plan.redundancy_gpus == 1
    assert plan.total_gpus == 5
    assert plan.steps == (
        "Usable per GPU = 75,000 tokens/s × 75 % = 56,250 tokens/s",
        "Productive GPUs = ceil(180,000 ÷ 56,250) = 4",
        "Total GPUs = 4 productive + 1 redundancy = 5",
    )


def test_throughput_plan_says_what_it_does_not_derive():
    text = " ".join(gpus_for_throughput(180_000, 75_000, 75, 1).caveats)
    assert "memory" in text and "parallelism" in text and "latency" in text


def test_exact_multiples_need_no_extra_gpu_despite_float_inputs():
    # in floats 3 ÷ 0.3 is 10.000000000000002, which would round up to 11 GPUs
    plan = gpus_for_throughput(3, 0.3, 100, 0)
    assert plan.productive_gpus == 10


@pytest.mark.parametrize("efficiency", [0, -5, 100.01, math.nan, math.inf])
def test_efficiency_outside_0_to_100_is_refused(efficiency):
    with pytest.raises(SizingError) as error:
        gpus_for_throughput(180_000, 75_000, efficiency, 1)
    assert error.value.field == "efficiency"


@pytest.mark.parametrize(
    ("target", "measured", "redundancy", "field"),
    [(0, 75_000, 1, "target"), (180_000, 0, 1, "measured"), (180_000, 75_000, -1, "redundancy"),
     (180_000, 75_000, 1.5, "redundancy"), ("lots", 75_000, 1, "target")],
)
def test_other_throughput_inputs_name_their_field(target, measured, redundancy, field):
    with pytest.raises(SizingError) as error:
        gpus_for_throughput(target, measured, 75, redundancy)
    assert error.value.field == field


def test_100_percent_efficiency_is_allowed():
    assert gpus_for_throughput(150_000, 75_000, 100, 0).total_gpus == 2


def test_7b_fp16_rule_of_thumb_is_21_01_gb():
    estimate = rule_of_thumb(7_000_000_000, "FP16")

    assert estimate.base_gb == Decimal(14)
    assert estimate.context_overhead_gb == Decimal("2.1")
    assert estimate.operating_overhead_gb == Decimal(3)
    assert estimate.subtotal_gb == Decimal("19.1")
    assert estimate.total_gb == Decimal("21.01")
    assert estimate.steps[-1] == "Total = 19.1 GB × 1.1 safety = 21.01 GB"
    assert "10^9" in estimate.note


@pytest.mark.parametrize(
    ("precision", "base_gb"),
    [("FP32", "28"), ("FP16", "14"), ("INT8", "7"), ("INT4", "3.5"), ("int4", "3.5")],
)
def test_rule_of_thumb_bytes_per_parameter(precision, base_gb):
    assert rule_of_thumb(7_000_000_000, precision).base_gb == Decimal(base_gb)


@pytest.mark.parametrize("precision", ["FP8", "16", "", None])
def test_rule_of_thumb_refuses_unknown_precision(precision):
    with pytest.raises(SizingError) as error:
        rule_of_thumb(7_000_000_000, precision)
    assert error.value.field == "precision"


@pytest.mark.parametrize("parameters", [0, -7, 7e9, True])
def test_rule_of_thumb_refuses_bad_parameter_counts(parameters):
    with pytest.raises(SizingError) as error:
        rule_of_thumb(parameters, "FP16")
    assert error.value.field == "parameters"
