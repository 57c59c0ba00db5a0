"""A throughput plan's parts: the machines that may serve (candidates), the copies each gives, the
plan they add up to, and the checks of its inputs. The search is in `search`, its words in `steps`."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import cached_property

from ..calculators.checks import efficiency_error
from ..errors import SizingError
from ..i18n import format_number, gettext
from ..limits import MAX_REDUNDANCY, MAX_TARGET_TOKENS_PER_S, PRICE_UNITS
from .steps import plan_steps

DEFAULT_EFFICIENCY_PERCENT = Decimal("75")
DEFAULT_REDUNDANCY = 1


@dataclass(frozen=True)
class PlanCandidate:
    """One machine that fits the model and carries a speed measured on it for that model and precision."""

    machine_id: int
    # the machines' own order (price per GPU-hour, provider, machine id, id): ties
    order_key: tuple[object, ...]
    price_per_gpu_hour: Decimal
    free_gpus: int
    gpus_per_copy: int  # GPUs one model copy needs on this machine (the fit)
    measured_tokens_per_s: Decimal  # as measured
    measured_gpus: int  # GPUs the measurement ran on
    label: str = ""  # how the formula names the machine (e.g. its provider's machine id)

    @property
    def name(self) -> str:
        return self.label or gettext("machine %(id)s") % {"id": self.machine_id}

    @cached_property  # read many times by the search and the ranking of GPU types; worked out once
    def tokens_per_s_per_gpu(self) -> Fraction:
        return Fraction(self.measured_tokens_per_s) / self.measured_gpus

    @property
    def copies_free(self) -> int:
        return self.free_gpus // self.gpus_per_copy if self.gpus_per_copy > 0 else 0


@dataclass(frozen=True)
class PlanPart:
    """The copies one machine contributes."""

    candidate: PlanCandidate
    productive_copies: int
    spare_copies: int

    @property
    def copies(self) -> int:
        return self.productive_copies + self.spare_copies

    @property
    def gpus(self) -> int:
        return self.copies * self.candidate.gpus_per_copy

    @property
    def price_per_hour(self) -> Decimal:
        return self.candidate.price_per_gpu_hour * self.gpus


@dataclass(frozen=True)
class Plan:
    target_tokens_per_s: Decimal
    efficiency_percent: Decimal
    redundancy: int
    parts: tuple[PlanPart, ...]  # machines in their own order
    price_per_hour: Decimal
    gpus: int
    productive_gpus: int
    spare_gpus: int
    usable_tokens_per_s: Fraction  # productive copies only
    steps: tuple[str, ...]
    # False when the search ran out of its budget first: the plan is the cheapest it found, and no
    # plan costs less than `price_floor_per_hour` (the fractional cover's price, a proven bound).
    proven_cheapest: bool = True
    price_floor_per_hour: Decimal | None = None


def validated(target: object, efficiency_percent: object,
              redundancy: object) -> tuple[Fraction, Fraction, int]:
    if (
        not isinstance(target, Decimal | int)
        or isinstance(target, bool)
        or not 0 < target <= MAX_TARGET_TOKENS_PER_S
    ):
        raise SizingError(
            "target",
            gettext("The throughput target must be above 0 and at most %(maximum)s tokens/s.")
            % {"maximum": format_number(MAX_TARGET_TOKENS_PER_S)},
        )
    if not isinstance(efficiency_percent, Decimal | int) or not 0 < efficiency_percent <= 100:
        raise SizingError("efficiency", efficiency_error())
    if (
        isinstance(redundancy, bool)
        or not isinstance(redundancy, int)
        or not 0 <= redundancy <= MAX_REDUNDANCY
    ):
        raise SizingError(
            "redundancy",
            gettext("The redundancy must be a whole number of copies from 0 to %(maximum)s.")
            % {"maximum": MAX_REDUNDANCY},
        )
    return Fraction(target), Fraction(efficiency_percent), redundancy


def copy_speed(candidate: PlanCandidate, efficiency: Fraction) -> Fraction:
    """Usable tokens/s of one model copy on this machine: GPUs × measured per GPU × efficiency."""
    return candidate.gpus_per_copy * candidate.tokens_per_s_per_gpu * efficiency / 100


def copy_price_units(candidate: PlanCandidate) -> int:
    return int(candidate.price_per_gpu_hour * PRICE_UNITS) * candidate.gpus_per_copy


def assembled_plan(
    candidates: Sequence[PlanCandidate], chosen: dict[int, list[int]], target: Fraction, efficiency: Fraction,
    redundancy: int,
) -> Plan:
    parts = tuple(
        PlanPart(candidates[index], productive, spare)
        for index, (productive, spare) in sorted(chosen.items())
    )
    usable = sum((copy_speed(p.candidate, efficiency) * p.productive_copies for p in parts), Fraction(0))
    productive_gpus = sum(p.productive_copies * p.candidate.gpus_per_copy for p in parts)
    spare_gpus = sum(p.spare_copies * p.candidate.gpus_per_copy for p in parts)
    price = sum((p.price_per_hour for p in parts), Decimal(0))
    return Plan(
        target_tokens_per_s=Decimal(target.numerator) / Decimal(target.denominator),
        efficiency_percent=Decimal(efficiency.numerator) / Decimal(efficiency.denominator),
        redundancy=redundancy,
        parts=parts,
        price_per_hour=price,
        gpus=productive_gpus + spare_gpus,
        productive_gpus=productive_gpus,
        spare_gpus=spare_gpus,
        usable_tokens_per_s=usable,
        steps=plan_steps(parts, target, efficiency, usable, productive_gpus, spare_gpus),
    )
