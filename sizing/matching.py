"""The matching engine: which machines a workload fits on, cheapest first, and how sure we are.

Inputs are plain values: a `Breakdown` (the memory a workload needs), `MachineOffer`s and the user's
`Preferences`. Two entry points give the same answer: `recommend` over every machine, and
`recommend_counted` over counts the catalog made in the database plus the few machines the answer
describes. Both apply the availability rule (`sizing.availability`), fit (`sizing.fit`) and the
preferences; the machines shown are described by `sizing.describing` (confidence, words, speeds); the
answer's values are in `sizing.results`.

A machine that fits but breaks a preference is an *alternative*, never a recommendation; machines
are listed in the listing order. Both rules are written once, in `sizing.preferences`.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from operator import itemgetter
from typing import NamedTuple, cast

from . import wording
from .availability import GONE, unavailable_reason
from .breakdown import Breakdown
from .describing import Describer, machine_price_per_million
from .fit import Fit, FitPlanner
from .markets import offer_price
from .offers import MachineOffer, Preferences
from .preferences import breaks_checker, order_key
from .reasons import BREAK_REASON, EXCLUDED_REASONS, LISTED_WHEN_CHOSEN, TOO_SMALL
from .results import PrecisionAlternative
from .results import Recommendation as Recommendation  # `recommend` answers one: importable from here

ALTERNATIVES_SHOWN = 20
SORT_PRICE = "price"
SORT_PRICE_PER_MILLION = "price_per_million_tokens"
SORTS = (SORT_PRICE, SORT_PRICE_PER_MILLION)
DEFAULT_STALE_AFTER_MINUTES = 15


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
    count covers the machines the availability rule lets through: `considered` of them. Preference
    codes are BREAK_TIER, BREAK_MAX_PRICE and BREAK_BUDGET.
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
class Tally:
    """The figures the empty reason and the precision options need, however they were counted."""

    considered: int
    largest_memory_mib: int | None
    breaking: int
    only: Mapping[str, int]
    only_cheapest: Mapping[str, Decimal]
    only_at_cheapest: Mapping[str, int]


class _Candidate(NamedTuple):
    sort_key: tuple[object, ...]
    offer: MachineOffer
    fit: Fit
    hourly_price: Decimal
    breaks: tuple[str, ...]
    # The market of the price used (`sizing.markets.offer_price`) and its price per GPU-hour.
    market: str
    price_per_gpu_hour: Decimal


_by_sort_key = itemgetter(0)


def price_key(hourly_price: Decimal, offer: MachineOffer, price_per_gpu_hour: Decimal) -> tuple[object, ...]:
    """The listing order's key of a machine priced at `price_per_gpu_hour` in the market chosen (its
    listed price unless the market preference lets a cheaper one in)."""
    key = order_key(hourly_price, offer)
    if price_per_gpu_hour != offer.price_per_gpu_hour:
        return (hourly_price, price_per_gpu_hour, *key[2:])
    return key


def sort_key_for(breakdown: Breakdown, preferences: Preferences, offer: MachineOffer,
                 hourly_price: Decimal, price_per_gpu_hour: Decimal | None = None) -> tuple[object, ...]:
    """The order machines are listed in: cheapest per hour (the default), or, when the user sorts by
    price per million tokens, machines with a measured speed by that price first, then the others
    cheapest per hour; ties as the default order. `price_per_gpu_hour`: the price used (default the
    listed price)."""
    price = offer.price_per_gpu_hour if price_per_gpu_hour is None else price_per_gpu_hour
    key = price_key(hourly_price, offer, price)
    if preferences.sort != SORT_PRICE_PER_MILLION:
        return key
    per_million = machine_price_per_million(breakdown, offer, price)
    return (per_million is None, per_million or Decimal(0), *key)


def _candidates(planner: FitPlanner, offers: Iterable[MachineOffer],
                preferences: Preferences) -> Iterator[_Candidate | None]:
    """Every offer that fits, as a candidate; None for one that does not."""
    preference_breaks = breaks_checker(preferences)
    market_choice = preferences.market
    for offer in offers:
        fit = planner.fit_offer(offer)  # at its kind of GPU's need (`Breakdown.gpu_kinds`)
        if fit is None:
            yield None
            continue
        market, price = offer_price(offer, market_choice)
        hourly_price = price * fit.gpus_used
        breaks = preference_breaks(offer, hourly_price)
        key = sort_key_for(planner.breakdown, preferences, offer, hourly_price, price)
        yield _Candidate(key, offer, fit, hourly_price, breaks, market, price)


def _classify(
    planner: FitPlanner, offers: Iterable[MachineOffer], preferences: Preferences, excluded: dict[str, int]
) -> tuple[list[_Candidate], list[_Candidate]]:
    """Fitting machines meeting every preference, and fitting machines breaking some, each in the
    engine's order. Too-small machines and alternatives are counted into `excluded`."""
    fitting: list[_Candidate] = []
    breaking: list[_Candidate] = []
    for candidate in _candidates(planner, offers, preferences):
        if candidate is None:
            excluded[TOO_SMALL] += 1
        elif candidate.breaks:
            breaking.append(candidate)
            excluded[BREAK_REASON[candidate.breaks[0]]] += 1
        else:
            fitting.append(candidate)
    fitting.sort(key=_by_sort_key)
    breaking.sort(key=_by_sort_key)
    return fitting, breaking


def _count_meeting_all(
    planner: FitPlanner, offers: Iterable[MachineOffer], preferences: Preferences
) -> tuple[int, _Candidate | None]:
    """How many offers fit and meet every preference, and the cheapest of them; builds no lists."""
    count = 0
    cheapest: _Candidate | None = None
    for candidate in _candidates(planner, offers, preferences):
        if candidate is None or candidate.breaks:
            continue
        count += 1
        if cheapest is None or _hourly_key(candidate) < _hourly_key(cheapest):
            cheapest = candidate
    return count, cheapest


def _hourly_key(candidate: _Candidate) -> tuple[object, ...]:
    return price_key(candidate.hourly_price, candidate.offer, candidate.price_per_gpu_hour)


def _excluded_start(excluded_before: Mapping[str, int] | None) -> dict[str, int]:
    excluded: dict[str, int] = dict.fromkeys(EXCLUDED_REASONS, 0)
    for reason, count in sorted((excluded_before or {}).items()):
        excluded[reason] = excluded.get(reason, 0) + int(count)
    return excluded


def _lower_breakdowns(breakdown: Breakdown,
                      lower_precision_breakdowns: Mapping[int, Breakdown] | None) -> dict[int, Breakdown]:
    if breakdown.precision is None:
        return {}
    return {
        precision: lower
        for precision, lower in (lower_precision_breakdowns or {}).items()
        if precision < breakdown.precision
    }


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
    alternatives, lower-precision options and the constraints applied, over every offer given.

    `excluded_before` carries the counts the catalog already left out, by reason. Every offer passes
    the availability rule here again (with `now`, staleness too), so none that breaks it is offered.
    """
    excluded = _excluded_start(excluded_before)
    stale_cutoff = now - timedelta(minutes=stale_after_minutes) if now is not None else None
    considered: list[MachineOffer] = []
    for offer in offers:
        reason = unavailable_reason(offer, stale_cutoff=stale_cutoff, countries=preferences.countries)
        if reason is None:
            considered.append(offer)
        elif reason != GONE:
            excluded[reason] += 1

    planner = FitPlanner(breakdown)
    fitting, breaking = _classify(planner, considered, preferences, excluded)
    only = {code: [c for c in breaking if c.breaks == (code,)] for code in BREAK_REASON}
    only_cheapest = {code: min(c.hourly_price for c in found) for code, found in only.items() if found}
    tally = Tally(
        considered=len(considered),
        # every machine considered is available, so its memory is known
        largest_memory_mib=max((cast(int, offer.memory_per_gpu_mib) for offer in considered), default=None),
        breaking=len(breaking),
        only={code: len(found) for code, found in only.items()},
        only_cheapest=only_cheapest,
        only_at_cheapest={
            code: sum(1 for c in found if c.hourly_price <= only_cheapest[code])
            for code, found in only.items()
            if found
        },
    )
    lower = _lower_breakdowns(breakdown, lower_precision_breakdowns)
    lower_counts = {
        precision: _count_meeting_all(FitPlanner(lower_breakdown), considered, preferences)
        for precision, lower_breakdown in lower.items()
    }
    return _assemble(
        breakdown=breakdown, preferences=preferences, planner=planner, fitting=fitting, breaking=breaking,
        fitting_total=len(fitting), tally=tally, lower_counts=lower_counts, lower_breakdowns=lower,
        excluded=excluded, stale_after_minutes=stale_after_minutes, machines_shown=machines_shown,
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
        excluded[BREAK_REASON[code]] += count
    planner = FitPlanner(breakdown)
    fitting, breaking = _classify(planner, counted.offers, preferences, dict.fromkeys(EXCLUDED_REASONS, 0))
    tally = Tally(
        considered=counted.considered,
        largest_memory_mib=counted.largest_memory_mib,
        breaking=sum(counted.breaking_first.values()),
        only=dict(counted.breaking_only),
        only_cheapest=dict(counted.breaking_only_cheapest),
        only_at_cheapest=dict(counted.breaking_only_at_cheapest),
    )
    lower = _lower_breakdowns(breakdown, lower_precision_breakdowns)
    lower_counts = {}
    for precision, lower_breakdown in lower.items():
        count = counted.lower_precisions.get(precision, PrecisionCount(0)).machines_fitting
        _, cheapest = _count_meeting_all(FitPlanner(lower_breakdown), counted.offers, preferences)
        lower_counts[precision] = (count, cheapest if count else None)
    return _assemble(
        breakdown=breakdown, preferences=preferences, planner=planner, fitting=fitting, breaking=breaking,
        fitting_total=counted.fitting, tally=tally, lower_counts=lower_counts, lower_breakdowns=lower,
        excluded=excluded, stale_after_minutes=stale_after_minutes, machines_shown=machines_shown,
    )


def _assemble(
    *,
    breakdown: Breakdown,
    preferences: Preferences,
    planner: FitPlanner,
    fitting: list[_Candidate],
    breaking: list[_Candidate],
    fitting_total: int,
    tally: Tally,
    lower_counts: Mapping[int, tuple[int, _Candidate | None]],
    lower_breakdowns: Mapping[int, Breakdown],
    excluded: dict[str, int],
    stale_after_minutes: int,
    machines_shown: int | None,
) -> Recommendation:
    describer = Describer(breakdown, preferences)
    # Only the machines shown are described (their words are the costly part); all are counted.
    shown = fitting if machines_shown is None else fitting[:machines_shown]
    machines = tuple(describer.machine(candidate) for candidate in shown)
    alternatives = tuple(describer.machine(candidate) for candidate in breaking[:ALTERNATIVES_SHOWN])

    precision_alternatives = _precision_alternatives(
        lower_breakdowns, lower_counts, fitting_total, min(fitting, key=_hourly_key) if fitting else None
    )
    empty = None
    if not machines:
        empty = wording.empty_answer(tally, planner, precision_alternatives, preferences, excluded)

    ordered_excluded = {
        reason: excluded[reason] for reason in EXCLUDED_REASONS
        if reason not in LISTED_WHEN_CHOSEN or getattr(preferences, LISTED_WHEN_CHOSEN[reason]) is not None
    }
    for reason in sorted(set(excluded) - set(EXCLUDED_REASONS)):
        ordered_excluded[reason] = excluded[reason]

    return Recommendation(
        breakdown=breakdown,
        machines=machines,
        alternatives=alternatives,
        alternatives_total=tally.breaking,
        machines_total=fitting_total,
        precision_alternatives=precision_alternatives,
        constraints=wording.constraints_applied(
            breakdown, preferences, ordered_excluded, stale_after_minutes
        ),
        excluded=ordered_excluded,
        empty=empty,
        largest_memory_mib=tally.largest_memory_mib,
    )


def _precision_alternatives(
    lower_breakdowns: Mapping[int, Breakdown],
    lower_counts: Mapping[int, tuple[int, _Candidate | None]],
    current_count: int,
    current_first: _Candidate | None,
) -> tuple[PrecisionAlternative, ...]:
    current_cheapest = current_first.hourly_price if current_first else None
    found = []
    for precision in sorted(lower_counts, reverse=True):
        count, cheapest = lower_counts[precision]
        opens_more = count > current_count
        cheaper = cheapest is not None and (
            current_cheapest is None or cheapest.hourly_price < current_cheapest
        )
        if opens_more or cheaper:
            found.append(
                PrecisionAlternative(
                    precision=precision,
                    total_gib=lower_breakdowns[precision].total_gib,
                    machines_fitting=count,
                    more_machines=count - current_count,
                    cheapest_hourly_price=cheapest.hourly_price if cheapest else None,
                    cheapest_offer_id=cheapest.offer.id if cheapest else None,
                )
            )
    return tuple(found)
