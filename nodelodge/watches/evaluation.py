"""The checking of watches: what each query finds now, and the firings it decides.

Evaluation reads each distinct query once through the one fleet reader (the kept counts on PostgreSQL,
the engine over every machine on the embedded run), whatever the number of watches asking it, and
decides per watch: first the counts alone (`glance`; on PostgreSQL those of many queries are counted
by one statement, `glances`), and the cheapest machines described (`recommendation_for`) only where a
watch fires and its firing records them. Staleness is the
reader's: a machine not heard from within MACHINE_STALE_AFTER_SECONDS stops matching without any write.
The writes a user asks for (create, pause, resume, delete, unsubscribe) are `services.py`'s.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import cast

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalog.markets import markets_of
from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.estimate import estimate_for
from nodelodge.recommendations.fleet import fleet_reader
from nodelodge.recommendations.query import QueryError, WorkloadQuery
from nodelodge.recommendations.sorts import DEFAULT_SORT
from nodelodge.refresh.selectors import thirty_day_median
from sizing.breakdown import Breakdown
from sizing.markets import DEFAULT_MARKET
from sizing.results import Recommendation

from . import dispatch
from .models import Firing, Watch
from .services import watch_query

logger = logging.getLogger(__name__)

MATCHES_KEPT = 10  # machines a firing records (the cheapest first) and a delivery lists
# What a check reads of a watch; one that fires or changes is read again, whole, under its lock.
CHECKED_FIELDS = ("query", "query_key", "state", "condition", "price_per_hour", "machines", "matching",
                  "last_fired_at", "cooldown_seconds")
UNCHANGED_CHUNK = 500  # watches whose check one statement notes (within SQLite's 999 values)


@dataclass(frozen=True)
class Found:
    """What one query finds now: how many machines fit and meet every preference (after its filters),
    the cheapest hourly price among them, the cheapest few described (`described`: a glance at the
    counts describes none), and the throughput plan's price when it asks for one."""

    machines_total: int
    cheapest: Decimal | None
    matches: tuple[dict, ...]
    plan_price_per_hour: Decimal | None
    described: bool = True
    # The cheapest machine's GPU type, market and price per GPU-hour (described answers only), and the
    # 30-day median of its GPU type in that market where a watch asks for it (`with_median`).
    cheapest_offer: tuple[str, str, Decimal] | None = None
    median_30d: Decimal | None = None


def answered_by_counts(query: WorkloadQuery, watches: Sequence[Watch] = ()) -> bool:
    """Whether the counts alone answer every condition of a query: not where list filters (those
    work over the described machines) or a throughput plan are asked, nor where a watch compares the
    cheapest machine with its GPU type's median (the counts do not say which GPU type that is)."""
    return (not query.filtered and query.target_tokens is None
            and not any(watch.condition == Watch.Condition.BELOW_MEDIAN for watch in watches))


def with_median(found: Found, now: datetime) -> Found:
    """`found` with the 30-day median of its cheapest machine's GPU type in that machine's market: one
    statement of at most 720 values (`thirty_day_median`)."""
    if found.cheapest_offer is None:
        return found
    gpu_type, market, _ = found.cheapest_offer
    return replace(found, median_30d=thirty_day_median(gpu_type, market, now))


def glance(query: WorkloadQuery, now: datetime) -> Found | None:
    """The counts alone, where they answer every condition (`answered_by_counts`; None where not).
    One counting statement on PostgreSQL, where a whole answer describes machines as well; most
    checks fire nothing and need no more."""
    if not answered_by_counts(query):
        return None
    breakdown, _ = estimate_for(query)
    return glances([(query, breakdown)], now)[0]


def glances(asked: list[tuple[WorkloadQuery, Breakdown]], now: datetime) -> list[Found]:
    """`glance` of each (query, breakdown) of `asked`, in order: on PostgreSQL a few counting
    statements for all of them (`FleetReader.meeting_many`), however many they are."""
    return [
        Found(total, cheapest, (), None, described=False)
        for total, cheapest in fleet_reader().meeting_many(asked, now)
    ]


def _sizing(query: WorkloadQuery) -> WorkloadQuery:
    """The query with the preferences left out (which machines it may use, not what it needs): queries
    alike in the rest need the same memory, whatever their countries, price limits or tier."""
    return replace(query, budget=None, max_price=None, tier="", min_reliability=None, market=DEFAULT_MARKET,
                   countries_input=(), countries=None, sort=DEFAULT_SORT)


def _breakdown(query: WorkloadQuery, estimates: dict) -> Breakdown:
    """`estimate_for(query)`'s breakdown, worked out (and its model read) once per sizing in
    `estimates`, within one evaluation."""
    key = _sizing(query)
    if key not in estimates:
        estimates[key], _ = estimate_for(query)
    return estimates[key]


def find(query: WorkloadQuery, now: datetime) -> Found:
    """One read through the fleet reader: counts over the whole fleet, the cheapest few described."""
    cheapest_first = replace(query, sort=DEFAULT_SORT, page=1, group="", limit=MATCHES_KEPT)
    answer = recommendation_for(cheapest_first, now=now, default_limit=MATCHES_KEPT, relax=False)
    recommendation = cast(Recommendation, answer.recommendation)  # asked without relaxing
    total = answer.listing.matching if query.filtered and answer.listing else recommendation.machines_total
    matches = tuple(
        {
            "id": machine.offer.id,
            "provider": machine.offer.provider,
            "provider_machine_id": machine.offer.provider_machine_id,
            "gpu_type": machine.offer.gpu_type,
            "gpus": machine.fit.gpus_used,
            "country": machine.offer.country or "",
            "price_per_hour": str(machine.hourly_price),
        }
        for machine in recommendation.machines[:MATCHES_KEPT]
    )
    plans = answer.throughput.plans if answer.throughput is not None else ()
    cheapest = Decimal(str(matches[0]["price_per_hour"])) if matches else None
    cheapest_offer = None
    if recommendation.machines:
        offer = recommendation.machines[0].offer
        market, price = markets_of(offer)[0]
        cheapest_offer = (offer.gpu_type, str(market), price)
    return Found(total, cheapest, matches, plans[0].price_per_hour if plans else None,
                 cheapest_offer=cheapest_offer)


def condition_holds(watch: Watch, found: Found) -> bool:
    if watch.condition == Watch.Condition.APPEARS:
        return found.machines_total >= 1
    if watch.condition == Watch.Condition.CHEAPEST_BELOW:
        return found.cheapest is not None and found.cheapest < cast(Decimal, watch.price_per_hour)
    if watch.condition == Watch.Condition.AT_LEAST:
        return found.machines_total >= (watch.machines or 1)
    if watch.condition == Watch.Condition.PLAN_BELOW:
        return (found.plan_price_per_hour is not None
                and found.plan_price_per_hour < cast(Decimal, watch.price_per_hour))
    if watch.condition == Watch.Condition.BELOW_MEDIAN:
        return (found.cheapest_offer is not None and found.median_30d is not None
                and found.cheapest_offer[2] < found.median_30d)
    return False


@dataclass
class Evaluation:
    queries: int = 0
    watches: int = 0
    fired: list[int] = field(default_factory=list)  # firing ids

    def __post_init__(self):
        self.fired = self.fired or []


def check_interval() -> timedelta:
    return timedelta(seconds=settings.WATCH_CHECK_INTERVAL_SECONDS)


def evaluate_watches(*, now: datetime | None = None, due_only: bool = False) -> Evaluation:
    """Checks every active watch (`due_only`: those whose next check has come) against the fleet now,
    one read per distinct query, and records a firing for each whose condition starts to hold.
    Delivery is queued after the commit (tasks.deliver_firing, by its name: `dispatch`).

    A few statements whatever the number of queries, where most fire nothing: the watches are read in
    one, the counts of every query the counts alone answer in a few (`glances`), and the checks of the
    watches whose state stays as it is noted in one per UNCHANGED_CHUNK watches. A query with a watch
    that fires (or one the counts cannot answer) is answered whole; a watch whose state changes is
    decided again under its lock (`_decide`)."""
    now = now or timezone.now()
    evaluation = Evaluation()
    active = Watch.objects.filter(state=Watch.State.ACTIVE)
    if due_only:
        active = active.filter(next_check_at__lte=now)
    groups: dict[str, list[Watch]] = {}
    for watch in active.only(*CHECKED_FIELDS).order_by("query_key", "pk"):
        groups.setdefault(watch.query_key, []).append(watch)
    asked: dict[str, tuple[WorkloadQuery, Breakdown | None]] = {}
    estimates: dict = {}
    for key, group in groups.items():
        evaluation.queries += 1
        try:
            query = watch_query(group[0])
            by_counts = answered_by_counts(query, group)
            asked[key] = (query, _breakdown(query, estimates) if by_counts else None)
        except QueryError as error:  # a model or GPU type since removed from the catalog
            logger.warning("Watch query %s cannot be answered any more: %s", key, error)
    counted = iter(glances([(query, breakdown) for query, breakdown in asked.values()
                           if breakdown is not None], now))
    unchanged = []
    for key, (query, breakdown) in asked.items():
        group = groups[key]
        try:
            found = next(counted) if breakdown is not None else find(query, now)
            if not found.described and any(_fires(w, condition_holds(w, found), now) for w in group):
                found = find(query, now)  # a firing records the machines it saw
            if any(watch.condition == Watch.Condition.BELOW_MEDIAN for watch in group):
                found = with_median(found, now)
        except QueryError as error:
            logger.warning("Watch query %s cannot be answered any more: %s", key, error)
            continue
        for watch in group:
            evaluation.watches += 1
            if _changes(watch, condition_holds(watch, found), now):
                firing = _decide(watch, found, now)
                if firing is not None:
                    evaluation.fired.append(firing.pk)
            else:
                unchanged.append(watch.pk)
    # Watches whose state stays as it is only note the check.
    for start in range(0, len(unchanged), UNCHANGED_CHUNK):
        chunk = unchanged[start:start + UNCHANGED_CHUNK]
        Watch.objects.filter(pk__in=chunk, state=Watch.State.ACTIVE).update(
            last_checked_at=now, next_check_at=now + check_interval()
        )
    return evaluation


def _fires(watch: Watch, holds: bool, now: datetime) -> bool:
    return holds and not watch.matching and (
        watch.last_fired_at is None or now >= watch.last_fired_at + watch.cooldown
    )


def _changes(watch: Watch, holds: bool, now: datetime) -> bool:
    """Whether this check fires the watch or changes what it remembers (as read before the lock;
    `_decide` decides again under it)."""
    return _fires(watch, holds, now) or watch.matching != (holds and watch.matching)


def _decide(watch: Watch, found: Found, now: datetime) -> Firing | None:
    holds = condition_holds(watch, found)
    next_check = now + check_interval()
    with transaction.atomic():
        # Locked, so two evaluations at once (a refresh's and beat's) fire a watch once.
        locked = Watch.objects.select_for_update().filter(pk=watch.pk, state=Watch.State.ACTIVE).first()
        if locked is None:
            return None
        fires = _fires(locked, holds, now)
        # Within the cool-down a match that came back is not yet "seen": it fires once the cool-down is
        # over if it still holds then.
        matching = holds and (locked.matching or fires)
        update = {"matching": matching, "last_checked_at": now, "next_check_at": next_check}
        firing = None
        if fires:
            update["last_fired_at"] = now
            firing = Firing.objects.create(
                watch=locked, fired_at=now, machines_total=found.machines_total,
                cheapest_price_per_hour=found.cheapest, plan_price_per_hour=found.plan_price_per_hour,
                matches=list(found.matches),
            )
            firing_id = firing.pk
            transaction.on_commit(lambda: _queue_delivery(firing_id))
        Watch.objects.filter(pk=locked.pk).update(**update)
    return firing


def _queue_delivery(firing_id: int) -> None:
    dispatch.queue(dispatch.DELIVER_FIRING, firing_id)
