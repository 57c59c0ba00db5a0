"""The matching engine: which machines a workload fits on, cheapest first, and how sure we are.

Inputs are plain values: a `Breakdown` (the memory a workload needs), `MachineOffer`s and the user's
`Preferences`. The caller (the catalog) passes machines that are available now, heard from recently,
inside the chosen countries and with a known GPU memory, and says how many it left out for each of
those reasons; the engine checks those rules again and never offers a machine that breaks them.

Fit (SPEC §4)
    One GPU when its memory holds the whole need. Otherwise, when the breakdown may be split by
    tensor parallelism (`splittable_over_heads`), the fewest GPUs n (2 ≤ n ≤ free GPUs) whose count
    divides the attention heads and where each GPU holds its share plus its own runtime. Nothing else.

Preferences
    A machine that fits but is the wrong tier, costs more per hour than the price limit, or whose
    hourly price the budget does not cover for one hour is an *alternative*, never a recommendation.

Order
    Cheapest hourly price (GPUs used × price per GPU-hour) first; ties broken by price per GPU-hour,
    then provider name, provider's machine id and our id. The key is total, so the order never
    depends on the order the machines came in.

Tight margin
    The headroom left on the fullest GPU is under TIGHT_HEADROOM_FRACTION (10 %) of that GPU's memory.

Confidence (see `confidence`)
    Start at high. Each of these is a reason for *medium*: quantized weights (8-bit or 4-bit); the
    model split over several GPUs; GPU memory reported by the host, or taken from the manufacturer's
    datasheet rather than the datacenter; a tight margin. Each of these is a reason for *low*: the
    host's memory figure is flagged as doubtful; image generation or fine-tuning (their memory depends
    on settings the calculation cannot see); two or more reasons for medium together. The level is
    the lowest any reason gives; every reason is shown. A notebook's need is the figure the user
    entered, so precision does not apply; speech recognition follows the language-model rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal
from operator import itemgetter
from typing import NamedTuple

from .breakdown import Breakdown
from .countries import EU_CODE, EU_MEMBERS, country_name
from .offers import MachineOffer, MeasuredSpeed, Preferences
from .units import GIB, MIB

TIGHT_HEADROOM_FRACTION = 0.10
ALTERNATIVES_SHOWN = 20
DEFAULT_STALE_AFTER_MINUTES = 15

HIGH, MEDIUM, LOW = "high", "medium", "low"

# Why a machine was not recommended, in the order they are shown. The first four are also the
# reasons the catalog uses when it leaves machines out before they reach the engine.
OFFLINE = "offline or out of stock"
STALE = "not heard from recently"
OUTSIDE_COUNTRIES = "outside the chosen countries"
MEMORY_UNKNOWN = "memory unknown"
TOO_SMALL = "too small"
OTHER_TIER = "other tier"
OVER_PRICE = "over the price limit"
BUDGET_UNDER_HOUR = "budget covers under an hour"
EXCLUDED_REASONS: tuple[str, ...] = (
    OFFLINE,
    STALE,
    OUTSIDE_COUNTRIES,
    MEMORY_UNKNOWN,
    TOO_SMALL,
    OTHER_TIER,
    OVER_PRICE,
    BUDGET_UNDER_HOUR,
)

# Codes of the preferences an alternative breaks; an alternative is counted under its first one.
BREAK_TIER, BREAK_MAX_PRICE, BREAK_BUDGET = "tier", "max_price", "budget"
_BREAK_REASON = {BREAK_TIER: OTHER_TIER, BREAK_MAX_PRICE: OVER_PRICE, BREAK_BUDGET: BUDGET_UNDER_HOUR}

MEMORY_SOURCE_WORDS = {
    "datacenter": "datacenter figure",
    "datasheet": "manufacturer datasheet",
    "host": "reported by the host, not checked by Node Lodge",
    "unknown": "source not recorded",
}
TIER_WORDS = {"secure": "Secure", "community": "Community", "both": "Secure and Community"}
WORKLOAD_WORDS = {
    "inference": "Run a language model",
    "finetune": "Fine-tune a language model (LoRA / QLoRA)",
    "image": "Generate images",
    "speech": "Run a speech-recognition model",
    "notebook": "Open a notebook",
}

_CENT = Decimal("0.01")
_ONE_HOUR = Decimal(1)


# ---------------------------------------------------------------------------------------------------
# Values


@dataclass(frozen=True)
class Fit:
    """How a workload sits on one machine. Byte figures are per GPU; every GPU used carries the same
    share, so the fullest GPU is any of them."""

    gpus_used: int
    need_per_gpu_bytes: int
    memory_per_gpu_bytes: int
    headroom_bytes: int
    headroom_fraction: float
    why_gpus: str

    @property
    def tight(self) -> bool:
        return self.headroom_fraction < TIGHT_HEADROOM_FRACTION


@dataclass(frozen=True)
class BudgetCover:
    hours: Decimal | None  # two places, rounded down; None on a machine that costs nothing
    days: Decimal | None
    capped_by_booking_limit: bool
    booking_limit_hours: int | None
    text: str


@dataclass(frozen=True)
class RecommendedMachine:
    """A machine that fits. `breaks` is empty for a recommendation and names the preferences an
    alternative breaks (codes "tier", "max_price", "budget"; `breaks_text` in words, same order)."""

    offer: MachineOffer
    fit: Fit
    hourly_price: Decimal
    budget_covers: BudgetCover | None
    why_it_fits: tuple[str, ...]
    limits: tuple[str, ...]
    confidence: str
    confidence_reasons: tuple[str, ...]
    measured_speed: tuple[MeasuredSpeed, ...]
    breaks: tuple[str, ...] = ()
    breaks_text: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        offer, fit = self.offer, self.fit
        cover = self.budget_covers
        data = {
            "id": offer.id,
            "provider": offer.provider,
            "tier": offer.tier,
            "provider_machine_id": offer.provider_machine_id,
            "gpu_type": offer.gpu_type,
            "gpu_count": offer.gpu_count,
            "free_gpus": offer.free_gpus,
            "gpus_used": fit.gpus_used,
            "memory_per_gpu_gib": _gib_number(fit.memory_per_gpu_bytes),
            "need_per_gpu_gib": _gib_number(fit.need_per_gpu_bytes),
            "headroom_gib": _gib_number(fit.headroom_bytes),
            "headroom_percent": round(fit.headroom_fraction * 100, 1),
            "tight_margin": fit.tight,
            "why_gpus": fit.why_gpus,
            "memory_source": offer.memory_source,
            "memory_flag": offer.memory_flag,
            "country": offer.country,
            "country_name": country_name(offer.country) if offer.country else None,
            "region": offer.region,
            "price_per_gpu_hour": _money_str(offer.price_per_gpu_hour),
            "price_per_hour": _money_str(self.hourly_price),
            "budget_hours": float(cover.hours) if cover and cover.hours is not None else None,
            "budget_days": float(cover.days) if cover and cover.days is not None else None,
            "budget_text": cover.text if cover else None,
            "budget_capped_by_booking_limit": cover.capped_by_booking_limit if cover else False,
            "booking_limit_hours": offer.booking_limit_hours,
            "interruptible": offer.interruptible,
            "confidence": self.confidence,
            "confidence_reasons": list(self.confidence_reasons),
            "why_it_fits": list(self.why_it_fits),
            "limits": list(self.limits),
            "measured_speeds": [
                {
                    "model": speed.model_slug,
                    "precision": speed.precision,
                    "value": speed.value,
                    "unit": speed.unit,
                    "measured_at": speed.measured_at.isoformat(),
                }
                for speed in self.measured_speed
            ],
            "last_seen": offer.last_seen.isoformat() if offer.last_seen else None,
        }
        if self.breaks:
            data["breaks"] = list(self.breaks)
            data["breaks_text"] = list(self.breaks_text)
        return data


@dataclass(frozen=True)
class PrecisionAlternative:
    precision: int
    total_gib: float
    machines_fitting: int  # machines that fit at this precision and meet every preference
    more_machines: int  # machines_fitting minus the machines recommended at the chosen precision
    cheapest_hourly_price: Decimal | None
    cheapest_offer_id: int | None

    @property
    def text(self) -> str:
        words = f"{self.precision}-bit needs {self.total_gib:,.2f} GiB"
        if self.more_machines > 0:
            words += f" and opens {_plural(self.more_machines, 'more machine')}"
        if self.cheapest_hourly_price is not None:
            words += f"; the cheapest costs {_money(self.cheapest_hourly_price)}/h"
        return words

    def to_dict(self) -> dict:
        return {
            "precision": self.precision,
            "total_gib": round(self.total_gib, 2),
            "machines_fitting": self.machines_fitting,
            "more_machines": self.more_machines,
            "cheapest_price_per_hour": (
                _money_str(self.cheapest_hourly_price) if self.cheapest_hourly_price is not None else None
            ),
            "cheapest_machine_id": self.cheapest_offer_id,
            "text": self.text,
        }


@dataclass(frozen=True)
class Recommendation:
    breakdown: Breakdown
    machines: tuple[RecommendedMachine, ...]  # the first `machines_shown`, cheapest first
    alternatives: tuple[RecommendedMachine, ...]  # the first ALTERNATIVES_SHOWN, same order as machines
    alternatives_total: int
    precision_alternatives: tuple[PrecisionAlternative, ...]
    constraints: tuple[tuple[str, str], ...]
    # reason -> machines not recommended for it, in EXCLUDED_REASONS order. Every machine passed in (and every
    # one the catalog left out before) is counted once: here or in `machines`. Alternatives count under the
    # first preference they break ("other tier", "over the price limit", "budget covers under an hour").
    excluded: dict[str, int] = field(default_factory=dict)
    empty_reason: str | None = None
    machines_total: int = 0  # every machine that fits and meets every preference

    def to_dict(self) -> dict:
        return {
            "memory": self.breakdown.as_dict(),
            "machines": [machine.to_dict() for machine in self.machines],
            "alternatives": [machine.to_dict() for machine in self.alternatives],
            "machines_total": self.machines_total,
            "alternatives_total": self.alternatives_total,
            "precision_alternatives": [alt.to_dict() for alt in self.precision_alternatives],
            "constraints": [{"label": label, "value": value} for label, value in self.constraints],
            "excluded": dict(self.excluded),
            "empty_reason": self.empty_reason,
        }


# ---------------------------------------------------------------------------------------------------
# Fit


class _FitPlanner:
    """Fits one breakdown against many machines. Need per GPU count is computed once per call, and
    fits are shared by machines with the same memory and free-GPU count, so a large fleet costs
    one dictionary lookup per machine once the few distinct shapes are known."""

    def __init__(self, breakdown: Breakdown):
        self.breakdown = breakdown
        self.heads = breakdown.splittable_over_heads
        self._need_by_gpus: dict[int, int] = {1: breakdown.bytes_per_gpu(1)}
        self._fits: dict[tuple[int, int], Fit | None] = {}

    def need(self, gpus: int) -> int:
        need = self._need_by_gpus.get(gpus)
        if need is None:
            need = self._need_by_gpus[gpus] = self.breakdown.bytes_per_gpu(gpus)
        return need

    def fit(self, memory_per_gpu_mib: int, free_gpus: int) -> Fit | None:
        key = (memory_per_gpu_mib, free_gpus)
        if key not in self._fits:
            self._fits[key] = self._compute(memory_per_gpu_mib * MIB, free_gpus)
        return self._fits[key]

    def _compute(self, memory: int, free_gpus: int) -> Fit | None:
        if free_gpus < 1:
            return None
        if self.need(1) <= memory:
            return _make_fit(1, self.need(1), memory, "one GPU holds it")
        if not self.heads:
            return None
        too_small: list[int] = [1]
        not_dividing: list[int] = []
        for gpus in range(2, free_gpus + 1):
            if self.heads % gpus:
                not_dividing.append(gpus)
                continue
            if self.need(gpus) <= memory:
                return _make_fit(
                    gpus, self.need(gpus), memory, self._why_split(gpus, memory, too_small, not_dividing)
                )
            too_small.append(gpus)
        return None

    def _why_split(self, gpus: int, memory: int, too_small: list[int], not_dividing: list[int]) -> str:
        parts = [
            f"split over {gpus} GPUs by tensor parallelism: {self.heads} attention heads divide by {gpus}"
        ]
        needs = [
            f"one GPU would need {_gib(self.need(1))}"
            if n == 1
            else f"{n} GPUs would need {_gib(self.need(n))} each"
            for n in too_small
        ]
        parts.append(", ".join(needs) + f", more than {_gib(memory)}")
        if len(not_dividing) == 1:
            parts.append(
                f"{not_dividing[0]} GPUs skipped: {self.heads} heads not divisible by {not_dividing[0]}"
            )
        elif not_dividing:
            parts.append(
                f"{_join_words([str(n) for n in not_dividing])} GPUs skipped: "
                f"{self.heads} heads divide by none of them"
            )
        return "; ".join(parts)


def _make_fit(gpus: int, need: int, memory: int, why: str) -> Fit:
    headroom = memory - need
    return Fit(
        gpus_used=gpus,
        need_per_gpu_bytes=need,
        memory_per_gpu_bytes=memory,
        headroom_bytes=headroom,
        headroom_fraction=headroom / memory if memory else 0.0,
        why_gpus=why,
    )


def fit_on_machine(breakdown: Breakdown, offer: MachineOffer) -> Fit | None:
    """How `breakdown` fits on `offer`, or None when it does not (or the machine's memory is unknown:
    the caller counts that as "memory unknown", not as too small)."""
    if offer.memory_per_gpu_mib is None:
        return None
    return _FitPlanner(breakdown).fit(offer.memory_per_gpu_mib, offer.free_gpus)


# ---------------------------------------------------------------------------------------------------
# Confidence


def confidence(breakdown: Breakdown, offer: MachineOffer, fit: Fit) -> tuple[str, list[str]]:
    """The confidence level and every reason behind it (rule in the module docstring)."""
    medium: list[str] = []
    low: list[str] = []
    workload = breakdown.workload
    settings_bound = {workload, breakdown.confidence_hint}
    if "image" in settings_bound:
        low.append(
            "image generation: memory grows with resolution, batch size and pipeline settings; "
            "the margin covers one image at the model's native resolution"
        )
    if "finetune" in settings_bound:
        low.append(
            "fine-tuning: memory depends on the training script's settings (sequence packing, "
            "checkpointing, optimizer), which the calculation can only assume"
        )
    if workload != "notebook" and breakdown.precision in (8, 4):
        medium.append(
            f"{breakdown.precision}-bit weights: quantized, so the real footprint depends on "
            "the quantization format"
        )
    if fit.gpus_used > 1:
        medium.append(
            f"split over {fit.gpus_used} GPUs: tensor parallelism adds communication buffers "
            "the calculation does not count"
        )
    source = offer.memory_source
    if source == "host":
        medium.append("memory reported by the host, not checked by Node Lodge")
    elif source == "datasheet":
        medium.append("memory from the manufacturer's datasheet, not measured at the datacenter")
    elif source != "datacenter":
        medium.append("the source of the memory figure is not recorded")
    if fit.tight:
        medium.append(
            f"tight margin: {_percent(fit.headroom_fraction)} of the GPU's memory stays free "
            f"(tight means under {_percent(TIGHT_HEADROOM_FRACTION)})"
        )
    if offer.memory_flag:
        low.append(f"the host's memory figure is in doubt: {offer.memory_flag}")
    if len(medium) >= 2:
        low.append(f"{len(medium)} reasons for medium together make it low")

    if low:
        return LOW, low + medium
    if medium:
        return MEDIUM, medium
    if workload == "notebook":
        return HIGH, ["the need is the figure you entered; datacenter memory figure, one GPU, ample headroom"]
    bits = f"{breakdown.precision}-bit weights, " if breakdown.precision else ""
    return HIGH, [f"{bits}datacenter memory figure, one GPU, ample headroom"]


# ---------------------------------------------------------------------------------------------------
# Recommendation


class _Candidate(NamedTuple):
    sort_key: tuple
    offer: MachineOffer
    fit: Fit
    hourly_price: Decimal
    breaks: tuple[str, ...]


def _sort_key(offer: MachineOffer, hourly_price: Decimal) -> tuple:
    return (hourly_price, offer.price_per_gpu_hour, offer.provider, offer.provider_machine_id, offer.id)


def _preference_breaks(
    offer: MachineOffer, hourly_price: Decimal, preferences: Preferences
) -> tuple[str, ...]:
    tier_breaks = preferences.tier != "both" and offer.tier != preferences.tier
    price_breaks = (
        preferences.max_price_per_hour is not None and hourly_price > preferences.max_price_per_hour
    )
    budget_breaks = preferences.budget is not None and hourly_price > 0 and preferences.budget < hourly_price
    if not (tier_breaks or price_breaks or budget_breaks):
        return ()
    return tuple(
        code
        for code, broken in (
            (BREAK_TIER, tier_breaks),
            (BREAK_MAX_PRICE, price_breaks),
            (BREAK_BUDGET, budget_breaks),
        )
        if broken
    )


def _screen(offer: MachineOffer, preferences: Preferences, stale_before: datetime | None) -> str | None:
    """The reason a machine must not be considered at all, or None. Repeats the catalog's rules."""
    if offer.country is None or (
        preferences.countries is not None and offer.country not in preferences.countries
    ):
        return OUTSIDE_COUNTRIES
    if offer.free_gpus < 1:
        return OFFLINE
    if stale_before is not None and (offer.last_seen is None or offer.last_seen < stale_before):
        return STALE
    if offer.memory_per_gpu_mib is None or offer.memory_per_gpu_mib <= 0:
        return MEMORY_UNKNOWN
    return None


def _classify(
    planner: _FitPlanner,
    offers: Iterable[MachineOffer],
    preferences: Preferences,
    excluded: dict[str, int],
) -> tuple[list[_Candidate], list[_Candidate]]:
    """Single pass: fitting machines meeting every preference, and fitting machines breaking some.
    Offers handed in here have passed `_screen`. Too-small machines are counted into `excluded`."""
    fitting: list[_Candidate] = []
    breaking: list[_Candidate] = []
    for offer in offers:
        fit = planner.fit(offer.memory_per_gpu_mib, offer.free_gpus)
        if fit is None:
            excluded[TOO_SMALL] += 1
            continue
        hourly_price = offer.price_per_gpu_hour * fit.gpus_used
        breaks = _preference_breaks(offer, hourly_price, preferences)
        candidate = _Candidate(_sort_key(offer, hourly_price), offer, fit, hourly_price, breaks)
        if breaks:
            breaking.append(candidate)
            excluded[_BREAK_REASON[breaks[0]]] += 1
        else:
            fitting.append(candidate)
    fitting.sort(key=_by_sort_key)
    breaking.sort(key=_by_sort_key)
    return fitting, breaking


_by_sort_key = itemgetter(0)


def _count_meeting_all(
    planner: _FitPlanner, offers: Iterable[MachineOffer], preferences: Preferences
) -> tuple[int, _Candidate | None]:
    """How many offers fit and meet every preference, and the cheapest of them; builds no lists."""
    count = 0
    cheapest: _Candidate | None = None
    for offer in offers:
        fit = planner.fit(offer.memory_per_gpu_mib, offer.free_gpus)
        if fit is None:
            continue
        hourly_price = offer.price_per_gpu_hour * fit.gpus_used
        if _preference_breaks(offer, hourly_price, preferences):
            continue
        count += 1
        key = _sort_key(offer, hourly_price)
        if cheapest is None or key < cheapest.sort_key:
            cheapest = _Candidate(key, offer, fit, hourly_price, ())
    return count, cheapest


class _Describer:
    """Words for one recommendation call. Many machines share the same shape, so the words are cached
    by the few fields they depend on."""

    def __init__(self, breakdown: Breakdown, preferences: Preferences):
        self.breakdown = breakdown
        self.preferences = preferences
        self.model_slug = breakdown.inputs.get("model")
        self._cache: dict[tuple, object] = {}

    def _cached(self, key: tuple, build):
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def machine(self, candidate: _Candidate) -> RecommendedMachine:
        offer, fit = candidate.offer, candidate.fit
        level, reasons = self._cached(
            ("confidence", offer.memory_source, offer.memory_flag, fit),
            lambda: confidence(self.breakdown, offer, fit),
        )
        return RecommendedMachine(
            offer=offer,
            fit=fit,
            hourly_price=candidate.hourly_price,
            budget_covers=self._cached(
                ("budget", candidate.hourly_price, offer.booking_limit_hours),
                lambda: budget_cover(
                    self.preferences.budget, candidate.hourly_price, offer.booking_limit_hours
                ),
            ),
            why_it_fits=self._cached(
                ("why", offer.memory_source, offer.free_gpus, fit), lambda: _why_it_fits(offer, fit)
            ),
            limits=self._cached(
                (
                    "limits",
                    offer.memory_source,
                    offer.memory_flag,
                    offer.tier,
                    offer.interruptible,
                    offer.booking_limit_hours,
                    fit,
                ),
                lambda: _limits(offer, fit),
            ),
            confidence=level,
            confidence_reasons=tuple(reasons),
            measured_speed=self._speeds(offer),
            breaks=candidate.breaks,
            breaks_text=tuple(
                self._break_words(code, offer, candidate.hourly_price) for code in candidate.breaks
            ),
        )

    def _speeds(self, offer: MachineOffer) -> tuple[MeasuredSpeed, ...]:
        if not offer.measured_speeds or self.model_slug is None:
            return ()
        matching = [
            speed
            for speed in offer.measured_speeds
            if speed.model_slug == self.model_slug and speed.precision == self.breakdown.precision
        ]
        return tuple(sorted(matching, key=lambda speed: (speed.unit, speed.measured_at, speed.value)))

    def _break_words(self, code: str, offer: MachineOffer, hourly_price: Decimal) -> str:
        preferences = self.preferences
        if code == BREAK_TIER:
            return f"{TIER_WORDS[offer.tier]} tier; you chose {TIER_WORDS[preferences.tier]}"
        if code == BREAK_MAX_PRICE:
            limit = preferences.max_price_per_hour
            return f"over your price limit: {_money(hourly_price)}/h > {_money(limit)}/h"
        return (
            f"budget covers under an hour: {_money(preferences.budget)} at "
            f"{_money(hourly_price)}/h lasts {_minutes(preferences.budget, hourly_price)} minutes"
        )


def _why_it_fits(offer: MachineOffer, fit: Fit) -> tuple[str, ...]:
    source_words = MEMORY_SOURCE_WORDS.get(offer.memory_source, offer.memory_source)
    return (
        f"{_gib(fit.memory_per_gpu_bytes)} of memory per GPU ({source_words})",
        f"uses {fit.gpus_used} of {offer.free_gpus} free GPUs: {fit.why_gpus}",
        f"needs {_gib(fit.need_per_gpu_bytes)} per GPU, leaving {_gib(fit.headroom_bytes)} "
        f"({_percent(fit.headroom_fraction)}) headroom on each",
    )


def _limits(offer: MachineOffer, fit: Fit) -> tuple[str, ...]:
    limits = []
    if offer.memory_source == "host":
        limits.append("GPU memory is what the host's machine reports; Node Lodge has not checked it")
    if offer.memory_flag:
        limits.append(offer.memory_flag)
    if fit.tight:
        limits.append(
            f"tight margin: {_gib(fit.headroom_bytes)} ({_percent(fit.headroom_fraction)}) left on the "
            f"fullest GPU; a margin is tight when less than {_percent(TIGHT_HEADROOM_FRACTION)} of the "
            "GPU's memory stays free. Servers that reserve a fixed share of the GPU up front (vLLM) "
            "or training scripts that keep extra copies may not fit"
        )
    if offer.booking_limit_hours is not None:
        limits.append(f"booking limit: a single booking ends after {offer.booking_limit_hours} h")
    if offer.interruptible:
        limits.append("can be interrupted: save checkpoints")
    if offer.tier == "community":
        limits.append("runs on the host's own hardware; the host can read the session's memory")
    return tuple(limits)


def budget_cover(
    budget: Decimal | None, hourly_price: Decimal, booking_limit_hours: int | None
) -> BudgetCover | None:
    """How long `budget` lasts at `hourly_price`; None when no budget was given."""
    if budget is None:
        return None
    if hourly_price <= 0:
        return BudgetCover(
            None,
            None,
            False,
            booking_limit_hours,
            f"this machine costs nothing per hour; {_money(budget)} is not spent",
        )
    exact_hours = budget / hourly_price
    hours = exact_hours.quantize(_CENT, rounding=ROUND_DOWN)
    days = (exact_hours / 24).quantize(_CENT, rounding=ROUND_DOWN)
    if exact_hours < _ONE_HOUR:
        text = f"{_money(budget)} covers {_minutes(budget, hourly_price)} minutes at {_money(hourly_price)}/h"
    elif exact_hours < 24:
        text = f"{_money(budget)} covers {_one_place(exact_hours)} hours at {_money(hourly_price)}/h"
    else:
        text = (
            f"{_money(budget)} covers {_one_place(exact_hours)} hours ({_one_place(exact_hours / 24)} days) "
            f"at {_money(hourly_price)}/h"
        )
    capped = booking_limit_hours is not None and exact_hours > booking_limit_hours
    if capped:
        text += f"; the booking limit of {booking_limit_hours} h cuts a single booking shorter"
    return BudgetCover(hours, days, capped, booking_limit_hours, text)


def fit_thresholds(breakdown: Breakdown, max_gpus: int = 16) -> tuple[tuple[int, int], ...]:
    """(GPUs, MiB per GPU) pairs, fewest GPUs first, that decide fit without the engine.

    A machine with m MiB per GPU and f free GPUs fits on the first pair (n, t) with m >= t, using n
    GPUs, when f >= n; when f < n it does not fit at all. Why: need per GPU falls as the GPU count
    grows, so the first pair whose memory the machine reaches is the fewest GPUs it could use, and
    every later pair asks for even more free GPUs. Counts that never lower the need are left out.
    The catalog turns these pairs into SQL (memory bands, a CASE expression); `_FitPlanner` is the
    reference, and tests check the two agree.
    """
    pairs: list[tuple[int, int]] = []
    for gpus in range(1, max_gpus + 1):
        if not breakdown.can_split_over(gpus):
            continue
        need_mib = -(-breakdown.bytes_per_gpu(gpus) // MIB)  # ceiling: memory is whole MiB
        if not pairs or need_mib < pairs[-1][1]:
            pairs.append((gpus, need_mib))
    return tuple(pairs)


def gpus_used_by_thresholds(
    thresholds: Sequence[tuple[int, int]], memory_per_gpu_mib: int, free_gpus: int
) -> int | None:
    """What the SQL built from `fit_thresholds` computes for one machine (None: it does not fit)."""
    for gpus, need_mib in thresholds:
        if memory_per_gpu_mib >= need_mib:
            return gpus if free_gpus >= gpus else None
    return None


@dataclass(frozen=True)
class PrecisionCount:
    """Machines that fit at a lower precision and meet every preference."""

    machines_fitting: int


@dataclass(frozen=True)
class CountedFleet:
    """A fleet the catalog has counted for one query, so the engine need not see every machine.

    `offers` must hold at least the first `machines_shown` machines that fit and meet every
    preference, the first ALTERNATIVES_SHOWN alternatives (both in the engine's order) and the
    cheapest machine meeting every preference at each lower precision; more is harmless. Every
    count covers the machines that pass the screen (available, fresh, located, memory known, a free
    GPU): `considered` of them. Preference codes are BREAK_TIER, BREAK_MAX_PRICE and BREAK_BUDGET.
    """

    offers: tuple[MachineOffer, ...]
    considered: int
    largest_memory_mib: int | None
    too_small: int
    fitting: int  # fit and meet every preference
    breaking_first: Mapping[str, int]  # code of the first preference broken -> machines
    breaking_only: Mapping[str, int]  # code -> machines breaking that preference and no other
    breaking_only_cheapest: Mapping[str, Decimal]  # code -> cheapest hourly price among those
    breaking_only_at_cheapest: Mapping[str, int]  # code -> how many of those cost that price
    lower_precisions: Mapping[int, PrecisionCount] = field(default_factory=dict)


@dataclass(frozen=True)
class _Tally:
    """The figures the empty reason and the precision options need, however they were counted."""

    considered: int
    largest_memory_mib: int | None
    breaking: int
    only: Mapping[str, int]
    only_cheapest: Mapping[str, Decimal]
    only_at_cheapest: Mapping[str, int]


def _excluded_start(excluded_before: Mapping[str, int] | None) -> dict[str, int]:
    excluded: dict[str, int] = dict.fromkeys(EXCLUDED_REASONS, 0)
    for reason, count in sorted((excluded_before or {}).items()):
        excluded[reason] = excluded.get(reason, 0) + int(count)
    return excluded


def recommend(
    breakdown: Breakdown,
    offers: Sequence[MachineOffer],
    preferences: Preferences,
    *,
    lower_precision_breakdowns: Mapping[int, Breakdown] | None = None,
    excluded_before: Mapping[str, int] | None = None,
    now: datetime | None = None,
    stale_after_minutes: int = DEFAULT_STALE_AFTER_MINUTES,
    machines_shown: int | None = None,
) -> Recommendation:
    """Machines the workload fits on and that meet every preference, cheapest first, plus
    alternatives, lower-precision options and the constraints applied.

    `excluded_before` carries the counts the catalog already left out, by reason (see EXCLUDED_REASONS).
    With `now`, machines last heard from more than `stale_after_minutes` ago are left out here too.
    """
    excluded = _excluded_start(excluded_before)
    stale_before = now - timedelta(minutes=stale_after_minutes) if now is not None else None
    considered: list[MachineOffer] = []
    for offer in offers:
        reason = _screen(offer, preferences, stale_before)
        if reason is None:
            considered.append(offer)
        else:
            excluded[reason] += 1

    planner = _FitPlanner(breakdown)
    fitting, breaking = _classify(planner, considered, preferences, excluded)
    only = {code: [c for c in breaking if c.breaks == (code,)] for code in _BREAK_REASON}
    tally = _Tally(
        considered=len(considered),
        largest_memory_mib=max((offer.memory_per_gpu_mib for offer in considered), default=None),
        breaking=len(breaking),
        only={code: len(found) for code, found in only.items()},
        only_cheapest={code: found[0].hourly_price for code, found in only.items() if found},
        only_at_cheapest={
            code: sum(1 for c in found if c.hourly_price <= found[0].hourly_price)
            for code, found in only.items()
            if found
        },
    )
    lower_counts: dict[int, tuple[int, _Candidate | None]] = {}
    if breakdown.precision is not None:
        for precision, lower in (lower_precision_breakdowns or {}).items():
            if precision < breakdown.precision:
                lower_counts[precision] = _count_meeting_all(_FitPlanner(lower), considered, preferences)
    return _assemble(
        breakdown, preferences, planner, fitting, breaking, len(fitting), tally, lower_counts,
        lower_precision_breakdowns or {}, excluded, stale_after_minutes, machines_shown,
    )


def recommend_counted(
    breakdown: Breakdown,
    counted: CountedFleet,
    preferences: Preferences,
    *,
    lower_precision_breakdowns: Mapping[int, Breakdown] | None = None,
    excluded_before: Mapping[str, int] | None = None,
    stale_after_minutes: int = DEFAULT_STALE_AFTER_MINUTES,
    machines_shown: int | None = None,
) -> Recommendation:
    """The same answer as `recommend` over every machine, from counts the catalog made in the
    database plus the few machines the answer describes (see `CountedFleet`)."""
    excluded = _excluded_start(excluded_before)
    excluded[TOO_SMALL] += counted.too_small
    for code, count in counted.breaking_first.items():
        excluded[_BREAK_REASON[code]] += count
    planner = _FitPlanner(breakdown)
    fitting, breaking = _classify(planner, counted.offers, preferences, dict.fromkeys(EXCLUDED_REASONS, 0))
    tally = _Tally(
        considered=counted.considered,
        largest_memory_mib=counted.largest_memory_mib,
        breaking=sum(counted.breaking_first.values()),
        only=dict(counted.breaking_only),
        only_cheapest=dict(counted.breaking_only_cheapest),
        only_at_cheapest=dict(counted.breaking_only_at_cheapest),
    )
    lower_counts: dict[int, tuple[int, _Candidate | None]] = {}
    if breakdown.precision is not None:
        for precision, lower in (lower_precision_breakdowns or {}).items():
            if precision < breakdown.precision:
                count = counted.lower_precisions.get(precision, PrecisionCount(0)).machines_fitting
                _, cheapest = _count_meeting_all(_FitPlanner(lower), counted.offers, preferences)
                lower_counts[precision] = (count, cheapest if count else None)
    return _assemble(
        breakdown, preferences, planner, fitting, breaking, counted.fitting, tally, lower_counts,
        lower_precision_breakdowns or {}, excluded, stale_after_minutes, machines_shown,
    )


def _assemble(
    breakdown: Breakdown,
    preferences: Preferences,
    planner: _FitPlanner,
    fitting: list[_Candidate],
    breaking: list[_Candidate],
    fitting_total: int,
    tally: _Tally,
    lower_counts: Mapping[int, tuple[int, _Candidate | None]],
    lower_precision_breakdowns: Mapping[int, Breakdown],
    excluded: dict[str, int],
    stale_after_minutes: int,
    machines_shown: int | None,
) -> Recommendation:
    describer = _Describer(breakdown, preferences)
    # Only the machines shown are described (their words are the costly part); all are counted.
    shown = fitting if machines_shown is None else fitting[:machines_shown]
    machines = tuple(describer.machine(candidate) for candidate in shown)
    alternatives = tuple(describer.machine(candidate) for candidate in breaking[:ALTERNATIVES_SHOWN])

    precision_alternatives = _precision_alternatives(
        breakdown, lower_precision_breakdowns, lower_counts, fitting_total, fitting[0] if fitting else None
    )
    empty_reason = None
    if not machines:
        empty_reason = _empty_reason(tally, planner, precision_alternatives, preferences, excluded)

    ordered_excluded = {reason: excluded[reason] for reason in EXCLUDED_REASONS}
    for reason in sorted(set(excluded) - set(EXCLUDED_REASONS)):
        ordered_excluded[reason] = excluded[reason]

    return Recommendation(
        breakdown=breakdown,
        machines=machines,
        alternatives=alternatives,
        alternatives_total=tally.breaking,
        machines_total=fitting_total,
        precision_alternatives=precision_alternatives,
        constraints=constraints_applied(breakdown, preferences, ordered_excluded, stale_after_minutes),
        excluded=ordered_excluded,
        empty_reason=empty_reason,
    )


def _precision_alternatives(
    breakdown: Breakdown,
    lower_precision_breakdowns: Mapping[int, Breakdown],
    lower_counts: Mapping[int, tuple[int, _Candidate | None]],
    current_count: int,
    current_first: _Candidate | None,
) -> tuple[PrecisionAlternative, ...]:
    if breakdown.precision is None:
        return ()
    current_cheapest = current_first.hourly_price if current_first else None
    found = []
    for precision in sorted(lower_counts, reverse=True):
        lower = lower_precision_breakdowns[precision]
        count, cheapest = lower_counts[precision]
        opens_more = count > current_count
        cheaper = cheapest is not None and (
            current_cheapest is None or cheapest.hourly_price < current_cheapest
        )
        if opens_more or cheaper:
            found.append(
                PrecisionAlternative(
                    precision=precision,
                    total_gib=lower.total_gib,
                    machines_fitting=count,
                    more_machines=count - current_count,
                    cheapest_hourly_price=cheapest.hourly_price if cheapest else None,
                    cheapest_offer_id=cheapest.offer.id if cheapest else None,
                )
            )
    return tuple(found)


def _empty_reason(
    tally: _Tally,
    planner: _FitPlanner,
    precision_alternatives: tuple[PrecisionAlternative, ...],
    preferences: Preferences,
    excluded: dict[str, int],
) -> str:
    """Which constraint to relax, and how many machines relaxing it adds."""
    hints: list[str] = []
    if not tally.considered:
        where = "in the chosen countries " if preferences.countries is not None else ""
        opening = f"No machine is available {where}right now"
        if excluded.get(OUTSIDE_COUNTRIES):
            opening += (
                f"; {_plural(excluded[OUTSIDE_COUNTRIES], 'available machine')} elsewhere "
                "(or of unknown location) were not considered"
            )
    elif not tally.breaking:
        largest = (tally.largest_memory_mib or 0) * MIB
        opening = (
            f"No machine has enough memory: the largest holds {_gib(largest)} per GPU, "
            f"the workload needs {_gib(planner.need(1))} on one GPU"
        )
        if planner.heads:
            opening += " (splitting over the free GPUs of one machine does not help either)"
    else:
        only = {code: tally.only.get(code, 0) for code in _BREAK_REASON}
        single_kind = next((code for code, found in only.items() if found == tally.breaking), None)
        opening = {
            BREAK_MAX_PRICE: "No machine fits under your price limit",
            BREAK_TIER: "No machine of the chosen tier fits",
            BREAK_BUDGET: "Your budget covers under an hour on every machine that fits",
        }.get(single_kind, "No machine fits and meets every preference")
        if only[BREAK_MAX_PRICE]:
            raise_to = tally.only_cheapest[BREAK_MAX_PRICE]
            adds = tally.only_at_cheapest[BREAK_MAX_PRICE]
            it = "it" if single_kind == BREAK_MAX_PRICE else "the price limit"
            hints.append(f"raising {it} to {_money(raise_to)}/h adds {_plural(adds, 'machine')}")
        if only[BREAK_TIER]:
            hints.append(f"choosing both tiers adds {_plural(only[BREAK_TIER], 'machine')}")
        if only[BREAK_BUDGET]:
            raise_to = tally.only_cheapest[BREAK_BUDGET]
            adds = tally.only_at_cheapest[BREAK_BUDGET]
            it = "it" if single_kind == BREAK_BUDGET else "the budget"
            hints.append(
                f"raising {it} to {_money(raise_to)} (one hour on the cheapest) "
                f"adds {_plural(adds, 'machine')}"
            )
        if not hints:
            hints.append(
                f"{_plural(tally.breaking, 'machine')} fit but break more than one preference: "
                "see the alternatives"
            )
    for alternative in precision_alternatives:
        if alternative.machines_fitting:
            hints.append(
                f"{alternative.precision}-bit opens {_plural(alternative.machines_fitting, 'machine')}"
            )
    return "; ".join([opening, *hints]) + "."


def constraints_applied(
    breakdown: Breakdown, preferences: Preferences, excluded: Mapping[str, int], stale_after_minutes: int
) -> tuple[tuple[str, str], ...]:
    """Everything the answer took into account, as (label, value) pairs in words."""
    inputs = breakdown.inputs
    workload = breakdown.workload
    pairs: list[tuple[str, str]] = [("Workload", WORKLOAD_WORDS.get(workload, workload))]
    model = _first(inputs, "model_name", "model")
    if model is not None and workload != "notebook":
        pairs.append(("Model", str(model)))
    if breakdown.precision is not None and workload != "notebook":
        pairs.append(("Precision", f"{breakdown.precision}-bit"))
    context = _first(inputs, "context", "context_tokens", "sequence_length")
    requests = _first(
        inputs, "requests", "concurrent_requests", "batch_size", "batch", "streams", "audio_streams"
    )
    if workload == "inference":
        if context is not None:
            pairs.append(("Context per request", f"{_count(context)} tokens"))
        if requests is not None:
            pairs.append(("Concurrent requests", _count(requests)))
    elif workload == "finetune":
        if context is not None:
            pairs.append(("Sequence length", f"{_count(context)} tokens"))
        if requests is not None:
            pairs.append(("Batch size", _count(requests)))
    elif workload == "speech":
        pairs.append(("Context", "the model's 30-second audio window (fixed)"))
        if requests is not None:
            pairs.append(("Concurrent audio streams", _count(requests)))
    elif workload == "notebook":
        pairs.append(("GPU memory needed", f"{_gib(breakdown.total_bytes)}, as entered"))
    pairs.append(("Budget", _money(preferences.budget) if preferences.budget is not None else "none"))
    pairs.append(
        (
            "Maximum price per hour",
            f"{_money(preferences.max_price_per_hour)}/h"
            if preferences.max_price_per_hour is not None
            else "none",
        )
    )
    pairs.append(("Tier", TIER_WORDS.get(preferences.tier, preferences.tier)))
    pairs.append(("Countries", _countries_words(preferences)))
    pairs.append(
        (
            "Availability",
            f"Community machines online, Secure machines in stock, heard from within "
            f"{stale_after_minutes} minutes",
        )
    )
    left_out = [f"{count} {reason}" for reason, count in excluded.items() if count]
    pairs.append(("Not recommended", ", ".join(left_out) if left_out else "none"))
    return tuple(pairs)


def _countries_words(preferences: Preferences) -> str:
    if preferences.countries is None:
        return "anywhere (machines of unknown location are still left out)"
    typed = preferences.countries_input or tuple(sorted(preferences.countries))
    parts = []
    for code in typed:
        if code == EU_CODE:
            parts.append(f"EU = {len(EU_MEMBERS)} member states: {', '.join(sorted(EU_MEMBERS))}")
        else:
            parts.append(f"{code} ({country_name(code)})")
    return "; ".join(parts) + "; machines of unknown location count as outside"


# ---------------------------------------------------------------------------------------------------
# Formatting (rounded only here, for display)


def _gib(n_bytes: int) -> str:
    return f"{n_bytes / GIB:,.2f} GiB"


def _gib_number(n_bytes: int) -> float:
    return round(n_bytes / GIB, 2)


def _percent(fraction: float) -> str:
    words = f"{fraction * 100:.1f}"
    return f"{words.removesuffix('.0')} %"


def _money(amount: Decimal) -> str:
    return f"${amount.quantize(_CENT, rounding=ROUND_HALF_UP):,.2f}"


def _money_str(amount: Decimal) -> str:
    return str(amount.quantize(_CENT, rounding=ROUND_HALF_UP))


def _one_place(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.1'), rounding=ROUND_HALF_UP):,}"


def _minutes(budget: Decimal, hourly_price: Decimal) -> int:
    return int((budget * 60 / hourly_price).to_integral_value(rounding=ROUND_DOWN))


def _count(value) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _join_words(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _first(mapping: Mapping, *keys: str):
    for key in keys:
        value = mapping.get(key)
        if value is not None:
            return value
    return None
