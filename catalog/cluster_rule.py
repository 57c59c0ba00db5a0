"""The rule for which machines may form a cluster (`sizing.cluster_sites.can_join_cluster`) compiled for the
ORM and as SQL, as `catalog.availability` and `catalog.counting.availability_sql` compile the
availability rule. Nothing here decides what may join a
cluster; it only translates the rule, so the two forms cannot drift apart (a test holds them to agree
over every combination of the facts the rule reads). The cluster sites' partial index
(`catalog_machine_cluster_idx`) takes its condition from here too."""
from __future__ import annotations

from django.db.models import Q

from catalog import availability
from sizing.availability import IS_FALSE, IS_SET, RULE
from sizing.cluster_sites import CLUSTER_INTERCONNECTS, CLUSTER_TIER, MIN_CLUSTER_GBPS


def can_join_cluster_q() -> Q:
    """Machines `can_join_cluster` lets through: Secure, at a named site, on RDMA fast enough."""
    return (
        Q(tier=CLUSTER_TIER)
        & ~Q(site="")
        & Q(interconnect__in=CLUSTER_INTERCONNECTS)
        & Q(interconnect_gbps__gte=MIN_CLUSTER_GBPS)
    )


def can_join_cluster_sql() -> tuple[str, list]:
    """The same as `can_join_cluster_q`, as a SQL condition over `catalog_machine m`, and its values."""
    fabrics = ", ".join(["%s"] * len(CLUSTER_INTERCONNECTS))
    return (
        f"m.tier = %s AND NOT (m.site = '') AND m.interconnect IN ({fabrics}) AND m.interconnect_gbps >= %s",
        [CLUSTER_TIER, *CLUSTER_INTERCONNECTS, MIN_CLUSTER_GBPS],
    )


def offered_q() -> Q:
    """The availability rule's flag checks (not gone, the machine and its provider offered): they take no
    value from a query, so the index's condition can hold them; the rest is filtered on its entries."""
    q = Q()
    for check in RULE:
        if check.test in (IS_SET, IS_FALSE):
            q &= ~availability.fails_q(check, None, None)
    return q


def cluster_index_condition() -> Q:
    """The partial index's condition: offered machines that may join a cluster."""
    return can_join_cluster_q() & offered_q()
