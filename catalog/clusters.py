"""Where a cluster is possible: the sites whose identical machines may serve one model together
(`sizing.cluster.ClusterSite`), read in one statement.

A machine counts when it is available by the one availability rule (`catalog.availability`), every GPU
of it is free (a cluster takes whole machines), and it may join a cluster (`catalog.cluster_rule`), in
the preferred countries and tier. Machines are grouped by what makes them interchangeable in a
cluster: provider, site, GPU type, GPUs per machine and memory per GPU, and also the fabric
(InfiniBand and RoCE do not speak RDMA to each other) and the place (a site has one country and
region, so its `ClusterSite` says the truth of every machine). A group of at least two machines is a
site. Prices do not filter: a cluster's price is the sum of its machines', which the planner compares
with the price limit and the budget.

On PostgreSQL the database groups the machines and returns one row per site, its machines' columns
gathered cheapest first (`array_agg … ORDER BY`, cut at MACHINES_PER_SITE); SQLite, whose aggregates
take rows in no promised order, reads each site's machines with window functions and they are grouped
here. Both read the same sites (a test compares them on random fleets).
"""
from __future__ import annotations

from datetime import datetime

from django.db.models import Count, F, Func, Min, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from catalog import availability, cluster_rule, database
from catalog.models import Machine
from catalog.preferences import tier_q
from sizing.cluster import CLUSTER_TIER, ClusterMachine, ClusterSite
from sizing.offers import Preferences
from sizing.preferences import ANY_TIER

# The machines read per site, cheapest first. A plan takes the fewest machines that hold the model:
# the largest the examples need is 4 × (8 × 80 GB) (DeepSeek-V3 in 16-bit), and pipeline parallelism
# over more than a handful of machines is not planned; 16 leaves room for a site's cheapest cluster
# and the next ones while bounding what a large site costs to read.
MACHINES_PER_SITE = 16
# Fewer machines than this are not a cluster.
MIN_MACHINES_PER_SITE = 2

# What makes machines of one site interchangeable in a cluster (see the module's docstring).
SITE_KEY = ("provider_id", "site", "gpu_type_id", "gpu_count", "memory_per_gpu_mib", "interconnect",
            "country", "region")
_COLUMNS = ("id", "provider_machine_id", "price_per_gpu_hour", "booking_limit_hours", "provider__name",
            "site", "country", "region", "gpu_type__name", "gpu_count", "memory_per_gpu_mib", "interconnect",
            "site_gbps")


def cluster_sites(preferences: Preferences, *, now: datetime | None = None) -> tuple[ClusterSite, ...]:
    """The sites where a cluster may be formed now, in a fixed order: the cheapest machine's price per
    hour, then provider, site and GPU type (then the rest of the site's key, so the order is total).
    Each site lists at most MACHINES_PER_SITE of its machines, cheapest first (price per hour, then id)."""
    if preferences.tier not in (ANY_TIER, CLUSTER_TIER):
        return ()
    now = now or timezone.now()
    machines = Machine.objects.filter(
        availability.available_q(availability.stale_cutoff(now), preferences.countries),
        cluster_rule.can_join_cluster_q(),
        tier_q(preferences),
        free_gpus=F("gpu_count"),
    )
    found = _grouped_sites(machines) if database.aggregates_in_order() else _windowed_sites(machines)
    return tuple(sorted(found, key=_site_order))


# Machines of a site have one GPU count, so their price per GPU-hour orders them as their price per hour
# (all GPUs) does.
_CHEAPEST_FIRST = (F("price_per_gpu_hour").asc(), F("id").asc())
# What a site's machine is read with, and what the site is (its key's names for the ids).
_MACHINE_COLUMNS = ("id", "provider_machine_id", "price_per_gpu_hour", "booking_limit_hours")
_SITE_COLUMNS = ("provider__name", "site", "country", "region", "gpu_type__name", "gpu_count",
                 "memory_per_gpu_mib", "interconnect")


class _Cheapest(Func):
    """The first MACHINES_PER_SITE entries of an array gathered cheapest first."""

    template = f"(%(expressions)s)[1:{MACHINES_PER_SITE}]"


def _grouped_sites(machines) -> list[ClusterSite]:
    """One row per site, grouped by the database: its machines' columns each gathered into an array
    in the same order, cheapest first, cut at MACHINES_PER_SITE."""
    from django.contrib.postgres.aggregates import ArrayAgg  # PostgreSQL's aggregate

    gathered = {f"site_{column}": _Cheapest(ArrayAgg(column, order_by=_CHEAPEST_FIRST))
                for column in _MACHINE_COLUMNS}
    rows = (
        machines.values(*SITE_KEY, "provider__name", "gpu_type__name")  # the groups
        .annotate(site_machines=Count("id"), site_gbps=Min("interconnect_gbps"), **gathered)
        .filter(site_machines__gte=MIN_MACHINES_PER_SITE)
        .order_by()  # sorted by the caller
        .values_list(*_SITE_COLUMNS, "site_gbps", *gathered)
    )
    found = []
    for *site, gbps, ids, machine_ids, prices, limits in rows:
        gpus = site[5]
        found.append(_site(site, gbps, tuple(
            # The price per hour of the whole machine: its price per GPU-hour on all its GPUs.
            ClusterMachine(id=id_, provider_machine_id=machine_id, price_per_hour=price * gpus,
                           booking_limit_hours=limit)
            for id_, machine_id, price, limit in zip(ids, machine_ids, prices, limits, strict=True)
        )))
    return found


def _windowed_sites(machines) -> list[ClusterSite]:
    """Every machine's row with its place in its site, its site's size and slowest link (window
    functions), for a database that cannot gather a group's values in order; grouped here."""
    site = [F(field) for field in SITE_KEY]
    rows = (
        machines.annotate(
            place=Window(RowNumber(), partition_by=site, order_by=list(_CHEAPEST_FIRST)),
            site_machines=Window(Count("id"), partition_by=site),
            # The slowest link of the site is what every cluster there can count on.
            site_gbps=Window(Min("interconnect_gbps"), partition_by=site),
        )
        .filter(place__lte=MACHINES_PER_SITE, site_machines__gte=MIN_MACHINES_PER_SITE)
        .order_by()  # sorted by the caller
        .values_list(*_COLUMNS, named=True)
    )
    sites: dict[tuple, list] = {}
    for row in rows:
        key = (row.provider__name, row.site, row.gpu_type__name, row.gpu_count, row.memory_per_gpu_mib,
               row.interconnect, row.country, row.region)
        sites.setdefault(key, []).append(row)
    return [_cluster_site(machines) for machines in sites.values()]


def _cluster_site(rows: list) -> ClusterSite:
    first = rows[0]
    machines = sorted(
        (
            ClusterMachine(
                id=row.id,
                provider_machine_id=row.provider_machine_id,
                # The price per hour of the whole machine: its price per GPU-hour on all its GPUs.
                price_per_hour=row.price_per_gpu_hour * row.gpu_count,
                booking_limit_hours=row.booking_limit_hours,
            )
            for row in rows
        ),
        key=lambda machine: (machine.price_per_hour, machine.id),
    )
    site = tuple(getattr(first, column) for column in _SITE_COLUMNS)
    return _site(site, first.site_gbps, tuple(machines))


def _site(site: tuple, gbps: int, machines: tuple[ClusterMachine, ...]) -> ClusterSite:
    """A site from its columns (`_SITE_COLUMNS`' order), its slowest link and its machines."""
    provider, name, country, region, gpu_type, gpu_count, memory_per_gpu_mib, interconnect = site
    return ClusterSite(
        provider=provider, site=name, country=country or None, region=region, gpu_type=gpu_type,
        gpu_count=gpu_count, memory_per_gpu_mib=memory_per_gpu_mib, interconnect=interconnect,
        interconnect_gbps=gbps, machines=machines,
    )


def _site_order(site: ClusterSite) -> tuple:
    return (site.machines[0].price_per_hour, site.provider, site.site, site.gpu_type, site.gpu_count,
            site.memory_per_gpu_mib, site.interconnect, site.country or "", site.region)
