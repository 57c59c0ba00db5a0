"""The watches' figure: how long evaluating every stored watch takes after a refresh, over the fleet the
benchmark generated (`python -m tests.bench --watches 10000`, the issue's 10,000 watches).

Watches are stored as users make them (every default written out), spread over the benchmark's
queries varied by price limit and countries, so many watches share a query as they do in life and
evaluation reads each distinct query once through the fleet reader.
"""
from __future__ import annotations

import itertools
import time

from .queries import QUERIES

WATCHES_PER_USER = 50
MAX_PRICES = ("", "1", "2.5", "5", "10", "20", "40", "80")
COUNTRIES = ("", "DE", "EU", "US", "FR,DE", "CH")
CONDITIONS = (("appears", None, None), ("cheapest_below", "3.00", None), ("at_least", None, 5))


def distinct_queries(count: int) -> list[dict[str, str]]:
    """`count` different watch queries: the benchmark's, varied by price limit and countries."""
    from django.http import QueryDict

    from nodelodge.recommendations.query import parse_query
    from nodelodge.watches.services import explicit_query

    found = []
    for (_name, query_string), max_price, countries in itertools.product(QUERIES, MAX_PRICES, COUNTRIES):
        data = {key: value for key, value in QueryDict(query_string).items()}
        if max_price:
            data["max_price"] = max_price
        if countries:
            data["countries"] = countries
        found.append(explicit_query(parse_query(data)))
        if len(found) == count:
            break
    return found


def store_watches(watches: int, queries: int) -> int:
    """Replaces every watch with `watches` active ones over `queries` distinct queries; returns how many
    distinct queries they ask."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from nodelodge.watches.models import Firing, Watch, new_secret
    from nodelodge.watches.services import query_key

    Firing.objects.all().delete()
    Watch.objects.all().delete()
    users = get_user_model().objects
    users.filter(username__startswith="bench-watcher-").delete()
    owners = users.bulk_create([
        get_user_model()(username=f"bench-watcher-{number}", email=f"bench-watcher-{number}@example.com")
        for number in range(-(-watches // WATCHES_PER_USER))
    ])
    params = distinct_queries(queries)
    now = timezone.now()
    rows = []
    for number in range(watches):
        query = params[number % len(params)]
        condition, price, machines = CONDITIONS[number % len(CONDITIONS)]
        rows.append(Watch(
            secret=new_secret(), feed_token=new_secret(), unsubscribe_token=new_secret(),
            owner=owners[number // WATCHES_PER_USER], query=query, query_key=query_key(query),
            condition=condition, price_per_hour=price, machines=machines, email=False, next_check_at=now,
        ))
    Watch.objects.bulk_create(rows, batch_size=2000)
    return len({row.query_key for row in rows})


def time_watch_evaluation(watches: int, queries: int, fleet: str, report, target_seconds: float | None) -> dict:
    """Stores the watches, then times one evaluation of all of them (the one after a refresh), with
    the firings it records; delivery is queued, not timed. Adds the figure to `report`."""
    from nodelodge.watches import services

    delivered = []
    queue = services._queue_delivery
    services._queue_delivery = delivered.append  # delivery runs in its own tasks; counted, not sent
    try:
        asked = store_watches(watches, queries)
        # The first check of watches just made: every one whose condition holds fires and records the
        # machines it saw (a whole answer per query). Then the check after a refresh as it usually is:
        # watches remember they match, most fire nothing, and the counts alone answer them.
        started = time.perf_counter()
        first = services.evaluate_watches()
        first_seconds = time.perf_counter() - started
        started = time.perf_counter()
        evaluation = services.evaluate_watches()
        seconds = time.perf_counter() - started
    finally:
        services._queue_delivery = queue
    report.add(
        f"watch evaluation, first check of new watches ({len(first.fired):,} fire), {watches:,} watches "
        f"({asked:,} distinct queries)", fleet, first_seconds, "s",
    )
    report.add(
        f"watch evaluation after a refresh, {watches:,} watches ({asked:,} distinct queries)", fleet, seconds, "s",
        f"≤ {target_seconds:g} s" if target_seconds else "",
        (seconds <= target_seconds) if target_seconds else None,
    )
    return {"seconds": seconds, "first_seconds": first_seconds, "watches": evaluation.watches,
            "queries": evaluation.queries, "fired": len(first.fired) + len(evaluation.fired),
            "queued": len(delivered)}
