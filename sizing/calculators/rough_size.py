"""The rule-of-thumb size (SPEC §8): parameters × bytes, flat shares for context and operation, and a
safety factor, in decimal GB (10^9 bytes), unlike the detailed GiB breakdown.

Decimal throughout, so that the published examples come out exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from ..errors import SizingError
from ..i18n import format_number, gettext
from ..limits import MAX_PARAMETERS
from ..units import exact_text

RULE_OF_THUMB_BYTES = {"FP32": Decimal(4), "FP16": Decimal(2), "INT8": Decimal(1), "INT4": Decimal("0.5")}
CONTEXT_OVERHEAD_SHARE = Decimal("0.15")
OPERATING_OVERHEAD_GB = Decimal(3)
SAFETY_FACTOR = Decimal("1.1")
GB = Decimal(10**9)


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
            "parameters": format_number(parameters), "bytes": exact_text(bytes_per_parameter),
            "precision": precision_key, "base": exact_text(base_gb),
        },
        gettext("Context overhead = %(base)s GB × %(share)s = %(overhead)s GB") % {
            "base": exact_text(base_gb), "share": exact_text(CONTEXT_OVERHEAD_SHARE),
            "overhead": exact_text(context_overhead_gb)
        },
        gettext("Operating overhead = %(overhead)s GB") % {"overhead": exact_text(OPERATING_OVERHEAD_GB)},
        gettext("Subtotal = %(base)s + %(context)s + %(operating)s = %(subtotal)s GB") % {
            "base": exact_text(base_gb), "context": exact_text(context_overhead_gb),
            "operating": exact_text(OPERATING_OVERHEAD_GB), "subtotal": exact_text(subtotal_gb),
        },
        gettext("Total = %(subtotal)s GB × %(factor)s safety = %(total)s GB") % {
            "subtotal": exact_text(subtotal_gb), "factor": exact_text(SAFETY_FACTOR),
            "total": exact_text(total_gb),
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
