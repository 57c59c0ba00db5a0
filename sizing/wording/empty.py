"""Why an answer is empty and what to change: hints, relaxed constraints, a silent fleet."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

from ..i18n import format_number, gettext, ngettext
from ..markets import ANY_MARKET, INTERRUPTIBLE
from ..offers import Preferences
from ..reasons import (
    BREAK_BUDGET,
    BREAK_MAX_PRICE,
    BREAK_REASON,
    BREAK_RELIABILITY,
    BREAK_TIER,
    OUTSIDE_COUNTRIES,
)
from ..units import (
    MIB,
    cents_up,
    fmt_gib,
    money_string,
    money_text,
)

if TYPE_CHECKING:
    from ..fit import FitPlanner
    from ..matching import Tally
    from ..results import PrecisionAlternative
from .common import (
    bits_words,
    count_text,
    machines_words,
    per_hour,
)


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "changes": {name: _change_value(value) for name, value in self.changes},
            "machines": self.machines,
            "cheapest_price_per_hour": (
                money_string(self.cheapest_hourly) if self.cheapest_hourly is not None else None
            ),
        }


def _change_value(value: object) -> str:
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

    def with_hints(self, hints: Iterable[Hint]) -> EmptyAnswer:
        return EmptyAnswer(self.opening, (*self.hints, *hints))


def empty_answer(
    tally: Tally,
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
            ) % {"count": count_text(elsewhere)}
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
        elif single_kind == BREAK_RELIABILITY:
            opening = gettext("No machine that fits reports the reliability you chose")
        else:
            opening = gettext("No machine fits and meets every preference")
        for code in (BREAK_MAX_PRICE, BREAK_TIER, BREAK_RELIABILITY, BREAK_BUDGET):
            if only[code]:
                hints.append(limit_hint(
                    code,
                    tally.only_cheapest.get(code),
                    only[code] if code in (BREAK_TIER, BREAK_RELIABILITY) else tally.only_at_cheapest[code],
                    single=single_kind == code,
                ))
        if not hints:
            hints.append(Hint(
                ngettext(
                    "%(count)s machine fit but break more than one preference: see the alternatives",
                    "%(count)s machines fit but break more than one preference: see the alternatives",
                    tally.breaking,
                ) % {"count": count_text(tally.breaking)}
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
    """Lifting one preference alone (`code`: the tier, the minimum reliability, the price limit or the
    budget): the value to set (for a price or budget, enough for the cheapest machine that breaks only
    it, in whole cents) and the machines it adds (`single`: that preference is the only one broken)."""
    if code == BREAK_TIER:
        return Hint(
            gettext("choosing both tiers adds %(machines)s") % {"machines": machines_words(machines)},
            (("tier", "both"),), machines, cheapest,
        )
    if code == BREAK_RELIABILITY:
        return Hint(
            gettext("any reliability, reported or not, adds %(machines)s")
            % {"machines": machines_words(machines)},
            (("min_reliability", ""),), machines, cheapest,
        )
    value = settable(cast(Decimal, cheapest))  # a price or budget hint: the cheapest that breaks it
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
            "count": count_text(silent_minutes)
        }
    elif silent_minutes < 48 * 60:
        hours = silent_minutes // 60
        ago = ngettext("%(count)s hour ago", "%(count)s hours ago", hours) % {"count": count_text(hours)}
    else:
        days = silent_minutes // (24 * 60)
        ago = ngettext("%(count)s day ago", "%(count)s days ago", days) % {"count": count_text(days)}
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


def change_words(field: str, value: Any) -> str:
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
        words = gettext("at %(bits)s") % {"bits": bits_words(cast(int, bits))}  # a change: bits or outside
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


def market_words(market: str, machines: int, cheapest_hourly: Decimal) -> str:
    """What a wider market choice opens (`market`: interruptible or any), priced as the changed query
    prices its rows: "allowing interruptible machines opens 14 machines from $0.6149/h"."""
    values = {"machines": machines_words(machines), "price": per_hour(cheapest_hourly)}
    if market == INTERRUPTIBLE:
        return gettext("allowing interruptible machines opens %(machines)s from %(price)s") % values
    if market == ANY_MARKET:
        return gettext("allowing any market, reserved terms too, opens %(machines)s from %(price)s") % values
    raise KeyError(market)


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


def relax_layers_words(setting: str, on_gpus: int, layers: int, output_on_gpu: bool, machines: int,
                       cheapest_hourly: Decimal | None) -> str:
    """What fewer layers on the GPUs opens under llama.cpp or Ollama (`setting`: "-ngl 40" or "num_gpu 40",
    as the command writes it; `on_gpus` of `layers` decoder layers there as the build places them, the
    output head too where `output_on_gpu`): "with -ngl 40 (39 of 80 layers and the output head on the
    GPUs, the rest on the CPU, slower) the model fits on 2 machines from $0.40/h"."""
    values = {"setting": setting, "layers": format_number(on_gpus), "all": format_number(layers),
              "machines": machines_words(machines)}
    if output_on_gpu:
        words = gettext(
            "with %(setting)s (%(layers)s of %(all)s layers and the output head on the GPUs, the rest on the "
            "CPU, slower) the model fits on %(machines)s") % values
    else:
        words = gettext(
            "with %(setting)s (%(layers)s of %(all)s layers on the GPUs, the rest and the output head on the "
            "CPU, slower) the model fits on %(machines)s") % values
    if cheapest_hourly is not None:
        words += gettext(" from %(price)s") % {"price": per_hour(cheapest_hourly)}
    return words
