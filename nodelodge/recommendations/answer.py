"""The answer to a workload query, for the wizard, the API, the CLI and Launch.

The pure engine in `sizing` turns each breakdown into fit thresholds (fewest GPUs per memory band);
the fleet reader (`fleet`) counts the whole fleet against them and describes only the machines the
answer shows; the engine then orders, explains and rates those, with the counts. An empty answer says
what to relax (`relax`), a throughput target adds its plan (`throughput`), and the listing (`listing`)
cuts the page to show. A language model served for inference also gets its clusters (`clusters`) when no
single machine fits, or when asked.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import cast

from django.utils import timezone
from django.utils.translation import gettext

from catalog import database
from nodelodge.hardening.deadline import check_deadline
from nodelodge.hardening.slots import dear_answer_slot
from sizing import i18n
from sizing.breakdown import Breakdown
from sizing.describing import plan_refusal, serves_tokens, speeds_price_the_answer
from sizing.limits import API_LIMIT, MAX_LIMIT, PAGE_LIMIT
from sizing.matching import SORT_PRICE_PER_MILLION, Recommendation

from .clusters import (
    ClusterAnswer,
    cluster_constraint,
    cluster_hint,
    clusters_for,
    plans_clusters,
    wants_clusters,
)
from .estimate import estimate_for, lower_precision_estimates
from .fleet import fleet_reader, preferences_for, stale_after_minutes, stale_cutoff
from .listing import Listing, check_page_in_window, cost_in_first_pages, list_machines, machines_to_fetch
from .query import Conflict, WorkloadQuery
from .relax import explain_empty
from .throughput import (
    SpeedCandidate,
    ThroughputAnswer,
    cheapest_per_million,
    planned_answer,
    speed_candidates,
)


@dataclass(frozen=True)
class Answer:
    """Everything an answer says: the need, the machines with their counts, the plan, the list."""

    query: WorkloadQuery
    breakdown: Breakdown
    model: object | None  # the catalog row sized, for its name, license and source link
    recommendation: Recommendation | None = None
    freshness: dict = field(default_factory=dict)
    stale_after_minutes: int = 0
    throughput: ThroughputAnswer | None = None  # when the query asks for a throughput plan
    listing: Listing | None = None
    clusters: ClusterAnswer | None = None  # when planned (`clusters.wants_clusters`)

    def relax_query(self, changes: dict[str, str]) -> str | None:
        """The query string of this query with an empty answer's hint applied (None: a note)."""
        return self.query.as_query_string(**changes, page=None) if changes else None


def recommendation_for(
    query: WorkloadQuery,
    now: datetime | None = None,
    default_limit: int | None = PAGE_LIMIT,
    model_row=None,
    relax: bool = True,
    shed_when_busy: bool = False,
) -> Answer:
    """The whole answer to a query (`model_row`: the caller's copy of the model's row, if any;
    `relax`: an empty answer also says what relaxing the countries, context or requests opens, and the
    answer plans its clusters; without it, as Launch and the watches read the machines alone, neither;
    `shed_when_busy`: a visitor's page or API call, whose dear answer needs a slot, `SlotsTaken` if none).
    On PostgreSQL all of it is read from one snapshot, so a refresh committing meanwhile never mixes
    into it (its counts, machines and plan agree)."""
    # A visitor's dear answers a few at a time across the console (hardening/slots.py); Launch, the
    # watches' worker and the command never wait for a slot nor are refused one.
    dear = shed_when_busy and is_dear(query, default_limit)
    slot = dear_answer_slot() if dear else contextlib.nullcontext()
    with slot, database.one_snapshot(), i18n.words_remembered():
        return _recommendation_for(query, now, default_limit, model_row, relax)


# Past this many first pages' worth of machines an answer is dear (a list of 1,000 at 100,000 machines
# costs about a third of a second, ten of the API's first pages).
DEAR_FIRST_PAGES = 3


def is_dear(query: WorkloadQuery, default_limit: int | None) -> bool:
    """Whether this answer costs many plain ones: a throughput plan, or a list longer or deeper than
    DEAR_FIRST_PAGES first pages (`listing.cost_in_first_pages`, the rate limits' weight too)."""
    if query.target_tokens is not None:
        return True
    first_page = default_limit or API_LIMIT
    per_page = query.limit or first_page
    return cost_in_first_pages(query.page, per_page, first_page) > DEAR_FIRST_PAGES


def _recommendation_for(
    query: WorkloadQuery, now: datetime | None, default_limit: int | None, model_row, relax: bool
) -> Answer:
    now = now or timezone.now()
    breakdown, model_row = estimate_for(query, model_row=model_row)
    lower = lower_precision_estimates(query, model_row)
    per_page = query.limit or default_limit or MAX_LIMIT
    check_page_in_window(query.page, per_page)
    machines_shown = machines_to_fetch(query, per_page)
    candidates, with_speed = None, 0
    if query.target_tokens is not None and not serves_tokens(breakdown):
        raise Conflict({
            "target_tokens": gettext("A throughput plan is for language models; this one serves none.")
        })
    refusal = plan_refusal(breakdown)
    if query.target_tokens is not None and refusal is not None:
        raise Conflict({"target_tokens": refusal})
    check_deadline()
    # With layers on the CPU no measured speed prices a machine: the sort lists them all by price per hour.
    if query.target_tokens is not None or (query.sort == SORT_PRICE_PER_MILLION
                                           and speeds_price_the_answer(breakdown)):
        keep = per_page * query.page if query.sort == SORT_PRICE_PER_MILLION else 0
        candidates, with_speed = speed_candidates(
            query, breakdown, stale_cutoff(now), preferences_for(query), keep=keep
        )
    # Sorted by price per million tokens, the first machines are those with the lowest: they join the
    # cheapest per hour that the reader fetches.
    by_per_million = query.sort == SORT_PRICE_PER_MILLION and candidates
    extra = cheapest_per_million(candidates, per_page * query.page) if by_per_million and candidates else []
    check_deadline()
    recommendation, freshness = fleet_reader().recommend(query, breakdown, lower, now, machines_shown, extra)
    check_deadline()
    if relax and not recommendation.machines_total and recommendation.empty is not None:
        recommendation = explain_empty(
            query, breakdown, lower, model_row, now, recommendation, freshness.get("newest")
        )
    throughput = None
    check_deadline()
    if query.target_tokens is not None:
        name = getattr(model_row, "name", query.model_slug)
        throughput = planned_answer(  # candidates were read above for the target; a model is named
            query, breakdown, cast(list[SpeedCandidate], candidates), recommendation.machines_total,
            cast(str, name), with_speed,
            lambda: speed_candidates(query, breakdown, stale_cutoff(now), preferences_for(query), keep=keep),
        )
    clusters = None
    check_deadline()
    if relax and plans_clusters(query, model_row):
        recommendation = replace(
            recommendation, constraints=(*recommendation.constraints, cluster_constraint(query))
        )
        if wants_clusters(query, model_row, recommendation.machines_total):
            clusters = clusters_for(query, model_row, now)
            if clusters.offers and recommendation.empty is not None:
                recommendation = replace(
                    recommendation, empty=recommendation.empty.with_hints([cluster_hint(clusters)])
                )
    shown, listing = list_machines(query, recommendation, per_page)
    return Answer(
        query=query,
        breakdown=breakdown,
        model=model_row,
        recommendation=replace(recommendation, machines=shown),
        freshness={**freshness, "as_of": now},
        stale_after_minutes=stale_after_minutes(),
        throughput=throughput,
        listing=listing,
        clusters=clusters,
    )
