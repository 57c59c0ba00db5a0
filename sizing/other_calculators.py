"""The two simpler calculators of SPEC §8: GPUs for a throughput target, and the rule-of-thumb size.

Both use Decimal so that the published examples come out exactly (75,000 × 75 % is 56,250, not
56,249.999…), and the rule of thumb counts decimal GB (10^9 bytes), unlike the detailed GiB breakdown.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, InvalidOperation

from .errors import SizingError
from .i18n import format_number, gettext

MAX_REDUNDANCY_GPUS = 10_000


def efficiency_error() -> str:
    return gettext("The efficiency must be more than 0 %% and at most 100 %%.") % {}


def _decimal(value, field: str, subject: str) -> Decimal:
    """`subject` names the input as a sentence starts with it ("The efficiency"), translated."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise SizingError(field, gettext("%(subject)s must be a number.") % {"subject": subject})
    try:
        # str() of a float is its shortest repr, so 0.75 becomes exactly 0.75.
        number = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        raise SizingError(field, gettext("%(subject)s must be a number.") % {"subject": subject}) from None
    if not number.is_finite():
        raise SizingError(field, gettext("%(subject)s must be a finite number.") % {"subject": subject})
    return number


def _plain(number: Decimal) -> str:
    """A Decimal with thousands separators and no trailing zeros (56,250, 2.1, 21.01)."""
    normalized = number.normalize()
    if normalized == normalized.to_integral_value():
        return format_number(int(normalized))
    return format_number(normalized)


# --- GPU count for a throughput target -------------------------------------------------------------------

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


def gpus_for_throughput(
    target_tokens_per_s,
    measured_tokens_per_s_per_gpu,
    efficiency_percent,
    redundancy_gpus: int,
) -> ThroughputPlan:
    target = _decimal(target_tokens_per_s, "target", gettext("The throughput target"))
    measured = _decimal(measured_tokens_per_s_per_gpu, "measured", gettext("The measured throughput per GPU"))
    efficiency = _decimal(efficiency_percent, "efficiency", gettext("The efficiency"))
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

    usable_per_gpu = measured * efficiency / 100
    productive_gpus = int((target / usable_per_gpu).to_integral_value(rounding=ROUND_CEILING))
    total_gpus = productive_gpus + redundancy_gpus
    steps = (
        gettext("Usable per GPU = %(measured)s tokens/s × %(efficiency)s %% = %(usable)s tokens/s") % {
            "measured": _plain(measured), "efficiency": _plain(efficiency), "usable": _plain(usable_per_gpu)
        },
        gettext("Productive GPUs = ceil(%(target)s ÷ %(usable)s) = %(productive)s") % {
            "target": _plain(target), "usable": _plain(usable_per_gpu),
            "productive": format_number(productive_gpus)
        },
        gettext("Total GPUs = %(productive)s productive + %(redundancy)s redundancy = %(total)s") % {
            "productive": format_number(productive_gpus), "redundancy": format_number(redundancy_gpus),
            "total": format_number(total_gpus),
        },
    )
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
        total_gpus=total_gpus,
        steps=steps,
        caveats=caveats,
    )


# --- rule-of-thumb estimate ------------------------------------------------------------------------------

RULE_OF_THUMB_BYTES = {"FP32": Decimal(4), "FP16": Decimal(2), "INT8": Decimal(1), "INT4": Decimal("0.5")}
CONTEXT_OVERHEAD_SHARE = Decimal("0.15")
OPERATING_OVERHEAD_GB = Decimal(3)
SAFETY_FACTOR = Decimal("1.1")
GB = Decimal(10**9)
MAX_PARAMETERS = 10**15


@dataclass(frozen=True)
class RuleOfThumb:
    parameters: int
    precision: str
    base_gb: Decimal
    context_overhead_gb: Decimal
    operating_overhead_gb: Decimal
    subtotal_gb: Decimal
    total_gb: Decimal
    steps: tuple[str, ...]
    note: str


def rule_of_thumb(parameters: int, precision: str) -> RuleOfThumb:
    if isinstance(parameters, bool) or not isinstance(parameters, int):
        raise SizingError("parameters", gettext("The parameter count must be a whole number."))
    if not 1 <= parameters <= MAX_PARAMETERS:
        raise SizingError(
            "parameters",
            gettext("The parameter count must be between 1 and %(maximum)s.") % {
                "maximum": format_number(MAX_PARAMETERS)
            },
        )
    precision_key = precision.strip().upper() if isinstance(precision, str) else None
    if precision_key not in RULE_OF_THUMB_BYTES:
        raise SizingError(
            "precision", gettext("Precision must be one of %(choices)s.") % {
                "choices": ", ".join(RULE_OF_THUMB_BYTES)
            }
        )

    bytes_per_parameter = RULE_OF_THUMB_BYTES[precision_key]
    base_gb = Decimal(parameters) * bytes_per_parameter / GB
    context_overhead_gb = base_gb * CONTEXT_OVERHEAD_SHARE
    subtotal_gb = base_gb + context_overhead_gb + OPERATING_OVERHEAD_GB
    total_gb = subtotal_gb * SAFETY_FACTOR
    steps = (
        gettext("Base = %(parameters)s parameters × %(bytes)s bytes (%(precision)s) = %(base)s GB") % {
            "parameters": format_number(parameters), "bytes": _plain(bytes_per_parameter),
            "precision": precision_key, "base": _plain(base_gb),
        },
        gettext("Context overhead = %(base)s GB × %(share)s = %(overhead)s GB") % {
            "base": _plain(base_gb), "share": _plain(CONTEXT_OVERHEAD_SHARE),
            "overhead": _plain(context_overhead_gb)
        },
        gettext("Operating overhead = %(overhead)s GB") % {"overhead": _plain(OPERATING_OVERHEAD_GB)},
        gettext("Subtotal = %(base)s + %(context)s + %(operating)s = %(subtotal)s GB") % {
            "base": _plain(base_gb), "context": _plain(context_overhead_gb),
            "operating": _plain(OPERATING_OVERHEAD_GB), "subtotal": _plain(subtotal_gb),
        },
        gettext("Total = %(subtotal)s GB × %(factor)s safety = %(total)s GB") % {
            "subtotal": _plain(subtotal_gb), "factor": _plain(SAFETY_FACTOR), "total": _plain(total_gb)
        },
    )
    note = gettext(
        "A rough rule of thumb in decimal GB (10^9 bytes), while the detailed calculation counts GiB "
        "(2^30 bytes, about 7 % more per unit). Its overheads are flat shares, not the model's own KV cache "
        "for your context and requests, so the two results can differ widely."
    )
    return RuleOfThumb(
        parameters=parameters,
        precision=precision_key,
        base_gb=base_gb,
        context_overhead_gb=context_overhead_gb,
        operating_overhead_gb=OPERATING_OVERHEAD_GB,
        subtotal_gb=subtotal_gb,
        total_gb=total_gb,
        steps=steps,
        note=note,
    )
