"""GPUs for a throughput target (SPEC §8): usable per GPU = measured × efficiency; productive GPUs
cover the target, redundancy comes on top.

Decimal throughout, so that the published examples come out exactly (75,000 × 75 % is 56,250, not
56,249.999…).
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from ..errors import SizingError
from ..i18n import format_number, gettext
from ..limits import MAX_REDUNDANCY_GPUS
from ..units import exact_text
from .checks import check_decimal, efficiency_error


@dataclass(frozen=True)
class ThroughputPlan:
    target_tokens_per_s: Decimal
    measured_tokens_per_s_per_gpu: Decimal
    efficiency_percent: Decimal
    usable_per_gpu: Decimal  # tokens/s one GPU delivers at the given efficiency
    productive_gpus: int
    redundancy_gpus: int
    total_gpus: int
    steps: tuple[str, ...]
    caveats: tuple[str, ...]


def _checked(target_tokens_per_s: object, measured_tokens_per_s_per_gpu: object, efficiency_percent: object,
             redundancy_gpus: object) -> tuple[Decimal, Decimal, Decimal]:
    target = check_decimal(target_tokens_per_s, "target", gettext("The throughput target"))
    measured = check_decimal(
        measured_tokens_per_s_per_gpu, "measured", gettext("The measured throughput per GPU")
    )
    efficiency = check_decimal(efficiency_percent, "efficiency", gettext("The efficiency"))
    if target <= 0:
        raise SizingError("target", gettext("The throughput target must be more than 0 tokens/s."))
    if measured <= 0:
        raise SizingError(
            "measured", gettext("The measured throughput per GPU must be more than 0 tokens/s.")
        )
    if not 0 < efficiency <= 100:
        raise SizingError("efficiency", efficiency_error())
    if isinstance(redundancy_gpus, bool) or not isinstance(redundancy_gpus, int):
        raise SizingError("redundancy", gettext("The redundancy must be a whole number of GPUs."))
    if not 0 <= redundancy_gpus <= MAX_REDUNDANCY_GPUS:
        raise SizingError(
            "redundancy",
            gettext("The redundancy must be between 0 and %(maximum)s GPUs.")
            % {"maximum": format_number(MAX_REDUNDANCY_GPUS)},
        )
    return target, measured, efficiency


def _steps(target: Decimal, measured: Decimal, efficiency: Decimal, usable_per_gpu: Decimal,
           productive_gpus: int,
           redundancy_gpus: int) -> tuple[str, ...]:
    total_gpus = productive_gpus + redundancy_gpus
    return (
        gettext("Usable per GPU = %(measured)s tokens/s × %(efficiency)s %% = %(usable)s tokens/s") % {
            "measured": exact_text(measured), "efficiency": exact_text(efficiency),
            "usable": exact_text(usable_per_gpu),
        },
        gettext("Productive GPUs = ceil(%(target)s ÷ %(usable)s) = %(productive)s") % {
            "target": exact_text(target), "usable": exact_text(usable_per_gpu),
            "productive": format_number(productive_gpus)
        },
        gettext("Total GPUs = %(productive)s productive + %(redundancy)s redundancy = %(total)s") % {
            "productive": format_number(productive_gpus), "redundancy": format_number(redundancy_gpus),
            "total": format_number(total_gpus),
        },
    )


def gpus_for_throughput(
    target_tokens_per_s: object,
    measured_tokens_per_s_per_gpu: object,
    efficiency_percent: object,
    redundancy_gpus: int,
) -> ThroughputPlan:
    target, measured, efficiency = _checked(
        target_tokens_per_s, measured_tokens_per_s_per_gpu, efficiency_percent, redundancy_gpus
    )
    usable_per_gpu = measured * efficiency / 100
    productive_gpus = int((target / usable_per_gpu).to_integral_value(rounding=ROUND_CEILING))
    caveats = (
        gettext(
            "This counts GPUs for throughput only: it does not check that the model fits in each GPU's "
            "memory, "
            "how the model is split over GPUs (parallelism), or the latency of a single request."
        ),
        gettext(
            "The result is only as good as the measured tokens/s: measure with your model, precision, "
            "context "
            "and batch size."
        ),
    )
    return ThroughputPlan(
        target_tokens_per_s=target,
        measured_tokens_per_s_per_gpu=measured,
        efficiency_percent=efficiency,
        usable_per_gpu=usable_per_gpu,
        productive_gpus=productive_gpus,
        redundancy_gpus=redundancy_gpus,
        total_gpus=productive_gpus + redundancy_gpus,
        steps=_steps(target, measured, efficiency, usable_per_gpu, productive_gpus, redundancy_gpus),
        caveats=caveats,
    )
