"""Reads that answer a workload query, for the wizard, the API, the CLI and Launch.

The pure engine in `sizing` turns each breakdown into fit thresholds (fewest GPUs per memory
band); the catalog counts the whole fleet against them in the database and fetches only the
machines the answer shows; the engine then orders, explains and rates those, with the counts
(`recommend_counted`). Nothing loads the whole fleet into Python. The embedded SQLite run takes the
engine over every available machine instead (`recommend_over_every_machine`), the reference the
counting path is tested against.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from functools import cached_property

from django.conf import settings
from django.db import connection
from django.db.models import Case, Count, IntegerField, Max, Min, Value, When
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.translation import gettext, gettext_lazy, pgettext

from catalog import availability
from catalog import rows as catalog_rows
from catalog.counting import countries as catalog_countries
from catalog.counting import fleet as catalog_fleet
from catalog.models import Machine
from sizing import fit as sizing_fit
from sizing import wording
from sizing.breakdown import Breakdown
from sizing.calculators import estimate
from sizing.countries import ALL_CODES
from sizing.errors import SizingError
from sizing.matching import (
    ALTERNATIVES_SHOWN,
    SORT_PRICE_PER_MILLION,
    Recommendation,
    recommend,
    recommend_counted,
)
from sizing.offers import Preferences
from sizing.other_calculators import RuleOfThumb, rule_of_thumb
from sizing.reasons import OFFLINE, STALE
from sizing.specs import PRECISIONS
from sizing.units import GIB
from sizing.weights import precision_choices, precision_label
from sizing.workloads import KINDS_BY_WORKLOAD, WIZARD_MODEL_CODES

from .query import (
    CONFIDENCE_RANK,
    DEFAULT_SORT,
    MAX_LIMIT,
    PAGE_LIMIT,
    SORTS,
    QueryError,
    WorkloadQuery,
    sort_key,
)
from .throughput import (
    ThroughputAnswer,
    cheapest_per_million,
    one_snapshot,
    planned_answer,
    speed_candidates,
)

# A sorted, filtered or grouped list is worked out over the cheapest machines that fit, up to this many.
BROWSE_LIMIT = MAX_LIMIT
# Pages reach the cheapest machines that fit, up to this many, in any order: a page past them is
# refused before anything is computed, so every page costs about the same (at most this many
# machines described). 1,000 is 40 pages of the page's 25 and 10 of the API's 100.
PAGE_WINDOW = MAX_LIMIT
CONFIDENCE_AT_LEAST = {"high": 0, "medium": 1}


@dataclass(frozen=True)
class Listing:
    """The machine list as shown: one page of the fitting machines after the result's filters, in
    the chosen order, with the groups' counts."""

    sort: str
    sort_label: str
    page: int
    pages: int
    per_page: int
    matching: int  # machines that fit, meet every preference and pass the list's filters
    browsed: int | None  # when sorting or filtering: the cheapest machines that were looked at
    groups: tuple[tuple[str, int], ...]  # (GPU model, machines) when grouped by GPU model
    gpu_types: tuple[str, ...]  # the GPU models among the machines looked at (the filter's choices)

    def to_dict(self) -> dict:
        return {
            "sort": self.sort,
            "sort_label": self.sort_label,
            "page": self.page,
            "pages": self.pages,
            "per_page": self.per_page,
            "machines_matching": self.matching,
            "sorted_among_cheapest": self.browsed,
            "groups": [{"gpu_type": name, "machines": count} for name, count in self.groups],
        }


def passes_filters(query: WorkloadQuery, machine) -> bool:
    if query.gpu and machine.offer.gpu_type.casefold() != query.gpu.casefold():
        return False
    if query.min_memory_gib is not None and machine.fit.memory_per_gpu_bytes < query.min_memory_gib * GIB:
        return False
    if query.confidence:
        return CONFIDENCE_RANK.get(machine.confidence, 9) <= CONFIDENCE_AT_LEAST[query.confidence]
    return True


def machines_to_fetch(query: WorkloadQuery, per_page: int) -> int:
    """How many of the cheapest fitting machines the answer needs described."""
    if query.lists_by_default:
        return per_page * query.page
    if query.sort == SORT_PRICE_PER_MILLION and not query.filtered and not query.group:
        # The engine orders by price per million tokens itself, and the machines with the lowest
        # join the fetched ones (`recommendation_for`): the page needs no more than it shows.
        return per_page * query.page
    return max(BROWSE_LIMIT, per_page * query.page)


def last_page(per_page: int) -> int:
    """The last page the window reaches with `per_page` machines a page."""
    return max(1, math.ceil(PAGE_WINDOW / per_page))


def check_page_in_window(page: int, per_page: int) -> None:
    """Refuses, before any work, a page past the cheapest PAGE_WINDOW machines."""
    if page > last_page(per_page):
        raise QueryError({"page": gettext(
            "The list reaches the cheapest %(window)s machines: with %(per_page)s per page, pages 1 "
            "to %(last)s. Narrow the search or sort it another way to see others."
        ) % {"window": number_format(PAGE_WINDOW, force_grouping=True), "per_page": per_page,
             "last": last_page(per_page)}})


def list_machines(query: WorkloadQuery, recommendation: Recommendation, per_page: int):
    """The page of machines to show and the listing that describes it. The default list is the
    engine's own order; any other sort, a filter or grouping works over the machines fetched."""
    fetched = list(recommendation.machines)
    if query.lists_by_default:
        chosen, matching, browsed = fetched, recommendation.machines_total, None
    else:
        chosen = sorted((m for m in fetched if passes_filters(query, m)), key=sort_key(query.sort))
        matching = len(chosen)
        browsed = len(fetched) if recommendation.machines_total > len(fetched) else None
    counts: dict[str, int] = {}
    for machine in chosen:
        counts[machine.offer.gpu_type] = counts.get(machine.offer.gpu_type, 0) + 1
    groups: tuple[tuple[str, int], ...] = ()
    if query.group == "gpu":
        place = {name: index for index, name in enumerate(counts)}  # groups in the order of their first
        chosen = sorted(chosen, key=lambda m: place[m.offer.gpu_type])  # stable: the sort within
        groups = tuple(counts.items())
    pages = max(1, math.ceil(min(matching, PAGE_WINDOW) / per_page))
    page = min(query.page, pages)
    start = (page - 1) * per_page
    shown = tuple(chosen[start:start + per_page])
    listing = Listing(
        sort=query.sort,
        sort_label=str(SORTS[query.sort].label),
        page=page,
        pages=pages,
        per_page=per_page,
        matching=matching,
        browsed=browsed,
        groups=groups,
        gpu_types=tuple(sorted({m.offer.gpu_type for m in fetched}, key=str.casefold)),
    )
    return shown, listing

RULE_OF_THUMB_PRECISION = {16: "FP16", 8: "INT8", 4: "INT4"}
# The page lists a plan's first machines and their lines of the formula; the rest on request
# (`plan_rows=all`). The API and the command always give every machine.
PLAN_ROWS_SHOWN = 10


@dataclass
class WizardResult:
    query: WorkloadQuery
    breakdown: Breakdown
    model: object | None  # the catalog row sized, for its name, license and source link
    recommendation: Recommendation | None = None
    freshness: dict = field(default_factory=dict)
    stale_after_minutes: int = 0
    throughput: ThroughputAnswer | None = None  # when the query asks for a throughput plan
    listing: Listing | None = None
    plan_rows_shown: int | None = PLAN_ROWS_SHOWN  # None: every machine of each plan

    @cached_property
    def data(self) -> dict:
        """The API's JSON, plus the words and links the page shows beside it."""
        data = self.recommendation.to_dict()
        data["throughput_plan"] = self.throughput.to_dict() if self.throughput is not None else None
        for alternative in data["precision_alternatives"]:
            alternative["query"] = self.query.as_query_string(precision=alternative["precision"])
        for hint in data["relax"]:
            hint["query"] = self.relax_query(hint["changes"])
        data["empty_opening"] = self.recommendation.empty.opening if self.recommendation.empty else None
        if data["throughput_plan"]:
            for plan in data["throughput_plan"]["plans"]:
                self._plan_rows(plan)
        return data

    def _plan_rows(self, plan: dict) -> None:
        """What the page lists of a plan: its first machines, the formula's lines for those (one per
        machine with productive copies, in the same order) and every line after them."""
        shown = len(plan["machines"]) if self.plan_rows_shown is None else self.plan_rows_shown
        machine_lines = sum(1 for machine in plan["machines"] if machine["productive_copies"])
        lines_shown = min(machine_lines, sum(1 for m in plan["machines"][:shown] if m["productive_copies"]))
        plan["machines_shown"] = plan["machines"][:shown]
        plan["machines_more"] = len(plan["machines"]) - len(plan["machines_shown"])
        plan["steps_shown"] = plan["steps"][:lines_shown]
        plan["steps_more"] = machine_lines - lines_shown
        plan["steps_after"] = plan["steps"][machine_lines:]

    def relax_query(self, changes: dict[str, str]) -> str | None:
        """The query string of this query with an empty answer's hint applied (None: a note)."""
        return self.query.as_query_string(**changes, page=None) if changes else None

    @property
    def every_plan_row_query(self) -> str:
        return self.query.as_query_string() + "&plan_rows=all"  # keeps gpu_plans: a field of the query

    def page_query(self, page: int) -> str:
        return self.query.as_query_string(page=page if page != 1 else None)

    @property
    def gpu_plans_query(self) -> str | None:
        """This result with the cheapest plan on each GPU type too (None when it has them or no plan)."""
        if self.throughput is None or self.query.gpu_plans or not self.throughput.plans:
            return None
        every_row = "&plan_rows=all" if self.plan_rows_shown is None else ""  # not a field of the query
        return self.query.as_query_string(gpu_plans=1) + every_row

    @property
    def pages(self) -> list[dict]:
        """Links to the pages around this one (first, last and two either side)."""
        listing = self.listing
        numbers = sorted(
            {1, listing.pages, *range(max(1, listing.page - 2), min(listing.pages, listing.page + 2) + 1)}
        )
        return [{"number": n, "query": self.page_query(n), "current": n == listing.page} for n in numbers]

    @property
    def sorted_by_choice(self) -> bool:
        return self.query.sort != DEFAULT_SORT

    @cached_property
    def has_community(self) -> bool:
        rec = self.recommendation
        return any(m.offer.tier == "community" for m in [*rec.machines, *rec.alternatives])

    @cached_property
    def bar(self) -> dict | None:
        """Per-GPU need, item by item, against the GPU of the cheapest machine shown."""
        rec = self.recommendation
        shown = rec.machines or rec.alternatives
        if not shown:
            return None
        first = shown[0]
        gpus = first.fit.gpus_used
        memory = first.fit.memory_per_gpu_bytes
        scale = max(memory, first.fit.need_per_gpu_bytes)
        segments, x = [], 0.0
        split_items = self.breakdown.split_items if gpus > 1 else ()
        for item in (*self.breakdown.items, *split_items):
            share = item.bytes if item.per_gpu or item in split_items else math.ceil(item.bytes / gpus)
            width = 100.0 * share / scale
            segments.append({"name": item.name, "gib": share / GIB, "x": f"{x:.3f}", "width": f"{width:.3f}"})
            x += width
        return {
            "segments": segments,
            "gpus_used": gpus,
            "gpu_type": first.offer.gpu_type,
            "need_gib": first.fit.need_per_gpu_bytes / GIB,
            "memory_gib": memory / GIB,
            "memory_x": f"{min(99.6, 100.0 * memory / scale):.3f}",
        }

    @cached_property
    def rule_of_thumb(self) -> RuleOfThumb | None:
        """The rule of thumb, shown beside the detailed figure for language-model inference."""
        if self.breakdown.workload != "inference" or self.model is None:
            return None
        parameters = getattr(self.model, "parameters", None)
        label = RULE_OF_THUMB_PRECISION.get(self.query.precision)
        if not parameters or label is None or not hasattr(self.model, "kv_heads"):
            return None
        return rule_of_thumb(parameters, label)


def stale_cutoff(now: datetime) -> datetime:
    return now - timedelta(seconds=settings.MACHINE_STALE_AFTER_SECONDS)


def estimate_for(
    query: WorkloadQuery, precision: int | None = None, model_row=None
) -> tuple[Breakdown, object | None]:
    """The memory breakdown for a query (at another precision when given; `model_row` saves the
    lookup when the caller already has the row)."""
    spec = None
    if query.workload == "notebook":
        model_row = None  # a notebook sizes GPU memory as entered: no model, no model's config
    else:
        model_row = model_for_workload(query.model_slug, query.workload, model_row)
        if model_row is None:
            raise QueryError({"model": gettext("No model %(slug)s in the catalog suits this workload.") % {
                "slug": repr(query.model_slug)
            }})
        spec = catalog_rows.model_spec(model_row)
    try:
        breakdown = estimate(
            query.workload,
            spec,
            precision=precision or query.precision,
            context=query.context,
            requests=query.requests,
            memory_gib=float(query.memory_gib) if query.memory_gib is not None else None,
            kv_bits=query.kv_bits,
        )
    except SizingError as error:
        raise QueryError({error.field: error.message}) from error
    return breakdown, model_row


def recommendation_for(
    query: WorkloadQuery,
    now: datetime | None = None,
    default_limit: int | None = PAGE_LIMIT,
    model_row=None,
    relax: bool = True,
) -> WizardResult:
    """The whole answer to a query (`model_row`: the caller's copy of the model's row, if any;
    `relax`: an empty answer also says what relaxing the countries, context or requests opens).
    On PostgreSQL all of it is read from one snapshot, so a refresh committing meanwhile never mixes
    into it (its counts, machines and plan agree)."""
    with one_snapshot():
        return _recommendation_for(query, now, default_limit, model_row, relax)


def _recommendation_for(
    query: WorkloadQuery, now: datetime | None, default_limit: int | None, model_row, relax: bool
) -> WizardResult:
    now = now or timezone.now()
    breakdown, model_row = estimate_for(query, model_row=model_row)
    lower = {}
    if query.precision is not None:
        for precision in PRECISIONS:
            if precision < query.precision:
                try:
                    lower[precision], _ = estimate_for(query, precision, model_row)
                except QueryError:
                    continue
    per_page = query.limit or default_limit or MAX_LIMIT
    check_page_in_window(query.page, per_page)
    machines_shown = machines_to_fetch(query, per_page)
    stale_minutes = settings.MACHINE_STALE_AFTER_SECONDS // 60
    candidates, with_speed = None, 0
    if query.target_tokens is not None and breakdown.workload != "inference":
        raise QueryError({
            "target_tokens": gettext("A throughput plan is for language models; this one serves none.")
        })
    if query.target_tokens is not None or query.sort == SORT_PRICE_PER_MILLION:
        keep = per_page * query.page if query.sort == SORT_PRICE_PER_MILLION else 0
        candidates, with_speed = speed_candidates(
            query, breakdown, stale_cutoff(now), preferences_for(query), keep=keep
        )
    if connection.vendor == "postgresql":
        # Sorted by price per million tokens, the first machines are those with the lowest; the
        # counting query fetches the cheapest per hour, so these join them.
        by_per_million = query.sort == SORT_PRICE_PER_MILLION and candidates
        extra = cheapest_per_million(candidates, per_page * query.page) if by_per_million else []
        recommendation, freshness = _recommend_counted_in_sql(
            query, breakdown, lower, now, machines_shown, extra
        )
    else:
        # The embedded SQLite run: the counting SQL is written for PostgreSQL, and the fleet is small.
        recommendation, freshness = recommend_over_every_machine(query, breakdown, lower, now, machines_shown)
    if relax and not recommendation.machines_total and recommendation.empty is not None:
        recommendation = explain_empty(query, breakdown, lower, model_row, now, recommendation)
    throughput = None
    if query.target_tokens is not None:
        name = getattr(model_row, "name", query.model_slug)
        throughput = planned_answer(
            query, breakdown, candidates, recommendation.machines_total, name, with_speed,
            lambda: speed_candidates(query, breakdown, stale_cutoff(now), preferences_for(query), keep=keep),
        )
    shown, listing = list_machines(query, recommendation, per_page)
    return WizardResult(
        query=query,
        breakdown=breakdown,
        model=model_row,
        recommendation=replace(recommendation, machines=shown),
        freshness={**freshness, "as_of": now},
        stale_after_minutes=stale_minutes,
        throughput=throughput,
        listing=listing,
    )


# --- what to relax when nothing meets every constraint ----------------------------------------------

def _meeting_all(
    query: WorkloadQuery, breakdown: Breakdown, now: datetime, shown: int | None
) -> Recommendation:
    """The machines that fit `breakdown` and meet every preference of `query` (the cheapest `shown`;
    all with None)."""
    if connection.vendor == "postgresql":
        recommendation, _ = _recommend_counted_in_sql(query, breakdown, {}, now, shown)
    else:
        recommendation, _ = recommend_over_every_machine(query, breakdown, {}, now, shown)
    return recommendation


def _meeting_all_by_country(
    query: WorkloadQuery, breakdown: Breakdown, now: datetime
) -> tuple[int, list[tuple[str, Decimal]]]:
    """How many machines fit `breakdown` and meet every preference of `query`, and each country
    holding them with its cheapest hourly price there, cheapest first (ties by country code)."""
    if connection.vendor == "postgresql":
        found = catalog_countries.meeting_by_country(_fleet_query(query, [breakdown], now))
        countries = [(country, cheapest) for country, cheapest, _ in found]
        return sum(machines for _, _, machines in found), countries
    # The embedded run's fleet is small: every machine is described.
    found = _meeting_all(query, breakdown, now, None)
    cheapest: dict[str, Decimal] = {}
    for machine in found.machines:
        country, hourly = machine.offer.country, machine.hourly_price
        if country not in cheapest or hourly < cheapest[country]:
            cheapest[country] = hourly
    return found.machines_total, sorted(cheapest.items(), key=lambda item: (item[1], item[0]))


def _size_noun(query: WorkloadQuery, field_name: str, model_row) -> str:
    if getattr(model_row, "kind", None) == "speech":
        return "streams"
    if query.workload == "finetune":
        return "sequence_length" if field_name == "context" else "batch_size"
    return field_name


def last_report() -> datetime | None:
    """When any machine of the fleet last reported (None: none ever has)."""
    return Machine.objects.filter(availability.in_fleet_q()).aggregate(newest=Max("last_seen_at"))["newest"]


def explain_empty(
    query: WorkloadQuery,
    breakdown: Breakdown,
    lower: dict[int, Breakdown],
    model_row,
    now: datetime,
    recommendation: Recommendation,
) -> Recommendation:
    """An empty answer, said as it is: when no machine anywhere has reported within the staleness
    window, that availability is unknown; otherwise what to change, each hint with the machines the
    changed query finds (see `relax_hints`)."""
    if not recommendation.alternatives_total:
        reported = last_report()
        if reported is None or reported < stale_cutoff(now):
            opening = wording.silent_fleet_words(reported, now, settings.MACHINE_STALE_AFTER_SECONDS // 60)
            return replace(recommendation, empty=wording.EmptyAnswer(opening), fleet_silent=True)
    hints = relax_hints(query, breakdown, lower, model_row, now, recommendation)
    return replace(recommendation, empty=wording.EmptyAnswer(recommendation.empty.opening, tuple(hints)))


def _changed(query: WorkloadQuery, changes) -> WorkloadQuery:
    """The query with a hint's changes applied, as following the hint's link gives it."""
    values = dict(changes)
    if "countries" in values:
        codes = tuple(values.pop("countries"))
        values.update(countries=frozenset(codes), countries_input=codes)
    return replace(query, **values)


def _opening(base: WorkloadQuery, breakdown: Breakdown, now: datetime, as_is: bool = True):
    """What `base` finds at `breakdown` (unless `as_is` is False: it is known to find nothing); when
    nothing, the smallest change of its price limit and budget, then of its tier as well, that
    finds some: (limits changed, machines, [(country, cheapest hourly price)]) or None."""
    if as_is:
        machines, countries = _meeting_all_by_country(base, breakdown, now)
        if machines:
            return (), machines, countries
    liftings = []
    if base.max_price is not None or base.budget is not None:
        liftings.append(replace(base, max_price=None, budget=None))
    if base.tier != "both":
        liftings.append(replace(base, max_price=None, budget=None, tier="both"))
    for lifted in liftings:
        machines, countries = _meeting_all_by_country(lifted, breakdown, now)
        if not machines:
            continue
        value = wording.settable(countries[0][1])
        limits = []
        if lifted.tier != base.tier:
            limits.append(("tier", "both"))
        if base.max_price is not None and value > base.max_price:
            limits.append(("max_price", value))
        if base.budget is not None and value > base.budget:
            limits.append(("budget", value))
        machines, countries = _meeting_all_by_country(_changed(base, limits), breakdown, now)
        return (tuple(limits), machines, countries) if machines else None
    return None


def relax_hints(
    query: WorkloadQuery,
    breakdown: Breakdown,
    lower: dict[int, Breakdown],
    model_row,
    now: datetime,
    recommendation: Recommendation,
) -> list[wording.Hint]:
    """For an empty answer, each change to the query that opens machines, as the engine and this
    module find them: lifting the tier, the price limit or the budget alone (the engine's); a lower
    precision; the machines outside the chosen countries, at this precision and at each lower one;
    and, when no machine fits at all, the largest context and requests that fit. Where one change
    alone opens nothing, the hint adds the price limit, budget or tier to set as well. Each hint's
    figures are those of the changed query, counted as the answer counts (the kept counts on
    PostgreSQL, a scan of the fleet on the embedded run): following its link shows them."""
    hints = []
    for hint in recommendation.empty.hints:
        changes = dict(hint.changes)
        code = next((name for name in ("max_price", "budget") if name in changes), None)
        if code is not None and changes[code] != hint.cheapest_hourly:
            # The value to set is rounded up to whole cents: count what it opens.
            meeting = _meeting_all(_changed(query, hint.changes), breakdown, now, 1)
            hint = wording.limit_hint(code, hint.cheapest_hourly, meeting.machines_total, hint.single)
        hints.append(hint)
    preferences = preferences_for(query)
    opened = {alt.precision for alt in recommendation.precision_alternatives if alt.machines_fitting}
    outside = None
    if query.countries is not None:
        # Outside the chosen countries: every other ISO code (unknown locations stay out, as always).
        outside = replace(query, countries=ALL_CODES - query.countries, countries_input=())
    # A lower precision is named only where it costs less than what is named already.
    cheapest_here = min((h.cheapest_hourly for h in hints if h.cheapest_hourly is not None), default=None)
    cheapest_outside = None
    for precision in [query.precision, *sorted(lower, reverse=True)]:
        at = breakdown if precision == query.precision else lower[precision]
        bits = None if precision == query.precision else precision
        if bits is not None and bits in opened:
            continue  # the engine names it
        limited = query.max_price is not None or query.budget is not None or query.tier != "both"
        if bits is not None and limited:
            found = _opening(query, at, now, as_is=False)
            if found:  # in the chosen countries: nothing to say of elsewhere at this precision
                limits, machines, countries = found
                cheapest = countries[0][1]
                if cheapest_here is None or cheapest < cheapest_here:
                    cheapest_here = cheapest
                    hints.append(wording.Hint(
                        wording.relaxed_words(machines, cheapest, bits=bits, limits=limits),
                        (("precision", bits), *limits), machines, cheapest,
                    ))
                continue
        if outside is None:
            continue
        found = _opening(outside, at, now)
        if not found:
            continue
        limits, machines, countries = found
        cheapest = countries[0][1]
        if cheapest_outside is not None and cheapest >= cheapest_outside:
            continue  # a lower precision outside is worth naming only when it costs less
        cheapest_outside = cheapest
        codes = tuple(country for country, _ in countries)
        changes = (("countries", codes), *((("precision", bits),) if bits else ()), *limits)
        hints.append(wording.Hint(
            wording.relaxed_words(
                machines, cheapest, outside=preferences, bits=bits, countries=codes, limits=limits
            ),
            changes, machines, cheapest,
        ))
    smaller = _smaller_sizes(query, breakdown, model_row) if not recommendation.alternatives_total else []
    for field_name, (value, machines, cheapest) in _largest_that_fit(query, smaller, now).items():
        hints.append(wording.Hint(
            wording.relax_size_words(_size_noun(query, field_name, model_row), value, machines, cheapest),
            ((field_name, value),), machines, cheapest,
        ))
    return hints


def _smaller_sizes(query: WorkloadQuery, breakdown: Breakdown, model_row) -> list[tuple[str, int, Breakdown]]:
    """The context and the requests halved again and again, each with its (smaller) need: the
    figures a size hint may name, largest first per field. A halving that does not lower the need
    (a speech model's fixed window) or that the engine refuses is left out."""
    smaller = []
    for field_name in ("context", "requests"):
        current = getattr(query, field_name)
        if current is None or current <= 1 or breakdown.workload not in ("inference", "finetune"):
            continue
        value = current // 2
        while value >= 1:
            try:
                need, _ = estimate_for(replace(query, **{field_name: value}), model_row=model_row)
            except QueryError:
                need = None
            if need is not None and need.total_bytes < breakdown.total_bytes:
                smaller.append((field_name, value, need))
            value //= 2
    return smaller


def _largest_that_fit(
    query: WorkloadQuery, smaller: list[tuple[str, int, Breakdown]], now: datetime
) -> dict[str, tuple[int, int, Decimal | None]]:
    """Per field, the largest of `smaller`'s figures at which some machine fits and meets every
    preference: (figure, machines, cheapest hourly price). On PostgreSQL one counting query counts
    every figure at once (each is one more set of fit thresholds over the kept counts); the embedded
    run, whose fleet is small, searches the halvings (fewer tokens or requests never need more)."""
    found: dict[str, tuple[int, int, Decimal | None]] = {}
    if not smaller:
        return found
    if connection.vendor == "postgresql":
        fleet = catalog_fleet.counted_fleet(
            _fleet_query(query, [need for _, _, need in smaller], now)
        )
        counted = fleet.counted
        for index, (field_name, value, _) in enumerate(smaller):
            machines = counted.fitting if index == 0 else counted.lower_precisions[index].machines_fitting
            if machines and field_name not in found:
                found[field_name] = (value, machines, fleet.cheapest_meeting.get(index))
        return found
    for field_name in dict.fromkeys(name for name, _, _ in smaller):
        figures = [(value, need) for name, value, need in smaller if name == field_name]
        low, high = 0, len(figures) - 1
        while low <= high:
            middle = (low + high) // 2
            meeting = _meeting_all(query, figures[middle][1], now, 1)
            if meeting.machines_total:
                cheapest = meeting.machines[0].hourly_price if meeting.machines else None
                found[field_name] = (figures[middle][0], meeting.machines_total, cheapest)
                high = middle - 1
            else:
                low = middle + 1
    return found


def _fleet_query(
    query: WorkloadQuery, breakdowns: list[Breakdown], now: datetime, machines_shown: int = 0,
    alternatives_shown: int = 0, lower_shown: int = 0,
) -> catalog_fleet.FleetQuery:
    """The query as the catalog counts it: one set of fit thresholds per breakdown, the first the
    one the machines shown are for (by default counts alone, no machine fetched)."""
    return catalog_fleet.FleetQuery(
        stale_cutoff=stale_cutoff(now),
        countries=query.countries,
        fits=tuple(sizing_fit.fit_thresholds(breakdown) for breakdown in breakdowns),
        tier=query.tier,
        max_price_per_hour=query.max_price,
        budget=query.budget,
        machines_shown=machines_shown,
        alternatives_shown=alternatives_shown,
        lower_shown=lower_shown,
    )


def _recommend_counted_in_sql(
    query: WorkloadQuery,
    breakdown: Breakdown,
    lower: dict[int, Breakdown],
    now: datetime,
    machines_shown: int,
    extra_ids: list[int] = (),
) -> tuple[Recommendation, dict]:
    """PostgreSQL counts the whole fleet and fetches only the machines the answer shows (and the
    machines `extra_ids` names, for another order than the default)."""
    lower_order = sorted(lower, reverse=True)
    fleet = catalog_fleet.counted_fleet(
        _fleet_query(
            query, [breakdown, *(lower[precision] for precision in lower_order)], now, machines_shown,
            alternatives_shown=ALTERNATIVES_SHOWN, lower_shown=1,
        )
    )
    # The catalog numbers lower precisions by their place in `fits`; the engine keys them by bits.
    offers = fleet.counted.offers
    missing = sorted(set(extra_ids) - {offer.id for offer in offers})
    if missing:
        offers += tuple(catalog_rows.machine_offers(Machine.objects.filter(pk__in=missing)))
    counted = replace(
        fleet.counted,
        offers=offers,
        lower_precisions={
            lower_order[index - 1]: count for index, count in fleet.counted.lower_precisions.items()
        },
    )
    recommendation = recommend_counted(
        breakdown,
        counted,
        preferences_for(query),
        lower_precision_breakdowns=lower,
        excluded_before=fleet.left_out,
        stale_after_minutes=settings.MACHINE_STALE_AFTER_SECONDS // 60,
        machines_shown=machines_shown,
    )
    return recommendation, {"newest": fleet.newest, "oldest": fleet.oldest}


def recommend_over_every_machine(
    query: WorkloadQuery,
    breakdown: Breakdown,
    lower: dict[int, Breakdown],
    now: datetime,
    machines_shown: int,
    shuffle=None,
) -> tuple[Recommendation, dict]:
    """The engine over every machine the catalog may offer, counted with the ORM: the embedded
    run's path, and the reference the SQL path is tested against (`shuffle` reorders the offers,
    to show the answer does not depend on the order machines come in)."""
    cutoff = stale_cutoff(now)
    status = Case(
        *(
            When(availability.fails_q(check, cutoff, query.countries), then=Value(number))
            for number, check in availability.counted_checks()
        ),
        default=Value(availability.SCREENED),
        output_field=IntegerField(),
    )
    groups = (
        Machine.objects.filter(availability.in_fleet_q())
        .annotate(status=status)
        .values("status")
        .annotate(machines=Count("id"), newest=Max("last_seen_at"), oldest=Min("last_seen_at"))
        .order_by("status")
    )
    excluded_before = dict.fromkeys(availability.COUNTED_REASONS, 0)
    not_fresh = {availability.STATUS_OF_REASON[OFFLINE], availability.STATUS_OF_REASON[STALE]}
    newest = oldest = None
    for group in groups:
        if group["status"] != availability.SCREENED:
            excluded_before[availability.REASON_OF_STATUS[group["status"]]] += group["machines"]
        if group["status"] not in not_fresh:
            newest = group["newest"] if newest is None else max(newest, group["newest"])
            oldest = group["oldest"] if oldest is None else min(oldest, group["oldest"])
    offers = catalog_rows.machine_offers(
        Machine.objects.filter(availability.available_q(cutoff, query.countries))
    )
    if shuffle is not None:
        shuffle(offers)
    recommendation = recommend(
        breakdown,
        offers,
        preferences_for(query),
        lower_precision_breakdowns=lower,
        excluded_before=excluded_before,
        now=now,
        stale_after_minutes=settings.MACHINE_STALE_AFTER_SECONDS // 60,
        machines_shown=machines_shown,
    )
    return recommendation, {"newest": newest, "oldest": oldest}


def preferences_for(query: WorkloadQuery) -> Preferences:
    return Preferences(
        budget=query.budget,
        max_price_per_hour=query.max_price,
        tier=query.tier,
        countries=query.countries,
        countries_input=query.countries_input,
        sort=query.sort,
    )


# --- the catalog's models, as the wizard and the API list them ------------------------------------

KIND_LABELS = {
    "language": gettext_lazy("Language model"),
    "speech": gettext_lazy("Speech recognition"),
    "image": gettext_lazy("Image generation"),
}


def model_row(slug: str | None):
    """The active catalog row with this slug, of any kind; None when there is none."""
    return catalog_rows.get_model(slug) if slug else None


def suits(row, workload: str) -> bool:
    return row.kind in KINDS_BY_WORKLOAD.get(workload, ())


def model_for_workload(slug: str | None, workload: str, row=None):
    """The active catalog row with this slug, if its kind suits the workload (`row`: the caller's
    copy of that row, to spare the lookup)."""
    if row is None or row.slug != slug:
        row = model_row(slug)
    return row if row is not None and suits(row, workload) else None


_FIGURE = r"\d+(?:\.\d+)?[KMBT]"
# The model cards' figures as the catalog writes them, in the page's language.
_PUBLISHED = (
    (re.compile(rf"^(?P<total>{_FIGURE}) total / (?P<active>{_FIGURE}) active$"),
     gettext_lazy("%(total)s total · %(active)s active")),
    (re.compile(rf"^(?P<total>{_FIGURE}) \(incl\. (?P<part>{_FIGURE}) (?P<name>\S+) vision encoder\)$"),
     gettext_lazy("%(total)s, with the %(part)s %(name)s vision encoder")),
    (re.compile(rf"^(?P<card>{_FIGURE}) \(card\) / (?P<config>{_FIGURE}) \(config\)$"),
     gettext_lazy("%(card)s (model card) / %(config)s (config)")),
    (re.compile(rf"^(?P<card>{_FIGURE}) \(card\) / (?P<config>{_FIGURE}) \(checkpoint\)$"),
     gettext_lazy("%(card)s (model card) / %(config)s (checkpoint)")),
    (re.compile(rf"^(?P<total>{_FIGURE})(?P<rest>( \S+)?)$"), "%(total)s%(rest)s"),
)


def _figure(text: str) -> str:
    """"5.1B" in the page's language ("5,1B" in German)."""
    if not re.fullmatch(_FIGURE, text):
        return text
    return f"{number_format(Decimal(text[:-1]))}{text[-1]}"


def published_display(published: str) -> str:
    """A model card's parameter figure, in the page's language; as written when of another form."""
    for pattern, words in _PUBLISHED:
        match = pattern.match(published)
        if match:
            return str(words) % {key: _figure(value) for key, value in match.groupdict().items()}
    return published


def _parameters_display(parameters: int | None, published: str) -> str:
    if published:
        return published_display(published)
    if parameters is None:
        return pgettext("parameters", "not published")
    for factor, suffix in ((10**9, "B"), (10**6, "M")):
        if parameters >= factor:
            return f"{number_format(Decimal(f'{parameters / factor:.2f}'), 2)}{suffix}"
    return number_format(parameters, force_grouping=True)


def _count_display(parameters: int | None) -> str:
    return _parameters_display(parameters, "")


def precision_options(row) -> list[dict]:
    """The precisions a model can be run in, each with its label, or the reason it is not offered."""
    if row.kind != "language":
        return [{"value": bits, "label": f"{bits}-bit", "available": True, "reason": ""}
                for bits in (16, 8, 4)]
    spec = catalog_rows.model_spec(row)
    refused = precision_choices(spec)
    return [
        {"value": bits, "label": precision_label(spec, bits), "available": refused[bits] is None,
         "reason": refused[bits] or ""}
        for bits in (16, 8, 4)
    ]


def _choice(row) -> dict:
    group = catalog_rows.model_group(row)
    active = getattr(row, "active_parameters", None)
    return {
        "slug": row.slug,
        "name": row.name,
        "kind": row.kind,
        "kind_label": KIND_LABELS[row.kind],
        "group": group,
        "group_label": catalog_rows.MODEL_GROUPS[group],
        "parameters": row.parameters,
        "active_parameters": active,
        "parameters_display": _parameters_display(row.parameters, row.parameters_published),
        # The page shows the recount (the figure memory is sized by); the card's figure, with what it
        # is, in the title.
        "published_note": (
            gettext(
                "Counted from the configuration, embeddings included; published: %(published)s"
            ) % {"published": published_display(row.parameters_published)}
            if row.parameters_published else gettext("Counted from the configuration, embeddings included")
        ),
        "total_display": _count_display(row.parameters),
        "active_display": _count_display(active) if active else "",
        "counts_display": (
            gettext("%(total)s total · %(active)s active")
            % {"total": _count_display(row.parameters), "active": _count_display(active)}
            if active else _count_display(row.parameters)
        ),
        "license": row.license,
        "config_url": row.config_url,
        "missing": row.missing_values(),
        "precisions": precision_options(row),
    }


def model_choices(workload: str, search: str = "") -> list[dict]:
    """Models that suit the workload (none for a notebook), filtered by a name search."""
    if not KINDS_BY_WORKLOAD.get(workload):
        return []
    needle = search.casefold()
    return [
        _choice(row)
        for row in catalog_rows.models_for_workload(workload)
        if not needle or needle in row.name.casefold() or needle in row.slug
    ]


def model_choice(row) -> dict | None:
    return _choice(row) if row is not None else None


FIGURE_FIELDS = {
    "language": ("parameters", "active_parameters", "layers", "attention_heads", "kv_heads", "head_dim",
                 "hidden_size", "intermediate_size", "vocab_size", "max_context", "tied_embeddings",
                 "architecture"),
    "speech": ("parameters", "encoder_layers", "decoder_layers", "d_model", "attention_heads",
               "max_source_positions", "max_target_positions", "vocab_size"),
    "image": ("native_resolution",),
}


def model_listing(workload: str | None) -> list[dict]:
    """Every active model (or those suiting a workload) with its published figures, for the API."""
    workloads = [workload] if workload else list(WIZARD_MODEL_CODES)
    seen: dict[str, dict] = {}
    for name in workloads:
        for row in catalog_rows.models_for_workload(name):
            entry = seen.get(row.slug)
            if entry is None:
                figures = {field: getattr(row, field) for field in FIGURE_FIELDS[row.kind]}
                if row.kind == "image":
                    figures["components"] = [
                        {"name": c.name, "role": c.role, "parameters": c.parameters}
                        for c in row.components.all()
                    ]
                entry = seen[row.slug] = {
                    **_choice(row),
                    "workloads": [],
                    "parameters_published": row.parameters_published,
                    "figures": figures,
                }
                for display_only in ("parameters_display", "kind_label", "group_label", "counts_display",
                                     "published_note", "total_display", "active_display"):
                    entry.pop(display_only)
            for suited in WIZARD_MODEL_CODES:
                if suits(row, suited) and suited not in entry["workloads"]:
                    entry["workloads"].append(suited)
    return list(seen.values())
