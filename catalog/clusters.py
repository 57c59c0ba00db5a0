"""Where a cluster is possible: the sites whose identical machines may serve one model together
(`sizing.cluster_sites.ClusterSite`), read in one statement.

A machine counts when it is available by the one availability rule (`catalog.availability`), every GPU
of it is free (a cluster takes whole machines), and it may join a cluster (`catalog.cluster_rule`), in
the preferred countries and tier. Machines are grouped by what makes them interchangeable in a
cluster: provider, site, GPU type, GPUs per machine and memory per GPU, and also the fabric
(InfiniBand and RoCE do not speak RDMA to each other) and the place (a site has one country and
region, so its `ClusterSite` says the truth of every machine). A group of at least two machines is a
site. Prices do not filter here: a cluster's price is the sum of its machines' (as many as the model
needs), which the answer holds to the price limit and the budget by the preference rule
(`sizing.cluster_search.ClusterSearch.cheapest`). Each machine's price is the one the market preference
lets in (`sizing.markets.priced_in`), read from the column the database keeps for that choice
(`catalog.market_columns`), so a site lists its machines cheapest first at those prices. The fleet
reader (`nodelodge.recommendations.fleet`) reads the sites as it reads machines: grouped in one statement
on the database that keeps counts, windowed here otherwise.

On PostgreSQL one statement you can read (`SITES_SQL`) groups the machines and returns one row per
site, its machines' ids and prices gathered cheapest first (`array_agg … ORDER BY`, cut at
MACHINES_PER_SITE); its conditions are the rules' SQL forms, and the provider's and GPU type's names are
joined to the few site rows, not to every machine. SQLite, whose aggregates take rows in no promised
order, reads each site's machines with window functions through the ORM and they are grouped here. Both
read the same sites (a test compares them on random fleets).

A search needs only the ids and prices; what a cluster's row and booking show of its machines besides
(the provider's ids, the booking limits) is read for the clusters an answer shows (`with_machines`), in
one more small statement: each ordered gathering costs the sites statement a sort per site.
"""
from __future__ import annotations

from datetime import datetime

from django.db.models import Count, F, Min, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from catalog import availability, cluster_rule, database
from catalog import rows as catalog_rows
from catalog.counting import availability_sql, preferences_sql
from catalog.market_columns import MARKET_PRICE_COLUMNS
from catalog.markets import priced
from catalog.models import MARKET_FIELDS, Machine
from catalog.preferences import tier_q
from sizing.cluster import ClusterPlan
from sizing.cluster_sites import CLUSTER_TIER, ClusterMachine, ClusterSite
from sizing.engine_support import gpu_architecture
from sizing.markets import DEFAULT_MARKET
from sizing.offers import Preferences
from sizing.preferences import tier_chosen

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
# "market_price": the machine's price per GPU-hour under the market preference (`_market_price`).
_COLUMNS = ("id", "market_price", "provider__name", "site", "country", "region", "gpu_type__name",
            "gpu_count", "memory_per_gpu_mib", "interconnect", "gpu_type__memory_mib",
            "gpu_type__usable_memory_mib", "gpu_type__architecture", "gpu_type__compute_capability",
            "site_gbps", "reliability")


def cluster_sites(
    preferences: Preferences, *, now: datetime | None = None, grouped: bool | None = None
) -> tuple[ClusterSite, ...]:
    """The sites where a cluster may be formed now, in the listing order of their cheapest machine
    (`ClusterSite.order_key`: its price per hour and per GPU-hour, then provider, site and the rest of
    the site's key, so the order is total). Each site lists at most MACHINES_PER_SITE of its machines,
    cheapest first (price per hour, then id): their ids and prices (`with_machines` reads the rest for
    the plans shown). Prices are those of `preferences.market` (each machine's cheapest of the markets it
    lets in). `grouped`: read them in one grouped statement (the fleet reader's choice; without, where the
    database can)."""
    if tier_chosen(preferences) not in (None, CLUSTER_TIER):
        return ()  # the tier preference lets no machine of a cluster through: nothing to read
    now = now or timezone.now()
    if grouped is None:
        grouped = database.aggregates_in_order()
    found = (_grouped_sites if grouped else _windowed_sites)(preferences, now)
    return tuple(sorted(found, key=_site_order))


# Machines of a site have one GPU count, so their price per GPU-hour orders them as their price per hour
# (all GPUs) does.
_CHEAPEST_FIRST = (F("market_price").asc(), F("id").asc())


def _market_price(market: str) -> F:
    """A machine's price per GPU-hour under the market preference `market`: the column kept for it."""
    return F(MARKET_PRICE_COLUMNS[market])


# What a site is (its key's names for the ids), in the order `_site` takes.
_SITE_COLUMNS = ("provider__name", "site", "country", "region", "gpu_type__name", "gpu_count",
                 "memory_per_gpu_mib", "interconnect", "gpu_type__memory_mib", "gpu_type__usable_memory_mib",
                 "gpu_type__architecture", "gpu_type__compute_capability")

# One row per site: the machines that may join a cluster now, grouped by the site's key (`SITE_KEY`),
# each site's machines' ids and prices ({price}: the market preference's column) gathered cheapest first
# (at most {machines_per_site} of a site of at least {min_machines}). The conditions: {available} the
# availability rule, {joins} the cluster rule, {tier} the tier preference. The partial index
# catalog_machine_cluster_idx holds exactly the machines the last two and the rule's flags let through, in
# this grouping's order, with every market preference's price.
SITES_SQL = """
SELECT provider.name, site.site, site.country, site.region, gpu_type.name, site.gpu_count,
       site.memory_per_gpu_mib, site.interconnect, gpu_type.memory_mib, gpu_type.usable_memory_mib,
       gpu_type.architecture, gpu_type.compute_capability, site.site_gbps, site.ids, site.prices_per_gpu_hour,
       site.reliabilities
FROM (
    SELECT m.provider_id, m.site, m.gpu_type_id, m.gpu_count, m.memory_per_gpu_mib, m.interconnect,
           m.country, m.region,
           min(m.interconnect_gbps) AS site_gbps,
           (array_agg(m.id ORDER BY m.{price}, m.id))[1:{machines_per_site}] AS ids,
           (array_agg(m.{price} ORDER BY m.{price}, m.id))[1:{machines_per_site}]
               AS prices_per_gpu_hour,
           (array_agg(m.reliability ORDER BY m.{price}, m.id))[1:{machines_per_site}]
               AS reliabilities
    FROM catalog_machine m
    WHERE {available} AND {joins} AND {tier}
      AND m.free_gpus = m.gpu_count
    GROUP BY m.provider_id, m.site, m.gpu_type_id, m.gpu_count, m.memory_per_gpu_mib, m.interconnect,
             m.country, m.region
    HAVING count(*) >= {min_machines}
) site
JOIN catalog_provider provider ON provider.id = site.provider_id
JOIN catalog_gputype gpu_type ON gpu_type.id = site.gpu_type_id
"""


def sites_statement(preferences: Preferences, now: datetime) -> tuple[str, list]:
    """`SITES_SQL` with its conditions filled in, and its values."""
    available, available_params = availability_sql.available_sql(availability.stale_cutoff(now),
                                                                  preferences.countries)
    joins, joins_params = cluster_rule.can_join_cluster_sql()
    tier, tier_params = preferences_sql.tier_sql(preferences)
    # The rules' SQL forms and constants (the price a column name of ours); every value is a parameter.
    sql = SITES_SQL.format(available=available, joins=joins, tier=tier,
                           price=MARKET_PRICE_COLUMNS[preferences.market],
                           machines_per_site=MACHINES_PER_SITE, min_machines=MIN_MACHINES_PER_SITE)
    return sql, [*available_params, *joins_params, *tier_params]


def _grouped_sites(preferences: Preferences, now: datetime) -> list[ClusterSite]:
    """One row per site, grouped by the database (`SITES_SQL`)."""
    sql, params = sites_statement(preferences, now)
    with database.reads().cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [_site(site, gbps, tuple(ids), tuple(prices), tuple(reliabilities))
            for *site, gbps, ids, prices, reliabilities in rows]


def _windowed_sites(preferences: Preferences, now: datetime) -> list[ClusterSite]:
    """Every machine's row with its place in its site, its site's size and slowest link (window
    functions), for a database that cannot gather a group's values in order; grouped here."""
    machines = Machine.objects.filter(
        availability.available_q(availability.stale_cutoff(now), preferences.countries),
        cluster_rule.can_join_cluster_q(),
        tier_q(preferences),
        free_gpus=F("gpu_count"),
    )
    site = [F(field) for field in SITE_KEY]
    rows = (
        machines.annotate(
            market_price=_market_price(preferences.market),
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


def site_of(machine_ids: list[int], market: str = DEFAULT_MARKET) -> ClusterSite | None:
    """Exactly these machines as one site, cheapest first at their prices under the market preference
    `market`, or None where they are not one: one is missing or may not join a cluster, or they differ
    in what makes machines interchangeable. Their availability now is not asked: this describes a
    cluster (its sizing, words and commands), and booking it checks each machine again."""
    ids = set(machine_ids)
    rows = list(
        Machine.objects.filter(cluster_rule.can_join_cluster_q(), pk__in=ids)
        .annotate(site_gbps=F("interconnect_gbps"), market_price=_market_price(market))
        .values_list(*_COLUMNS, named=True)
    )
    if len(rows) != len(ids) or len(ids) < MIN_MACHINES_PER_SITE:
        return None
    if len({tuple(getattr(row, column) for column in _SITE_COLUMNS) for row in rows}) != 1:
        return None
    slowest = min(row.site_gbps for row in rows)
    return _cluster_site([row._replace(site_gbps=slowest) for row in rows])


def _cluster_site(rows: list) -> ClusterSite:
    first = rows[0]
    # Machines of a site have one GPU count: cheapest first by price per GPU-hour is by price per hour.
    ordered = sorted(rows, key=lambda row: (row.market_price, row.id))
    site = tuple(getattr(first, column) for column in _SITE_COLUMNS)
    return _site(site, first.site_gbps, tuple(row.id for row in ordered),
                 tuple(row.market_price for row in ordered), tuple(row.reliability for row in ordered))


def _site(
    site: tuple, gbps: int, machine_ids: tuple[int, ...], prices: tuple, reliabilities: tuple
) -> ClusterSite:
    """A site from its columns (`_SITE_COLUMNS`' order: its key's, then its GPU type's memory, recorded
    usable memory, architecture and compute capability), its slowest link and its machines' ids, prices
    per GPU-hour and reliabilities, cheapest first."""
    (provider, name, country, region, gpu_type, gpu_count, memory_per_gpu_mib, interconnect, memory_mib,
     usable_mib, architecture, compute_capability) = site
    return ClusterSite(
        provider=provider, site=name, country=country or None, region=region, gpu_type=gpu_type,
        gpu_count=gpu_count, memory_per_gpu_mib=memory_per_gpu_mib,
        usable_memory_mib=catalog_rows.usable_memory_mib(memory_mib, usable_mib), interconnect=interconnect,
        interconnect_gbps=gbps, machine_ids=machine_ids, prices_per_gpu_hour=prices,
        gpu_architecture=gpu_architecture(architecture, compute_capability),
        reliability=None if None in reliabilities else min(reliabilities, default=None),
    )


def _site_order(site: ClusterSite) -> tuple:
    return site.order_key(1)


_DETAIL_COLUMNS = ("id", "provider_machine_id", "booking_limit_hours", *MARKET_FIELDS)
MACHINES_SQL = f"SELECT {', '.join(_DETAIL_COLUMNS)} FROM catalog_machine WHERE id = ANY(%s)"  # noqa: S608  # nosec B608


def with_machines(plans: list[ClusterPlan], market: str = DEFAULT_MARKET) -> list[ClusterPlan]:
    """The plans with their machines (the provider's ids, booking limits and the market each is priced in
    under the market preference `market`, besides the ids and prices the search had), read in one
    statement for all of them: an answer reads them for the clusters it shows. A plan one of whose
    machines is no longer in the catalog, or no longer at the price the search had, is left out."""
    wanted = {machine_id for plan in plans for machine_id in plan.machine_ids}
    if not wanted:
        return []
    ids, connection = sorted(wanted), database.reads()
    if database.takes_arrays(connection):
        # Plain SQL where an answer reads it: compiling the ORM's statement costs more than running it.
        with connection.cursor() as cursor:
            cursor.execute(MACHINES_SQL, [ids])
            rows = cursor.fetchall()
    else:
        rows = list(Machine.objects.filter(pk__in=ids).values_list(*_DETAIL_COLUMNS))
    details = {
        machine_id: (provider_machine_id, limit, priced(dict(zip(MARKET_FIELDS, terms, strict=True)), market))
        for machine_id, provider_machine_id, limit, *terms in rows
    }
    found = []
    for plan in plans:
        searched = zip(plan.machine_ids, plan.site.prices_per_gpu_hour[:plan.pipeline_parallel], strict=True)
        if not all(machine_id in details and details[machine_id][2].price_per_gpu_hour == price
                   for machine_id, price in searched):
            continue
        found.append(plan.with_machines(tuple(
            ClusterMachine(machine_id, details[machine_id][0], price, details[machine_id][1],
                           details[machine_id][2].market)
            for machine_id, price in zip(plan.machine_ids, plan.machine_prices_per_hour, strict=True)
        )))
    return found
