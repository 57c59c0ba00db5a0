"""The engine's words: why a machine fits, its limits, what a budget covers, why an answer is
empty, and the constraints applied. Figures are rounded here, for display, by `sizing.units`."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

from .breakdown import Breakdown
from .countries import EU_CODE, EU_MEMBERS, country_name
from .fit import TIGHT_HEADROOM_FRACTION, Fit
from .offers import MachineOffer, Preferences
from .reasons import BREAK_BUDGET, BREAK_MAX_PRICE, BREAK_REASON, BREAK_TIER, OUTSIDE_COUNTRIES
from .units import MIB, fmt_gib, money_text
from .workloads import WORKLOAD_WORDS

if TYPE_CHECKING:
    from .fit import FitPlanner
    from .results import PrecisionAlternative

MEMORY_SOURCE_WORDS = {
    "datacenter": "datacenter figure",
    "datasheet": "manufacturer datasheet",
    "host": "reported by the host, not checked by Node Lodge",
    "unknown": "source not recorded",
}
# The same sources in a table cell.
MEMORY_SOURCE_SHORT = {
    "datacenter": "datacenter",
    "datasheet": "datasheet",
    "host": "host-reported",
    "unknown": "source not recorded",
}
TIER_WORDS = {"secure": "Secure", "community": "Community", "both": "Secure and Community"}

_CENT = Decimal("0.01")
_ONE_HOUR = Decimal(1)


def percent(fraction: float) -> str:
    words = f"{Decimal(str(fraction * 100)).quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)}"
    return f"{words.removesuffix('.0')} %"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def one_place(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.1'), rounding=ROUND_HALF_UP):,}"


def minutes(budget: Decimal, hourly_price: Decimal) -> int:
    return int((budget * 60 / hourly_price).to_integral_value(rounding=ROUND_DOWN))


def count_words(value) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def first_of(mapping: Mapping, *keys: str):
    for key in keys:
        value = mapping.get(key)
        if value is not None:
            return value
    return None


# --- one machine ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetCover:
    hours: Decimal | None  # two places, rounded down; None on a machine that costs nothing
    days: Decimal | None
    capped_by_booking_limit: bool
    booking_limit_hours: int | None
    text: str


def budget_cover(
    budget: Decimal | None, hourly_price: Decimal, booking_limit_hours: int | None
) -> BudgetCover | None:
    """How long `budget` lasts at `hourly_price` (exact, as priced); None when no budget was given."""
    if budget is None:
        return None
    if hourly_price <= 0:
        return BudgetCover(
            None, None, False, booking_limit_hours,
            f"this machine costs nothing per hour; {money_text(budget)} is not spent",
        )
    exact_hours = budget / hourly_price
    hours = exact_hours.quantize(_CENT, rounding=ROUND_DOWN)
    days = (exact_hours / 24).quantize(_CENT, rounding=ROUND_DOWN)
    at = f"at {money_text(hourly_price)}/h"
    if exact_hours < _ONE_HOUR:
        text = f"{money_text(budget)} covers {minutes(budget, hourly_price)} minutes {at}"
    elif exact_hours < 24:
        text = f"{money_text(budget)} covers {one_place(exact_hours)} hours {at}"
    else:
        text = (
            f"{money_text(budget)} covers {one_place(exact_hours)} hours "
            f"({one_place(exact_hours / 24)} days) {at}"
        )
    capped = booking_limit_hours is not None and exact_hours > booking_limit_hours
    if capped:
        text += f"; the booking limit of {booking_limit_hours} h cuts a single booking shorter"
    return BudgetCover(hours, days, capped, booking_limit_hours, text)


def why_it_fits(offer: MachineOffer, fit: Fit) -> tuple[str, ...]:
    source_words = MEMORY_SOURCE_WORDS.get(offer.memory_source, offer.memory_source)
    return (
        f"{fmt_gib(fit.memory_per_gpu_bytes)} of memory per GPU ({source_words})",
        f"uses {fit.gpus_used} of {offer.free_gpus} free GPUs: {fit.why_gpus}",
        f"needs {fmt_gib(fit.need_per_gpu_bytes)} per GPU, leaving {fmt_gib(fit.headroom_bytes)} "
        f"({percent(fit.headroom_fraction)}) headroom on each",
    )


def limits(offer: MachineOffer, fit: Fit) -> tuple[str, ...]:
    found = []
    if offer.memory_source == "host":
        found.append("GPU memory is what the host's machine reports; Node Lodge has not checked it")
    if offer.memory_flag:
        found.append(offer.memory_flag)
    if fit.tight:
        found.append(
            f"tight margin: {fmt_gib(fit.headroom_bytes)} ({percent(fit.headroom_fraction)}) left on the "
            f"fullest GPU; a margin is tight when less than {percent(TIGHT_HEADROOM_FRACTION)} of the "
            "GPU's memory stays free. Servers that reserve a fixed share of the GPU up front (vLLM) "
            "or training scripts that keep extra copies may not fit"
        )
    if offer.booking_limit_hours is not None:
        found.append(f"booking limit: a single booking ends after {offer.booking_limit_hours} h")
    if offer.interruptible:
        found.append("can be interrupted: save checkpoints")
    if offer.tier == "community":
        found.append("runs on the host's own hardware; the host can read the session's memory")
    return tuple(found)


def break_words(code: str, offer: MachineOffer, hourly_price: Decimal, preferences: Preferences) -> str:
    if code == BREAK_TIER:
        return f"{TIER_WORDS[offer.tier]} tier; you chose {TIER_WORDS[preferences.tier]}"
    if code == BREAK_MAX_PRICE:
        limit = preferences.max_price_per_hour
        return f"over your price limit: {money_text(hourly_price)}/h > {money_text(limit)}/h"
    return (
        f"budget covers under an hour: {money_text(preferences.budget)} at "
        f"{money_text(hourly_price)}/h lasts {minutes(preferences.budget, hourly_price)} minutes"
    )


# --- the whole answer -------------------------------------------------------------------------------


def empty_reason(
    tally,
    planner: FitPlanner,
    precision_alternatives: tuple[PrecisionAlternative, ...],
    preferences: Preferences,
    excluded: Mapping[str, int],
) -> str:
    """Which constraint to relax, and how many machines relaxing it adds (`tally`: see
    `sizing.matching.Tally`)."""
    hints: list[str] = []
    if not tally.considered:
        where = "in the chosen countries " if preferences.countries is not None else ""
        opening = f"No machine is available {where}right now"
        if excluded.get(OUTSIDE_COUNTRIES):
            opening += (
                f"; {plural(excluded[OUTSIDE_COUNTRIES], 'available machine')} elsewhere "
                "(or of unknown location) were not considered"
            )
    elif not tally.breaking:
        largest = (tally.largest_memory_mib or 0) * MIB
        where = f" in {countries_short(preferences)}" if preferences.countries is not None else ""
        opening = (
            f"No machine{where} has enough memory: the largest holds {fmt_gib(largest)} per GPU, "
            f"the workload needs {fmt_gib(planner.need(1))} on one GPU"
        )
        if planner.heads:
            opening += " (splitting over the free GPUs of one machine does not help either)"
    else:
        only = {code: tally.only.get(code, 0) for code in BREAK_REASON}
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
            hints.append(f"raising {it} to {money_text(raise_to)}/h adds {plural(adds, 'machine')}")
        if only[BREAK_TIER]:
            hints.append(f"choosing both tiers adds {plural(only[BREAK_TIER], 'machine')}")
        if only[BREAK_BUDGET]:
            raise_to = tally.only_cheapest[BREAK_BUDGET]
            adds = tally.only_at_cheapest[BREAK_BUDGET]
            it = "it" if single_kind == BREAK_BUDGET else "the budget"
            hints.append(
                f"raising {it} to {money_text(raise_to)} (one hour on the cheapest) "
                f"adds {plural(adds, 'machine')}"
            )
        if not hints:
            hints.append(
                f"{plural(tally.breaking, 'machine')} fit but break more than one preference: "
                "see the alternatives"
            )
    for alternative in precision_alternatives:
        if alternative.machines_fitting:
            opens = plural(alternative.machines_fitting, "machine")
            hints.append(f"{alternative.precision}-bit opens {opens}")
    return "; ".join([opening, *hints]) + "."


def countries_short(preferences: Preferences) -> str:
    """The chosen countries as typed, shortly: "CH", "DE, FR", "EU"."""
    typed = preferences.countries_input or tuple(sorted(preferences.countries or ()))
    return ", ".join(typed)


@dataclass(frozen=True)
class Relaxed:
    """What relaxing one constraint alone would open: machines that fit and meet every other
    preference, the cheapest hourly price among them and where they are."""

    machines: int
    cheapest_hourly: Decimal | None
    countries: tuple[str, ...] = ()
    value: int | None = None  # the relaxed figure (context or requests)
    other_preferences_too: bool = False  # only with the price, budget and tier limits lifted as well


def relax_countries_words(preferences: Preferences, found: Relaxed) -> str:
    where = ", ".join(found.countries[:5]) + (" and more" if len(found.countries) > 5 else "")
    words = f"outside {countries_short(preferences)}: {plural(found.machines, 'machine')}"
    if found.cheapest_hourly is not None:
        words += f" from {money_text(found.cheapest_hourly)}/h"
    if where:
        words += f" in {where}"
    if found.other_preferences_too:
        words += " (over your price, budget or tier limits as well)"
    return words


RELAX_NOUNS = {
    "context": ("a context of", "tokens"),
    "sequence_length": ("a sequence length of", "tokens"),
    "requests": ("", "concurrent requests"),
    "batch_size": ("a batch size of", ""),
    "streams": ("", "concurrent audio streams"),
}


def relax_size_words(field: str, found: Relaxed) -> str:
    before, after = RELAX_NOUNS[field]
    figure = " ".join(part for part in (before, f"{found.value:,}", after) if part)
    verb = "fit" if not before and found.value != 1 else "fits"
    words = f"{figure} {verb} on {plural(found.machines, 'machine')}"
    if found.cheapest_hourly is not None:
        words += f" from {money_text(found.cheapest_hourly)}/h"
    return words


def with_relax_hints(reason: str, hints: list[str]) -> str:
    """The empty answer's reason with what relaxing each further constraint would open."""
    if not hints:
        return reason
    return reason.rstrip(".") + "; " + "; ".join(hints) + "."


def constraints_applied(
    breakdown: Breakdown, preferences: Preferences, excluded: Mapping[str, int], stale_after_minutes: int
) -> tuple[tuple[str, str], ...]:
    """Everything the answer took into account, as (label, value) pairs in words."""
    inputs = breakdown.inputs
    workload = breakdown.workload
    pairs: list[tuple[str, str]] = [("Workload", WORKLOAD_WORDS.get(workload, workload))]
    model = first_of(inputs, "model_name", "model")
    if model is not None and workload != "notebook":
        pairs.append(("Model", str(model)))
    if breakdown.precision is not None and workload != "notebook":
        pairs.append(("Precision", f"{breakdown.precision}-bit"))
        if workload in ("inference", "speech") and "kv_bits" in inputs:
            pairs.append(("KV cache", f"{inputs['kv_bits']}-bit"))
    context = first_of(inputs, "context", "context_tokens", "sequence_length")
    requests = first_of(
        inputs, "requests", "concurrent_requests", "batch_size", "batch", "streams", "audio_streams"
    )
    if workload == "inference":
        if context is not None:
            pairs.append(("Context per request", f"{count_words(context)} tokens"))
        if requests is not None:
            pairs.append(("Concurrent requests", count_words(requests)))
    elif workload == "finetune":
        if context is not None:
            pairs.append(("Sequence length", f"{count_words(context)} tokens"))
        if requests is not None:
            pairs.append(("Batch size", count_words(requests)))
    elif workload == "speech":
        pairs.append(("Context", "the model's 30-second audio window (fixed)"))
        if requests is not None:
            pairs.append(("Concurrent audio streams", count_words(requests)))
    elif workload == "notebook":
        pairs.append(("GPU memory needed", f"{fmt_gib(breakdown.total_bytes)}, as entered"))
    pairs.append(("Budget", money_text(preferences.budget) if preferences.budget is not None else "none"))
    pairs.append(
        (
            "Maximum price per hour",
            f"{money_text(preferences.max_price_per_hour)}/h"
            if preferences.max_price_per_hour is not None
            else "none",
        )
    )
    pairs.append(("Tier", TIER_WORDS.get(preferences.tier, preferences.tier)))
    pairs.append(("Countries", countries_words(preferences)))
    pairs.append(
        (
            "Availability",
            "Community machines online, Secure machines in stock, from active providers, heard from "
            f"within {stale_after_minutes} minutes",
        )
    )
    left_out = [f"{count} {reason}" for reason, count in excluded.items() if count]
    pairs.append(("Not recommended", ", ".join(left_out) if left_out else "none"))
    return tuple(pairs)


def countries_words(preferences: Preferences) -> str:
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
