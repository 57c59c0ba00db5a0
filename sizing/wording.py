"""The engine's words: why a machine fits, its limits, what a budget covers, why an answer is
empty, and the constraints applied. Figures are rounded here, for display, by `sizing.units`; words
and figures are in the active language (`sizing.i18n`)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

from .breakdown import Breakdown
from .countries import EU_CODE, EU_MEMBERS, country_name
from .fit import TIGHT_HEADROOM_FRACTION, Fit
from .i18n import TranslatedWords, format_number, gettext, gettext_noop, ngettext, pgettext
from .offers import MachineOffer, Preferences
from .reasons import BREAK_BUDGET, BREAK_MAX_PRICE, BREAK_REASON, BREAK_TIER, OUTSIDE_COUNTRIES, reason_words
from .units import MIB, fmt_gib, money_text
from .workloads import WORKLOAD_WORDS

if TYPE_CHECKING:
    from .fit import FitPlanner
    from .results import PrecisionAlternative

MEMORY_SOURCE_WORDS = TranslatedWords({
    "datacenter": gettext_noop("datacenter figure"),
    "datasheet": gettext_noop("manufacturer datasheet"),
    "host": gettext_noop("reported by the host, not checked by Node Lodge"),
    "unknown": gettext_noop("source not recorded"),
})
# The same sources in a table cell.
MEMORY_SOURCE_SHORT = TranslatedWords({
    "datacenter": gettext_noop("datacenter"),
    "datasheet": gettext_noop("datasheet"),
    "host": gettext_noop("host-reported"),
    "unknown": gettext_noop("source not recorded"),
})
TIER_WORDS = TranslatedWords({
    "secure": gettext_noop("Secure"),
    "community": gettext_noop("Community"),
    "both": gettext_noop("Secure and Community"),
})

_CENT = Decimal("0.01")
_ONE_HOUR = Decimal(1)


def percent(fraction: float) -> str:
    value = Decimal(str(fraction * 100)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    if value == value.to_integral_value():
        value = int(value)
    return f"{format_number(value, grouping=False)} %"


def plural(count: int, noun: str) -> str:
    """English only ("1 machine", "2 machines"); the engine's own words use `ngettext`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def machines_words(count: int) -> str:
    """"1 machine", "3 machines" in the active language."""
    return ngettext("%(count)s machine", "%(count)s machines", count) % {"count": _count(count)}


def _count(count: int) -> str:
    return format_number(count, grouping=False)


def one_place(value: Decimal) -> str:
    return format_number(value.quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def minutes(budget: Decimal, hourly_price: Decimal) -> int:
    return int((budget * 60 / hourly_price).to_integral_value(rounding=ROUND_DOWN))


def count_words(value) -> str:
    return format_number(value) if isinstance(value, int) else str(value)


def first_of(mapping: Mapping, *keys: str):
    for key in keys:
        value = mapping.get(key)
        if value is not None:
            return value
    return None


def per_hour(amount: Decimal) -> str:
    """A price per hour for people: "$0.098/h" ("0,098 $/h" in German)."""
    return f"{money_text(amount)}/h"


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
            gettext("this machine costs nothing per hour; %(budget)s is not spent") % {
                "budget": money_text(budget)
            },
        )
    exact_hours = budget / hourly_price
    hours = exact_hours.quantize(_CENT, rounding=ROUND_DOWN)
    days = (exact_hours / 24).quantize(_CENT, rounding=ROUND_DOWN)
    values = {"budget": money_text(budget), "price": per_hour(hourly_price)}
    if exact_hours < _ONE_HOUR:
        count = minutes(budget, hourly_price)
        text = ngettext(
            "%(budget)s covers %(minutes)s minute at %(price)s",
            "%(budget)s covers %(minutes)s minutes at %(price)s",
            count,
        ) % {**values, "minutes": _count(count)}
    elif exact_hours < 24:
        text = gettext("%(budget)s covers %(hours)s hours at %(price)s") % {
            **values, "hours": one_place(exact_hours)
        }
    else:
        text = gettext("%(budget)s covers %(hours)s hours (%(days)s days) at %(price)s") % {
            **values, "hours": one_place(exact_hours), "days": one_place(exact_hours / 24)
        }
    capped = booking_limit_hours is not None and exact_hours > booking_limit_hours
    if capped:
        text += gettext("; the booking limit of %(hours)s h cuts a single booking shorter") % {
            "hours": format_number(booking_limit_hours)
        }
    return BudgetCover(hours, days, capped, booking_limit_hours, text)


def why_it_fits(offer: MachineOffer, fit: Fit) -> tuple[str, ...]:
    source_words = MEMORY_SOURCE_WORDS.get(offer.memory_source, offer.memory_source)
    return (
        gettext("%(memory)s of memory per GPU (%(source)s)") % {
            "memory": fmt_gib(fit.memory_per_gpu_bytes), "source": source_words
        },
        gettext("uses %(used)s of %(free)s free GPUs: %(why)s") % {
            "used": _count(fit.gpus_used), "free": _count(offer.free_gpus), "why": fit.why_gpus
        },
        gettext("needs %(need)s per GPU, leaving %(headroom)s (%(percent)s) headroom on each") % {
            "need": fmt_gib(fit.need_per_gpu_bytes),
            "headroom": fmt_gib(fit.headroom_bytes),
            "percent": percent(fit.headroom_fraction),
        },
    )


def limits(offer: MachineOffer, fit: Fit) -> tuple[str, ...]:
    found = []
    if offer.memory_source == "host":
        found.append(gettext("GPU memory is what the host's machine reports; Node Lodge has not checked it"))
    if offer.memory_flag:
        found.append(offer.memory_flag)
    if fit.tight:
        found.append(
            gettext(
                "tight margin: %(headroom)s (%(percent)s) left on the fullest GPU; a margin is tight when "
                "less than %(tight)s of the GPU's memory stays free. Servers that reserve a fixed share of "
                "the GPU up front (vLLM) or training scripts that keep extra copies may not fit"
            ) % {
                "headroom": fmt_gib(fit.headroom_bytes),
                "percent": percent(fit.headroom_fraction),
                "tight": percent(TIGHT_HEADROOM_FRACTION),
            }
        )
    if offer.booking_limit_hours is not None:
        found.append(
            gettext("booking limit: a single booking ends after %(hours)s h") % {
                "hours": format_number(offer.booking_limit_hours)
            }
        )
    if offer.interruptible:
        found.append(gettext("can be interrupted: save checkpoints"))
    if offer.tier == "community":
        found.append(gettext("runs on the host's own hardware; the host can read the session's memory"))
    return tuple(found)


def break_words(code: str, offer: MachineOffer, hourly_price: Decimal, preferences: Preferences) -> str:
    if code == BREAK_TIER:
        return gettext("%(tier)s tier; you chose %(chosen)s") % {
            "tier": TIER_WORDS[offer.tier], "chosen": TIER_WORDS[preferences.tier]
        }
    if code == BREAK_MAX_PRICE:
        limit = preferences.max_price_per_hour
        return gettext("over your price limit: %(price)s > %(limit)s") % {
            "price": per_hour(hourly_price), "limit": per_hour(limit)
        }
    count = minutes(preferences.budget, hourly_price)
    return ngettext(
        "budget covers under an hour: %(budget)s at %(price)s lasts %(minutes)s minute",
        "budget covers under an hour: %(budget)s at %(price)s lasts %(minutes)s minutes",
        count,
    ) % {"budget": money_text(preferences.budget), "price": per_hour(hourly_price), "minutes": _count(count)}


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
        if preferences.countries is not None:
            opening = gettext("No machine is available in the chosen countries right now")
        else:
            opening = gettext("No machine is available right now")
        if excluded.get(OUTSIDE_COUNTRIES):
            elsewhere = excluded[OUTSIDE_COUNTRIES]
            opening += ngettext(
                "; %(count)s available machine elsewhere (or of unknown location) were not considered",
                "; %(count)s available machines elsewhere (or of unknown location) were not considered",
                elsewhere,
            ) % {"count": _count(elsewhere)}
    elif not tally.breaking:
        largest = (tally.largest_memory_mib or 0) * MIB
        values = {"largest": fmt_gib(largest), "need": fmt_gib(planner.need(1))}
        if preferences.countries is not None:
            opening = gettext(
                "No machine in %(countries)s has enough memory: the largest holds %(largest)s per GPU, "
                "the workload needs %(need)s on one GPU"
            ) % {**values, "countries": countries_short(preferences)}
        else:
            opening = gettext(
                "No machine has enough memory: the largest holds %(largest)s per GPU, the workload needs "
                "%(need)s on one GPU"
            ) % values
        if planner.heads:
            opening += gettext(" (splitting over the free GPUs of one machine does not help either)")
    else:
        only = {code: tally.only.get(code, 0) for code in BREAK_REASON}
        single_kind = next((code for code, found in only.items() if found == tally.breaking), None)
        if single_kind == BREAK_MAX_PRICE:
            opening = gettext("No machine fits under your price limit")
        elif single_kind == BREAK_TIER:
            opening = gettext("No machine of the chosen tier fits")
        elif single_kind == BREAK_BUDGET:
            opening = gettext("Your budget covers under an hour on every machine that fits")
        else:
            opening = gettext("No machine fits and meets every preference")
        if only[BREAK_MAX_PRICE]:
            values = {
                "price": per_hour(tally.only_cheapest[BREAK_MAX_PRICE]),
                "machines": machines_words(tally.only_at_cheapest[BREAK_MAX_PRICE]),
            }
            if single_kind == BREAK_MAX_PRICE:
                hints.append(gettext("raising it to %(price)s adds %(machines)s") % values)
            else:
                hints.append(gettext("raising the price limit to %(price)s adds %(machines)s") % values)
        if only[BREAK_TIER]:
            hints.append(
                gettext("choosing both tiers adds %(machines)s") % {
                    "machines": machines_words(only[BREAK_TIER])
                }
            )
        if only[BREAK_BUDGET]:
            values = {
                "budget": money_text(tally.only_cheapest[BREAK_BUDGET]),
                "machines": machines_words(tally.only_at_cheapest[BREAK_BUDGET]),
            }
            if single_kind == BREAK_BUDGET:
                hints.append(
                    gettext("raising it to %(budget)s (one hour on the cheapest) adds %(machines)s") % values
                )
            else:
                hints.append(
                    gettext(
                        "raising the budget to %(budget)s (one hour on the cheapest) adds %(machines)s"
                    ) % values
                )
        if not hints:
            hints.append(
                ngettext(
                    "%(count)s machine fit but break more than one preference: see the alternatives",
                    "%(count)s machines fit but break more than one preference: see the alternatives",
                    tally.breaking,
                ) % {"count": _count(tally.breaking)}
            )
    for alternative in precision_alternatives:
        if alternative.machines_fitting:
            hints.append(
                gettext("%(bits)s-bit opens %(machines)s") % {
                    "bits": alternative.precision, "machines": machines_words(alternative.machines_fitting)
                }
            )
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
    where = ", ".join(found.countries[:5])
    if len(found.countries) > 5:
        where = gettext("%(countries)s and more") % {"countries": where}
    words = gettext("outside %(countries)s: %(machines)s") % {
        "countries": countries_short(preferences), "machines": machines_words(found.machines)
    }
    if found.cheapest_hourly is not None:
        words += gettext(" from %(price)s") % {"price": per_hour(found.cheapest_hourly)}
    if where:
        words += gettext(" in %(countries)s") % {"countries": where}
    if found.other_preferences_too:
        words += gettext(" (over your price, budget or tier limits as well)")
    return words


def relax_size_words(field: str, found: Relaxed) -> str:
    """What a smaller context (or fewer requests) opens: "a context of 4,096 tokens fits on 3 machines"."""
    values = {"value": format_number(found.value), "machines": machines_words(found.machines)}
    if field == "context":
        words = gettext("a context of %(value)s tokens fits on %(machines)s") % values
    elif field == "sequence_length":
        words = gettext("a sequence length of %(value)s tokens fits on %(machines)s") % values
    elif field == "batch_size":
        words = gettext("a batch size of %(value)s fits on %(machines)s") % values
    elif field == "requests":
        words = ngettext(
            "%(value)s concurrent requests fits on %(machines)s",
            "%(value)s concurrent requests fit on %(machines)s",
            found.value,
        ) % values
    elif field == "streams":
        words = ngettext(
            "%(value)s concurrent audio streams fits on %(machines)s",
            "%(value)s concurrent audio streams fit on %(machines)s",
            found.value,
        ) % values
    else:
        raise KeyError(field)
    if found.cheapest_hourly is not None:
        words += gettext(" from %(price)s") % {"price": per_hour(found.cheapest_hourly)}
    return words


def with_relax_hints(reason: str, hints: list[str]) -> str:
    """The empty answer's reason with what relaxing each further constraint would open."""
    if not hints:
        return reason
    return reason.rstrip(".") + "; " + "; ".join(hints) + "."


def bits_words(bits: int) -> str:
    """"16-bit" ("16-Bit" in German)."""
    return gettext("%(bits)s-bit") % {"bits": bits}


def tokens_words(count) -> str:
    return gettext("%(count)s tokens") % {"count": count_words(count)}


def constraints_applied(
    breakdown: Breakdown, preferences: Preferences, excluded: Mapping[str, int], stale_after_minutes: int
) -> tuple[tuple[str, str], ...]:
    """Everything the answer took into account, as (label, value) pairs in words."""
    inputs = breakdown.inputs
    workload = breakdown.workload
    pairs: list[tuple[str, str]] = [(gettext("Workload"), WORKLOAD_WORDS.get(workload, workload))]
    model = first_of(inputs, "model_name", "model")
    if model is not None and workload != "notebook":
        pairs.append((gettext("Model"), str(model)))
    if breakdown.precision is not None and workload != "notebook":
        pairs.append((gettext("Precision"), bits_words(breakdown.precision)))
        if workload in ("inference", "speech") and "kv_bits" in inputs:
            pairs.append((gettext("KV cache"), bits_words(inputs["kv_bits"])))
    context = first_of(inputs, "context", "context_tokens", "sequence_length")
    requests = first_of(
        inputs, "requests", "concurrent_requests", "batch_size", "batch", "streams", "audio_streams"
    )
    if workload == "inference":
        if context is not None:
            pairs.append((gettext("Context per request"), tokens_words(context)))
        if requests is not None:
            pairs.append((gettext("Concurrent requests"), count_words(requests)))
    elif workload == "finetune":
        if context is not None:
            pairs.append((gettext("Sequence length"), tokens_words(context)))
        if requests is not None:
            pairs.append((gettext("Batch size"), count_words(requests)))
    elif workload == "speech":
        pairs.append((gettext("Context"), gettext("the model's 30-second audio window (fixed)")))
        if requests is not None:
            pairs.append((gettext("Concurrent audio streams"), count_words(requests)))
    elif workload == "notebook":
        pairs.append(
            (gettext("GPU memory needed"), gettext("%(memory)s, as entered") % {
                "memory": fmt_gib(breakdown.total_bytes)
            })
        )
    pairs.append(
        (
            gettext("Budget"),
            money_text(preferences.budget)
            if preferences.budget is not None
            else pgettext("no budget", "none"),
        )
    )
    pairs.append(
        (
            gettext("Maximum price per hour"),
            per_hour(preferences.max_price_per_hour)
            if preferences.max_price_per_hour is not None
            else pgettext("no price limit", "none"),
        )
    )
    pairs.append((gettext("Tier"), TIER_WORDS.get(preferences.tier, preferences.tier)))
    pairs.append((gettext("Countries"), countries_words(preferences)))
    pairs.append(
        (
            gettext("Availability"),
            gettext(
                "Community machines online, Secure machines in stock, from active providers, heard from "
                "within %(minutes)s minutes"
            ) % {"minutes": format_number(stale_after_minutes)},
        )
    )
    left_out = [
        f"{_count(count)} {reason_words(reason)}"
        for reason, count in excluded.items()
        if count
    ]
    pairs.append(
        (
            gettext("Not recommended"),
            ", ".join(left_out) if left_out else pgettext("nothing left out", "none"),
        )
    )
    return tuple(pairs)


def countries_words(preferences: Preferences) -> str:
    if preferences.countries is None:
        return gettext("anywhere (machines of unknown location are still left out)")
    typed = preferences.countries_input or tuple(sorted(preferences.countries))
    parts = []
    for code in typed:
        if code == EU_CODE:
            parts.append(
                gettext("EU = %(count)s member states: %(codes)s") % {
                    "count": len(EU_MEMBERS), "codes": ", ".join(sorted(EU_MEMBERS))
                }
            )
        else:
            parts.append(f"{code} ({country_name(code)})")
    return "; ".join(parts) + gettext("; machines of unknown location count as outside")
