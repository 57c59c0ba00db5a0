"""What a refused Launch offers instead: the next-cheapest machine for one alone, the next cluster
for a cluster."""
from __future__ import annotations

from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.estimate import estimate_for
from nodelodge.recommendations.query import QueryError, WorkloadQuery
from sizing.results import RecommendedMachine

from .models import LaunchGroup
from .refusals import LaunchRefused, parse_query


def next_cheapest(query: WorkloadQuery, exclude_machine_id: int) -> RecommendedMachine | None:
    """The cheapest machine other than `exclude_machine_id` that fits and meets every preference."""
    try:
        result = recommendation_for(query, relax=False)  # only the machines are read here
    except QueryError:
        return None
    if result.recommendation is None:
        return None
    for machine in result.recommendation.machines:
        if machine.offer.id != exclude_machine_id:
            return machine
    return None


def next_cluster_after(refusal: LaunchRefused, kind: str, query_string: str) -> dict | None:
    """The cluster the page and the API offer after a cluster was refused: the next cheapest without the
    machine it could not book. None for a plan, after a price change (the same cluster at its new price
    is the offer) or a query that cannot be computed any more."""
    if kind != LaunchGroup.Kind.CLUSTER or refusal.code in (LaunchRefused.PRICE_CHANGED,
                                                             LaunchRefused.INVALID_QUERY):
        return None
    return next_cluster(query_string, getattr(refusal, "machine_id", None))


def next_cluster(query_string: str, exclude_machine_id: int | None) -> dict | None:
    """The cheapest cluster planned now that does not take `exclude_machine_id` (the machine a cluster
    could not be booked on), as the API writes a cluster; None where no other is planned."""
    from nodelodge.recommendations.clusters import clusters_for, plans_clusters

    try:
        query = parse_query(query_string)
        _breakdown, model_row = estimate_for(query)
    except QueryError:
        return None
    if not plans_clusters(query, model_row):
        return None
    for offer in clusters_for(query, model_row).offers:
        if exclude_machine_id not in offer.plan.machine_ids:
            return offer.to_dict()
    return None
