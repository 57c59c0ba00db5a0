"""The engine's words: why a machine fits, its limits, what a budget covers, why an answer is
empty, and the constraints applied. Figures are rounded here, for display, by `sizing.units`; words
and figures are in the active language (`sizing.i18n`)."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from .breakdown import Breakdown
from .countries import EU_CODE, EU_MEMBERS, country_name
from .fit import TIGHT_HEADROOM_FRACTION, Fit
from .i18n import TranslatedWords, format_number, gettext, gettext_noop, ngettext, pgettext
from .offers import MachineOffer, Preferences
from .reasons import BREAK_BUDGET, BREAK_MAX_PRICE, BREAK_REASON, BREAK_TIER, OUTSIDE_COUNTRIES, reason_words
from .units import (
    MIB,
    cents_up,
    fmt_gib,
    hundredths_down,
    money_string,
    money_text,
    one_decimal_text,
    percent_text,
    whole_down,
)
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

_ONE_HOUR = Decimal(1)


def plural(count: int, noun: str) -> str:
    """English only ("1 machine", "2 machines"); the engine's own words use `ngettext`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def machines_words(count: int) -> str:
    """"1 machine", "3 machines" in the active language."""
    return ngettext("%(count)s machine", "%(count)s machines", count) % {"count": _count(count)}


def _count(count: int) -> str:
    return format_number(count, grouping=False)


def minutes(budget: Decimal, hourly_price: Decimal) -> int:
    return whole_down(budget * 60 / hourly_price)


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
    hours = hundredths_down(exact_hours)
    days = hundredths_down(exact_hours / 24)
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
            **values, "hours": one_decimal_text(exact_hours)
        }
    else:
        text = gettext("%(budget)s covers %(hours)s hours (%(days)s days) at %(price)s") % {
            **values, "hours": one_decimal_text(exact_hours), "days": one_decimal_text(exact_hours / 24)
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
            "percent": percent_text(fit.headroom_fraction),
        },
    )


# How `catalog.services.memory_flag_for` words a host's memory figure far from the datasheet (stored
# with the machine, in English, as data).
_MEMORY_FLAG = re.compile(
    r"^Reported ([\d,]+) MiB per GPU; the (.+) datasheet figure is ([\d,]+) MiB \(([+-]\d+(?:\.\d+)?)%\)\.$"
)


def memory_flag_words(flag: str) -> str:
    """A machine's memory flag in the active language (as stored when not of the usual form)."""
    match = _MEMORY_FLAG.match(flag)
    if match is None:
        return flag
    reported, gpu, datasheet, deviation = match.groups()
    return gettext(
        "Reported %(reported)s MiB per GPU; the %(gpu)s datasheet figure is %(datasheet)s MiB "
        "(%(deviation)s%%)."
    ) % {
        "reported": format_number(int(reported.replace(",", ""))),
        "gpu": gpu,
        "datasheet": format_number(int(datasheet.replace(",", ""))),
        "deviation": deviation[0] + format_number(Decimal(deviation[1:])),
    }


def limits(offer: MachineOffer, fit: Fit) -> tuple[str, ...]:
    found = []
    if offer.memory_source == "host":
        found.append(gettext("GPU memory is what the host's machine reports; Node Lodge has not checked it"))
    if offer.memory_flag:
        found.append(memory_flag_words(offer.memory_flag))
    if fit.tight:
        found.append(
            gettext(
                "tight margin: %(headroom)s (%(percent)s) left on the fullest GPU; a margin is tight when "
                "less than %(tight)s of the GPU's memory stays free. Servers that reserve a fixed share of "
                "the GPU up front (vLLM) or training scripts that keep extra copies may not fit"
            ) % {
                "headroom": fmt_gib(fit.headroom_bytes),
                "percent": percent_text(fit.headroom_fraction),
                "tight": percent_text(TIGHT_HEADROOM_FRACTION),
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


@dataclass(frozen=True)
class Hint:
    """One change to the query that opens machines, for an empty answer: its words, the query's
    fields it sets (named and written as in the query string; none for a note that changes
    nothing), how many machines the changed query finds and the cheapest of them."""

    text: str
    changes: tuple[tuple[str, object], ...] = ()
    machines: int = 0
    cheapest_hourly: Decimal | None = None
    single: bool = False  # a limit's hint where that limit is the only one broken ("raising it to")

    def to_dict(self) -> dict:
        return {
            "text": self.text,
            "changes": {name: _change_value(value) for name, value in self.changes},
            "machines": self.machines,
            "cheapest_price_per_hour": (
                money_string(self.cheapest_hourly) if self.cheapest_hourly is not None else None
            ),
        }


def _change_value(value) -> str:
    if isinstance(value, Decimal):
        return money_string(value)
    if isinstance(value, tuple | list | frozenset):
        return ",".join(value)
    return str(value)


@dataclass(frozen=True)
class EmptyAnswer:
    """Why an answer is empty (`opening`) and what to change (`hints`)."""

    opening: str
    hints: tuple[Hint, ...] = ()

    @property
    def text(self) -> str:
        return "; ".join([self.opening, *(hint.text for hint in self.hints)]) + "."

    def with_hints(self, hints) -> EmptyAnswer:
        return EmptyAnswer(self.opening, (*self.hints, *hints))


def empty_answer(
    tally,
    planner: FitPlanner,
    precision_alternatives: tuple[PrecisionAlternative, ...],
    preferences: Preferences,
    excluded: Mapping[str, int],
) -> EmptyAnswer:
    """Which constraint to relax, and how many machines relaxing it adds (`tally`: see
    `sizing.matching.Tally`)."""
    hints: list[Hint] = []
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
        for code in (BREAK_MAX_PRICE, BREAK_TIER, BREAK_BUDGET):
            if only[code]:
                hints.append(limit_hint(
                    code,
                    tally.only_cheapest.get(code),
                    only[code] if code == BREAK_TIER else tally.only_at_cheapest[code],
                    single=single_kind == code,
                ))
        if not hints:
            hints.append(Hint(
                ngettext(
                    "%(count)s machine fit but break more than one preference: see the alternatives",
                    "%(count)s machines fit but break more than one preference: see the alternatives",
                    tally.breaking,
                ) % {"count": _count(tally.breaking)}
            ))
    for alternative in precision_alternatives:
        if alternative.machines_fitting:
            text = gettext("%(bits)s-bit opens %(machines)s") % {
                "bits": alternative.precision, "machines": machines_words(alternative.machines_fitting)
            }
            if alternative.cheapest_hourly_price is not None:
                text += gettext(" from %(price)s") % {"price": per_hour(alternative.cheapest_hourly_price)}
            hints.append(Hint(
                text, (("precision", alternative.precision),), alternative.machines_fitting,
                alternative.cheapest_hourly_price,
            ))
    return EmptyAnswer(opening, tuple(hints))


def settable(amount: Decimal) -> Decimal:
    """An amount a price limit or budget can be set to (whole cents), at least `amount`."""
    return cents_up(amount)


def limit_hint(code: str, cheapest: Decimal | None, machines: int, single: bool = False) -> Hint:
    """Lifting one preference alone (`code`: the tier, the price limit or the budget): the value to
    set (for a price or budget, enough for the cheapest machine that breaks only it, in whole
    cents) and the machines it adds (`single`: that preference is the only one broken)."""
    if code == BREAK_TIER:
        return Hint(
            gettext("choosing both tiers adds %(machines)s") % {"machines": machines_words(machines)},
            (("tier", "both"),), machines, cheapest,
        )
    value = settable(cheapest)
    if code == BREAK_MAX_PRICE:
        values = {"price": per_hour(value), "machines": machines_words(machines)}
        if single:
            text = gettext("raising it to %(price)s adds %(machines)s") % values
        else:
            text = gettext("raising the price limit to %(price)s adds %(machines)s") % values
        return Hint(text, (("max_price", value),), machines, cheapest, single)
    values = {"budget": money_text(value), "machines": machines_words(machines)}
    if single:
        text = gettext("raising it to %(budget)s (one hour on the cheapest) adds %(machines)s") % values
    else:
        text = gettext(
            "raising the budget to %(budget)s (one hour on the cheapest) adds %(machines)s"
        ) % values
    return Hint(text, (("budget", value),), machines, cheapest, single)


def silent_fleet_words(last_report: datetime | None, now: datetime, stale_after_minutes: int) -> str:
    """The opening of an empty answer when no machine anywhere has reported within the staleness
    window: nothing is known to be available, whatever the countries or the workload."""
    if last_report is None:
        return gettext("No machine has reported yet, so availability is unknown")
    silent_minutes = max(0, int((now - last_report).total_seconds() // 60))
    if silent_minutes < 120:
        ago = ngettext("%(count)s minute ago", "%(count)s minutes ago", silent_minutes) % {
            "count": _count(silent_minutes)
        }
    elif silent_minutes < 48 * 60:
        hours = silent_minutes // 60
        ago = ngettext("%(count)s hour ago", "%(count)s hours ago", hours) % {"count": _count(hours)}
    else:
        days = silent_minutes // (24 * 60)
        ago = ngettext("%(count)s day ago", "%(count)s days ago", days) % {"count": _count(days)}
    return gettext(
        "No machine has reported in the last %(minutes)s minutes, so availability is unknown: the last "
        "report came %(ago)s (%(when)s UTC). Machines are listed again once their providers report"
    ) % {
        "minutes": format_number(stale_after_minutes),
        "ago": ago,
        "when": last_report.astimezone(UTC).strftime("%Y-%m-%d %H:%M"),
    }


def countries_short(preferences: Preferences) -> str:
    """The chosen countries as typed, shortly: "CH", "DE, FR", "EU"."""
    typed = preferences.countries_input or tuple(sorted(preferences.countries or ()))
    return ", ".join(typed)


def _where_words(countries: tuple[str, ...]) -> str:
    where = ", ".join(countries[:5])
    if len(countries) > 5:
        where = gettext("%(countries)s and more") % {"countries": where}
    return where


def change_words(field: str, value) -> str:
    """One change a hint makes besides its main one: "the max price raised to $3.70/h"."""
    if field == "max_price":
        return gettext("the max price raised to %(price)s") % {"price": per_hour(value)}
    if field == "budget":
        return gettext("the budget raised to %(budget)s") % {"budget": money_text(value)}
    if field == "tier":
        return gettext("both tiers")
    raise KeyError(field)


def relaxed_words(
    machines: int,
    cheapest_hourly: Decimal | None,
    *,
    outside: Preferences | None = None,
    bits: int | None = None,
    countries: tuple[str, ...] = (),
    limits: tuple[tuple[str, object], ...] = (),
) -> str:
    """What a changed query opens, naming each change: "outside CH at 4-bit, with the max price
    raised to $3.70/h: 1 machine from $3.70/h in GB"."""
    if outside is not None and bits is not None:
        words = gettext("outside %(countries)s at %(bits)s") % {
            "countries": countries_short(outside), "bits": bits_words(bits)
        }
    elif outside is not None:
        words = gettext("outside %(countries)s") % {"countries": countries_short(outside)}
    else:
        words = gettext("at %(bits)s") % {"bits": bits_words(bits)}
    if limits:
        words += gettext(", with %(changes)s") % {
            "changes": gettext(" and ").join(change_words(name, value) for name, value in limits)
        }
    words += gettext(": %(machines)s") % {"machines": machines_words(machines)}
    if cheapest_hourly is not None:
        words += gettext(" from %(price)s") % {"price": per_hour(cheapest_hourly)}
    if countries:
        words += gettext(" in %(countries)s") % {"countries": _where_words(countries)}
    return words


def relax_size_words(field: str, value: int, machines: int, cheapest_hourly: Decimal | None) -> str:
    """What a smaller context (or fewer requests) opens: "a context of 4,096 tokens fits on 3 machines"."""
    values = {"value": format_number(value), "machines": machines_words(machines)}
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
            value,
        ) % values
    elif field == "streams":
        words = ngettext(
            "%(value)s concurrent audio streams fits on %(machines)s",
            "%(value)s concurrent audio streams fit on %(machines)s",
            value,
        ) % values
    else:
        raise KeyError(field)
    if cheapest_hourly is not None:
        words += gettext(" from %(price)s") % {"price": per_hour(cheapest_hourly)}
    return words


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
    capabilities = breakdown.capabilities
    takes_memory = capabilities is not None and capabilities.takes_memory
    pairs: list[tuple[str, str]] = [(gettext("Workload"), WORKLOAD_WORDS.get(workload, workload))]
    model = first_of(inputs, "model_name", "model")
    if model is not None and not takes_memory:
        pairs.append((gettext("Model"), str(model)))
    if breakdown.precision is not None and not takes_memory:
        pairs.append((gettext("Precision"), bits_words(breakdown.precision)))
        if capabilities is not None and capabilities.takes_kv_precision and "kv_bits" in inputs:
            pairs.append((gettext("KV cache"), bits_words(inputs["kv_bits"])))
    pairs.extend(_input_pairs(breakdown, capabilities))
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


def _input_pairs(breakdown: Breakdown, capabilities) -> list[tuple[str, str]]:
    """The workload's own inputs: tokens and requests (or sequence and batch), audio streams, or the
    memory a notebook asked for."""
    inputs = breakdown.inputs
    context = first_of(inputs, "context", "context_tokens", "sequence_length")
    requests = first_of(
        inputs, "requests", "concurrent_requests", "batch_size", "batch", "streams", "audio_streams"
    )
    if capabilities is None:
        return []
    if capabilities.takes_memory:
        return [(gettext("GPU memory needed"), gettext("%(memory)s, as entered") % {
            "memory": fmt_gib(breakdown.total_bytes)
        })]
    pairs = []
    if capabilities.takes_tokens:  # a language model served, or trained (sequence length × batch)
        if capabilities.serves_tokens:
            context_label, requests_label = gettext("Context per request"), gettext("Concurrent requests")
        else:
            context_label, requests_label = gettext("Sequence length"), gettext("Batch size")
        if context is not None:
            pairs.append((context_label, tokens_words(context)))
        if requests is not None:
            pairs.append((requests_label, count_words(requests)))
    elif "speech" in capabilities.kinds:  # a speech model alone: its audio window is fixed
        pairs.append((gettext("Context"), gettext("the model's 30-second audio window (fixed)")))
        if requests is not None:
            pairs.append((gettext("Concurrent audio streams"), count_words(requests)))
    return pairs


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
