"""The confidence rule, row by row (rule stated in sizing/matching.py)."""

import pytest

from sizing.confidence import HIGH, LOW, MEDIUM, confidence
from sizing.fit import Fit
from sizing.units import GIB
from tests.factories import fixed_need, offer

AMPLE = 0.40
TIGHT = 0.05

# workload, precision, memory source, gpus used, headroom fraction, memory flag
#   -> level, reasons (fragments, in order)
ROWS = [
    (
        "inference",
        16,
        "datacenter",
        1,
        AMPLE,
        None,
        HIGH,
        ["16-bit weights, datacenter memory figure, one GPU, ample headroom"],
    ),
    ("inference", 8, "datacenter", 1, AMPLE, None, MEDIUM, ["8-bit weights: quantized"]),
    ("inference", 4, "datacenter", 1, AMPLE, None, MEDIUM, ["4-bit weights: quantized"]),
    ("inference", 16, "datacenter", 2, AMPLE, None, MEDIUM, ["split over 2 GPUs"]),
    (
        "inference",
        16,
        "host",
        1,
        AMPLE,
        None,
        MEDIUM,
        ["memory reported by the host, not checked by Node Lodge"],
    ),
    (
        "inference",
        16,
        "datasheet",
        1,
        AMPLE,
        None,
        MEDIUM,
        ["memory from the manufacturer's datasheet, not measured at the datacenter"],
    ),
    (
        "inference",
        16,
        "datacenter",
        1,
        TIGHT,
        None,
        MEDIUM,
        ["tight margin: 5 % of the GPU's memory stays free"],
    ),
    (
        "inference",
        16,
        "host",
        1,
        AMPLE,
        "reports 80 GiB on a 24 GB card",
        LOW,
        [
            "the host's memory figure is in doubt: reports 80 GiB on a 24 GB card",
            "memory reported by the host",
        ],
    ),
    (
        "inference",
        4,
        "datacenter",
        2,
        AMPLE,
        None,
        LOW,
        ["2 reasons for medium together make it low", "4-bit weights", "split over 2 GPUs"],
    ),
    (
        "inference",
        8,
        "host",
        4,
        TIGHT,
        None,
        LOW,
        [
            "4 reasons for medium together make it low",
            "8-bit weights",
            "split over 4 GPUs",
            "reported by the host",
            "tight margin",
        ],
    ),
    ("image", 16, "datacenter", 1, AMPLE, None, LOW, ["image generation"]),
    ("finetune", 16, "datacenter", 1, AMPLE, None, LOW, ["fine-tuning"]),
    (
        "finetune",
        4,
        "host",
        1,
        AMPLE,
        None,
        LOW,
        ["fine-tuning", "2 reasons for medium together make it low", "4-bit weights", "reported by the host"],
    ),
    ("notebook", None, "datacenter", 1, AMPLE, None, HIGH, ["the need is the figure you entered"]),
    ("notebook", None, "host", 1, AMPLE, None, MEDIUM, ["reported by the host"]),
    (
        "speech",
        16,
        "datacenter",
        1,
        AMPLE,
        None,
        HIGH,
        ["16-bit weights, datacenter memory figure, one GPU, ample headroom"],
    ),
    (
        "speech",
        8,
        "datasheet",
        1,
        AMPLE,
        None,
        LOW,
        ["2 reasons for medium together make it low", "8-bit weights", "manufacturer's datasheet"],
    ),
]


def _fit(gpus: int, headroom_fraction: float) -> Fit:
    memory = 80 * GIB
    headroom = int(memory * headroom_fraction)
    return Fit(gpus, memory - headroom, memory, headroom, headroom / memory, "test")


@pytest.mark.parametrize(
    ("workload", "precision", "source", "gpus", "headroom", "flag", "level", "reasons"),
    ROWS,
    ids=[f"{row[0]}-{row[1]}-{row[2]}-{row[3]}gpu-{row[4]}-{'flag' if row[5] else 'noflag'}" for row in ROWS],
)
def test_confidence_rule(workload, precision, source, gpus, headroom, flag, level, reasons):
    breakdown = fixed_need(10, workload=workload, precision=precision, heads=8 if gpus > 1 else None)
    machine = offer(
        memory_source=source, memory_flag=flag, tier="community" if source == "host" else "secure"
    )

    got_level, got_reasons = confidence(breakdown, machine, _fit(gpus, headroom))

    assert got_level == level
    assert len(got_reasons) == len(reasons)
    for got, fragment in zip(got_reasons, reasons, strict=True):
        assert fragment in got


def test_image_generation_is_low_even_on_the_best_machine():
    level, _ = confidence(fixed_need(10, workload="image", precision=16), offer(), _fit(1, AMPLE))
    assert level == LOW


def test_an_unrecorded_memory_source_is_never_high():
    level, reasons = confidence(
        fixed_need(10, workload="inference", precision=16), offer(memory_source="unknown"), _fit(1, AMPLE)
    )
    assert level == MEDIUM
    assert reasons == ["the source of the memory figure is not recorded"]
