"""The cluster sites: which machines may serve one model together, grouped by site, in one statement.

The rule (`sizing.cluster_sites.can_join_cluster`) and its ORM form (`catalog.cluster_rule`) must let the same
machines through over every combination of the facts it reads; the selector must never put machines of
different providers, sites, tiers, GPU types, GPU counts or memory in one site, never take a machine
without a fast RDMA interconnect, a Community one, one outside the chosen countries, or one that is not
whole and available now; and its answer is the same whatever order the rows were written in."""
from datetime import timedelta
from decimal import Decimal
from itertools import product
from random import Random
from unittest import mock

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog import availability, cluster_rule, database, services
from catalog.clusters import MACHINES_PER_SITE, cluster_sites, with_machines
from catalog.models import Machine
from nodelodge.recommendations.fleet import EVERY_MACHINE, KEPT_COUNTS
from nodelodge.recommendations.query import parse_query
from sizing.cluster import ClusterNeed, ClusterPlan
from sizing.cluster_sites import can_join_cluster
from sizing.markets import priced_in
from sizing.offers import Preferences
from sizing.preferences import preference_breaks
from tests.factories import H100_MIB, H200_MIB, build_machine, make_gpu_type, make_machine, make_provider

pytestmark = pytest.mark.django_db

ANYWHERE = Preferences()


@pytest.fixture
def fleet():
    """Two Secure providers, one Community, an H100 and an H200 type."""
    return {
        "secure": make_provider("Harbor", tier="secure"),
        "other": make_provider("Fjord", tier="secure"),
        "community": make_provider("Attic", tier="community"),
        "h100": make_gpu_type("H100 SXM 80GB", memory_mib=H100_MIB),
        "h200": make_gpu_type("H200", memory_mib=H200_MIB),
    }


def node(fleet, provider="secure", gpu="h100", **overrides):
    """A whole free 8-GPU machine at site fra-1 on 400 Gb/s InfiniBand, $2.50 per GPU-hour."""
    values = dict(gpu_count=8, free_gpus=8, site="fra-1", interconnect="infiniband", interconnect_gbps=400,
                  price_per_gpu_hour=Decimal("2.50"))
    return make_machine(fleet[provider], fleet[gpu], **values | overrides)


def site_ids(preferences=ANYWHERE, **kwargs) -> list[list[int]]:
    return [list(site.machine_ids) for site in cluster_sites(preferences, **kwargs)]


# The rule, two forms ------------------------------------------------------------------------------

def test_the_orm_and_sql_forms_let_through_what_the_rule_does_over_every_combination(fleet):
    facts = list(product(("secure", "community"), ("", "fra-1", " "), [c for c, _ in Machine.Interconnect.choices],
                         (None, 1, 99, 100, 101, 400)))
    made = {}
    for number, (tier, site, interconnect, gbps) in enumerate(facts):
        if (interconnect == "none") != (gbps is None):
            continue  # the table's check constraint refuses these; the rule is tested on them below
        provider = fleet["secure" if tier == "secure" else "community"]
        machine = make_machine(provider, fleet["h100"], provider_machine_id=f"c{number}", site=site,
                               interconnect=interconnect, interconnect_gbps=gbps)
        # As stored: saving trims the site (" " is none).
        made[machine.pk] = can_join_cluster(tier=machine.tier, site=machine.site, interconnect=interconnect,
                                            interconnect_gbps=gbps)
    through = set(Machine.objects.filter(cluster_rule.can_join_cluster_q()).values_list("pk", flat=True))
    assert through == {pk for pk, joins in made.items() if joins}
    condition, params = cluster_rule.can_join_cluster_sql()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT m.id FROM catalog_machine m WHERE {condition}", params)  # noqa: S608
        assert {pk for (pk,) in cursor.fetchall()} == through
    assert 0 < len(through) < len(made)
    # What the constraint keeps out of the table the rule refuses as well.
    assert not can_join_cluster(tier="secure", site="fra-1", interconnect="infiniband", interconnect_gbps=None)
    assert not can_join_cluster(tier="secure", site="fra-1", interconnect="none", interconnect_gbps=400)


def test_the_index_condition_holds_the_rule_and_the_offered_flags(fleet):
    joins = node(fleet)
    node(fleet, gone_at=timezone.now())
    node(fleet, is_available=False, free_gpus=0)
    node(fleet, interconnect="ethernet", interconnect_gbps=400)
    indexed = Machine.objects.filter(cluster_rule.cluster_index_condition())
    assert list(indexed.values_list("pk", flat=True)) == [joins.pk]
    index = next(index for index in Machine._meta.indexes if index.name == "catalog_machine_cluster_idx")
    assert index.condition == cluster_rule.cluster_index_condition()


# What forms a site --------------------------------------------------------------------------------

def test_identical_machines_at_one_site_form_it_cheapest_first(fleet):
    dear = node(fleet, provider_machine_id="a", price_per_gpu_hour=Decimal("2.80"))
    cheap = node(fleet, provider_machine_id="b", price_per_gpu_hour=Decimal("2.40"))
    tie = node(fleet, provider_machine_id="c", price_per_gpu_hour=Decimal("2.80"))
    [site] = cluster_sites(ANYWHERE)
    assert (site.provider, site.site, site.gpu_type, site.gpu_count, site.memory_per_gpu_mib) == (
        "Harbor", "fra-1", "H100 SXM 80GB", 8, H100_MIB)
    assert (site.country, site.region, site.interconnect, site.interconnect_gbps) == (
        "DE", "Frankfurt", "infiniband", 400)
    assert site.machine_ids == (cheap.pk, dear.pk, tie.pk)
    assert site.prices_per_gpu_hour == (Decimal("2.40"), Decimal("2.80"), Decimal("2.80"))
    assert site.price_per_hour(2) == Decimal("41.6000")  # (2.40 + 2.80) × 8 GPUs


def test_one_machine_alone_is_no_site(fleet):
    node(fleet)
    node(fleet, site="fra-2")
    assert cluster_sites(ANYWHERE) == ()


@pytest.mark.parametrize("difference", [
    {"provider": "other"}, {"site": "fra-2"}, {"gpu": "h200", "memory_per_gpu_mib": H200_MIB},
    {"gpu_count": 4, "free_gpus": 4}, {"memory_per_gpu_mib": H100_MIB - 512},
    {"interconnect": "roce"}, {"country": "FR", "region": "Paris"},
])
def test_never_across_what_makes_machines_differ(fleet, difference):
    first = node(fleet)
    second = node(fleet, **difference)
    assert cluster_sites(ANYWHERE) == ()
    third = node(fleet, **difference)
    assert site_ids() == [[second.pk, third.pk]]
    assert first.pk not in {machine_id for site in cluster_sites(ANYWHERE) for machine_id in site.machine_ids}


def test_never_across_tiers_and_never_community(fleet):
    node(fleet)
    node(fleet, provider="community")
    node(fleet, provider="community")
    assert cluster_sites(ANYWHERE) == ()
    assert cluster_sites(Preferences(tier="community")) == ()


@pytest.mark.parametrize("link", [
    {"interconnect": "none", "interconnect_gbps": None}, {"interconnect": "ethernet", "interconnect_gbps": 400},
    {"interconnect": "infiniband", "interconnect_gbps": 99}, {"interconnect": "roce", "interconnect_gbps": 50},
    {"site": ""},
])
def test_never_without_a_fast_rdma_interconnect_at_a_named_site(fleet, link):
    node(fleet, **link)
    node(fleet, **link)
    assert cluster_sites(ANYWHERE) == ()


def test_the_slowest_link_is_the_sites_speed(fleet):
    node(fleet, interconnect_gbps=400)
    node(fleet, interconnect_gbps=100)
    [site] = cluster_sites(ANYWHERE)
    assert site.interconnect_gbps == 100


def test_never_outside_the_chosen_countries(fleet):
    node(fleet)
    node(fleet)
    node(fleet, country="US", region="Virginia", site="iad-1")
    node(fleet, country="US", region="Virginia", site="iad-1")
    assert [site.site for site in cluster_sites(Preferences(countries=frozenset({"DE"})))] == ["fra-1"]
    assert [site.site for site in cluster_sites(Preferences(countries=frozenset({"US", "FR"})))] == ["iad-1"]
    assert cluster_sites(Preferences(countries=frozenset({"JP"}))) == ()
    assert len(cluster_sites(Preferences(tier="secure"))) == 2


@pytest.mark.parametrize("state", [
    {"free_gpus": 7}, {"free_gpus": 0}, {"is_available": False}, {"memory_per_gpu_mib": None},
    {"gone_at": "now"}, {"last_seen_at": "stale"}, {"last_seen_at": None}, {"country": ""},
])
def test_never_a_machine_not_whole_and_available_now(fleet, state):
    now = timezone.now()
    values = {"now": now, "stale": now - timedelta(hours=1)}
    state = {field: values.get(value, value) if isinstance(value, str) and value in values else value
             for field, value in state.items()}
    if state.get("memory_per_gpu_mib", 1) is None:
        state["memory_source"] = "unknown"
    node(fleet)
    node(fleet)
    taken = node(fleet, **state)
    [site] = cluster_sites(ANYWHERE, now=now)
    assert taken.pk not in site.machine_ids
    assert len(site.machine_ids) == 2


def test_never_a_machine_of_an_inactive_provider(fleet):
    node(fleet)
    node(fleet)
    fleet["secure"].is_active = False
    services.save_provider(fleet["secure"])
    assert cluster_sites(ANYWHERE) == ()


def test_prices_do_not_filter(fleet):
    node(fleet, price_per_gpu_hour=Decimal("9.00"))
    node(fleet, price_per_gpu_hour=Decimal("9.00"))
    limited = Preferences(max_price_per_hour=Decimal("1.00"), budget=Decimal("1.00"))
    assert len(cluster_sites(limited)) == 1


def test_a_large_site_lists_its_cheapest_machines_only(fleet):
    made = [node(fleet, price_per_gpu_hour=Decimal("2.00") + Decimal(n) / 100) for n in range(MACHINES_PER_SITE + 3)]
    [site] = cluster_sites(ANYWHERE)
    assert list(site.machine_ids) == [m.pk for m in made[:MACHINES_PER_SITE]]
    assert len(site.prices_per_gpu_hour) == MACHINES_PER_SITE


def test_sites_are_ordered_by_their_cheapest_machines_price_per_hour_not_per_gpu_hour(fleet):
    for _ in range(2):  # 8 × $2.00 = $16.00 per hour
        node(fleet, site="eight", price_per_gpu_hour=Decimal("2.00"))
    for _ in range(2):  # 4 × $3.00 = $12.00 per hour: dearer per GPU-hour, cheaper per hour
        node(fleet, site="four", gpu_count=4, free_gpus=4, price_per_gpu_hour=Decimal("3.00"))
    assert [(site.site, site.price_per_hour(1)) for site in cluster_sites(ANYWHERE)] == [
        ("four", Decimal("12.0000")), ("eight", Decimal("16.0000"))]


def test_sites_in_a_fixed_order_whatever_order_rows_were_written_in(fleet):
    def build(order):
        Machine.objects.all().delete()
        specs = [
            ("secure", "h100", "fra-1", "2.50"), ("secure", "h100", "fra-1", "2.60"),
            ("other", "h100", "osl-1", "2.40"), ("other", "h100", "osl-1", "2.70"),
            ("secure", "h200", "fra-1", "2.40"), ("secure", "h200", "fra-1", "2.40"),  # same hourly price
            ("secure", "h100", "ams-1", "2.55"), ("secure", "h100", "ams-1", "2.50"),
        ]
        for number in order:
            provider, gpu, site, price = specs[number]
            memory = H200_MIB if gpu == "h200" else H100_MIB
            node(fleet, provider=provider, gpu=gpu, site=site, memory_per_gpu_mib=memory,
                 provider_machine_id=f"{site}-{number}", price_per_gpu_hour=Decimal(price))
        names = dict(Machine.objects.values_list("pk", "provider_machine_id"))
        return [(s.provider, s.site, s.gpu_type, [names[machine_id] for machine_id in s.machine_ids])
                for s in cluster_sites(ANYWHERE)]

    forwards = build(range(8))
    assert forwards == [
        ("Fjord", "osl-1", "H100 SXM 80GB", ["osl-1-2", "osl-1-3"]),
        ("Harbor", "fra-1", "H200", ["fra-1-4", "fra-1-5"]),
        ("Harbor", "ams-1", "H100 SXM 80GB", ["ams-1-7", "ams-1-6"]),
        ("Harbor", "fra-1", "H100 SXM 80GB", ["fra-1-0", "fra-1-1"]),
    ]
    backwards = build(reversed(range(8)))
    assert [site[:3] for site in backwards] == [site[:3] for site in forwards]
    # Equal prices are broken by our id: written the other way round, the tie reads the other way.
    assert backwards[1][3] == ["fra-1-5", "fra-1-4"]
    assert [site[3] for site in backwards if site[1] != "fra-1" or site[2] != "H200"] == [
        site[3] for site in forwards if site[1] != "fra-1" or site[2] != "H200"
    ]
    assert build(range(8)) == forwards


def test_one_statement_whatever_the_number_of_sites(fleet):
    for number in range(6):
        node(fleet, site=f"site-{number % 3}", provider_machine_id=f"m{number}")
    with CaptureQueriesContext(connection) as queries:
        sites = cluster_sites(Preferences(countries=frozenset({"DE"})))
    assert len(sites) == 3
    assert len(queries) == 1


def random_cluster_fleet(fleet, rng: Random, machines: int, now) -> None:
    """`machines` machines drawn from `rng` over a few sites: every reason a machine may not join occurs
    (busy, gone, stale, offline, inactive provider, Community, slow or no RDMA, no site), sites over
    MACHINES_PER_SITE, equal prices, and machines alike but for their memory, fabric or place."""
    inactive = make_provider("Dormant", tier="secure", is_active=False)
    providers = [fleet["secure"], fleet["other"], fleet["community"], inactive]
    links = [("infiniband", 400), ("infiniband", 200), ("roce", 400), ("roce", 100), ("infiniband", 99),
             ("ethernet", 400), ("none", None)]
    rows = []
    for number in range(machines):
        provider = rng.choice(providers)
        gpu = rng.choice(["h100", "h200"])
        gpus = rng.choice([8, 8, 4])
        interconnect, gbps = rng.choice(links)
        memory = (H200_MIB if gpu == "h200" else H100_MIB) - rng.choice([0, 0, 0, 512])
        rows.append(build_machine(
            provider, fleet[gpu], provider_machine_id=f"r{number}", tier=provider.tier,
            provider_is_active=provider.is_active, gpu_count=gpus,
            free_gpus=rng.choice([gpus, gpus, gpus, gpus - 1, 0]), memory_per_gpu_mib=memory,
            site=rng.choice(["fra-1", "fra-1", "osl-1", "ams-1", ""]),
            interconnect=interconnect, interconnect_gbps=gbps,
            country=rng.choice(["DE", "DE", "NO", ""]), region=rng.choice(["Frankfurt", "Frankfurt", "Oslo"]),
            price_per_gpu_hour=rng.choice([Decimal("2.00"), Decimal("2.50"), Decimal("2.5001"), Decimal("3.10")]),
            booking_limit_hours=rng.choice([None, None, 24]),
            is_available=rng.random() < 0.9,
            last_seen_at=now - timedelta(hours=1) if rng.random() < 0.05 else now,
            gone_at=now if rng.random() < 0.03 else None,
        ))
    # One large site besides: more whole free machines than a site lists, at random prices.
    for number in range(MACHINES_PER_SITE + 5):
        rows.append(build_machine(
            fleet["secure"], fleet["h100"], provider_machine_id=f"big{number}", gpu_count=8, free_gpus=8,
            site="big-1", interconnect="infiniband", interconnect_gbps=rng.choice([400, 400, 200]),
            price_per_gpu_hour=rng.choice([Decimal("2.00"), Decimal("2.50"), Decimal("3.10")]), last_seen_at=now,
        ))
    # Other markets, drawn apart (the draws above stay as they were): listed interruptible, an interruptible
    # price below, at or above the listed one, a reserved term; prices under a market tie and cross.
    markets = Random(machines)
    for row in rows:
        draw = markets.random()
        if draw < 0.1:
            row.interruptible = True
        elif draw < 0.5:
            row.interruptible_price_per_gpu_hour = markets.choice([Decimal("1.20"), Decimal("2.00"), Decimal("2.60")])
        if markets.random() < 0.3:
            row.reserved_price_per_gpu_hour, row.reserved_term_days = markets.choice(
                [Decimal("1.20"), Decimal("1.90"), Decimal("3.50")]), 30
    rng.shuffle(rows)  # the order written is not the order read
    Machine.objects.bulk_create(rows)


@pytest.mark.postgresql(reason="compares PostgreSQL's grouped statement (array_agg in order) with the windowed one SQLite runs")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_grouped_statement_reads_what_the_windowed_one_does_on_a_random_fleet(fleet, seed):
    now = timezone.now()
    random_cluster_fleet(fleet, Random(seed), 400, now)
    choices = [ANYWHERE, Preferences(tier="secure"), Preferences(tier="community"),
               Preferences(countries=frozenset({"DE"})), Preferences(countries=frozenset({"NO", "DE"}), tier="secure"),
               Preferences(market="interruptible"), Preferences(market="any", countries=frozenset({"DE"}))]
    assert database.aggregates_in_order()
    for preferences in choices:
        grouped = cluster_sites(preferences, now=now)
        with mock.patch.object(database, "aggregates_in_order", return_value=False):
            windowed = cluster_sites(preferences, now=now)
        assert grouped == windowed
    sites = cluster_sites(ANYWHERE, now=now)
    # The fleet has what the comparison needs to mean something: sites cut at MACHINES_PER_SITE and
    # sites of a few machines, tied prices, and a site whose links differ (its slowest is its speed).
    assert any(len(site.machine_ids) == MACHINES_PER_SITE for site in sites)
    assert any(len(site.machine_ids) < MACHINES_PER_SITE for site in sites)
    assert any(len(set(site.prices_per_gpu_hour)) < len(site.prices_per_gpu_hour) for site in sites)
    [big] = [site for site in sites if site.site == "big-1"]
    assert big.interconnect_gbps == min(Machine.objects.filter(site="big-1").values_list("interconnect_gbps", flat=True))
    assert len(set(Machine.objects.filter(site="big-1").values_list("interconnect_gbps", flat=True))) == 2


@pytest.mark.parametrize("tier", ["both", "secure", "community"])
def test_the_tier_preference_lets_sites_through_as_the_rule_lets_machines_through(fleet, tier):
    node(fleet)
    node(fleet)
    node(fleet, site="osl-1", country="NO", region="Oslo")
    node(fleet, site="osl-1", country="NO", region="Oslo")
    every = cluster_sites(ANYWHERE)
    assert len(every) == 2
    preferences = Preferences(tier=tier)
    # `preference_breaks` at no price: only the tier can be broken.
    assert cluster_sites(preferences) == tuple(
        site for site in every if not preference_breaks(site, Decimal(0), preferences))


@pytest.mark.parametrize("market", ["on_demand", "interruptible", "any"])
def test_a_sites_machines_are_priced_by_the_market_rule_cheapest_first(fleet, market):
    """The price each site lists per machine is the market rule's (`sizing.markets.priced_in` over the
    machine's own markets), its machines cheapest first at those prices, on every reader of this
    database; the clusters shown name each machine's market by the same rule."""
    now = timezone.now()
    random_cluster_fleet(fleet, Random(4), 300, now)
    machines = {machine.pk: machine for machine in Machine.objects.all()}
    for grouped in readers():
        sites = cluster_sites(Preferences(market=market), now=now, grouped=grouped)
        assert len(sites) >= 2 and sum(len(site.machine_ids) for site in sites) > MACHINES_PER_SITE
        for site in sites:
            rule = [priced_in(machines[i].market_prices(), market) for i in site.machine_ids]
            assert list(site.prices_per_gpu_hour) == [each.price_per_gpu_hour for each in rule]
            assert list(site.prices_per_gpu_hour) == sorted(site.prices_per_gpu_hour)
        plans = [ClusterPlan(site=site, need=ClusterNeed(8, 2, (), (), 0, 0, None), model=None, precision=16,
                             kv_bits=16, context=1, requests=1)
                 for site in sites]
        for plan in with_machines(plans, market):
            assert [m.market for m in plan.machines] == [
                priced_in(machines[i].market_prices(), market).market for i in plan.machine_ids]
    if market != "on_demand":  # the fleet has machines priced in another market than their listed one
        assert any(priced_in(m.market_prices(), market).market != m.market_prices()[0].market
                   for m in machines.values())


def readers() -> list[bool]:
    """The ways the fleet reader reads sites on this database: windowed everywhere, grouped where the
    database gathers a group's values in order."""
    return [False, True] if database.aggregates_in_order() else [False]


@pytest.mark.parametrize("seed", [4, 5])
def test_the_countries_let_sites_through_as_the_availability_rule_lets_machines_through(fleet, seed):
    now = timezone.now()
    random_cluster_fleet(fleet, Random(seed), 300, now)
    for countries in (None, frozenset({"DE"}), frozenset({"NO"}), frozenset({"DE", "NO"}), frozenset({"FR"})):
        allowed = set(Machine.objects.filter(availability.available_q(availability.stale_cutoff(now), countries))
                      .values_list("pk", flat=True))
        for grouped in readers():
            every = cluster_sites(ANYWHERE, now=now, grouped=grouped)
            sites = cluster_sites(Preferences(countries=countries), now=now, grouped=grouped)
            # A site has one country: it is read whole or not at all, as its machines pass the rule.
            assert sites == tuple(site for site in every if set(site.machine_ids) <= allowed)
            assert all(set(site.machine_ids) <= allowed for site in sites)
            if countries == frozenset({"DE"}):
                assert sites and all(site.country == "DE" for site in sites)


@pytest.mark.postgresql(reason="compares the kept counts' reader (grouped statement) with the engine's (windowed)")
def test_both_fleet_readers_read_the_same_sites_for_a_query(fleet):
    now = timezone.now()
    random_cluster_fleet(fleet, Random(6), 300, now)
    base = "workload=inference&model=llama-3-1-405b&precision=16&context=8192&requests=1"
    for extra in ("", "&tier=secure", "&tier=community", "&countries=DE", "&budget=30&max_price=50"):
        query = parse_query(dict(pair.split("=") for pair in (base + extra).split("&")))
        kept = KEPT_COUNTS.cluster_sites(query, now)
        assert kept == EVERY_MACHINE.cluster_sites(query, now)
        assert bool(kept) == (extra != "&tier=community")


# The demo fleet's sites ---------------------------------------------------------------------------

def test_the_demo_fleet_has_its_four_cluster_sites(catalog):
    sites = cluster_sites(ANYWHERE)
    assert [(s.provider, s.site, s.gpu_type, s.country, s.interconnect, s.interconnect_gbps,
             [str(price * s.gpu_count) for price in s.prices_per_gpu_hour]) for s in sites] == [
        ("Fjord Datacenters", "OSL-A100", "A100 80GB", "NO", "roce", 400, ["12.7200", "13.2000"]),
        ("Harbor Compute", "FRA-IB1", "H100 SXM 80GB", "DE", "infiniband", 400,
         ["21.5200", "21.5200", "22.0000", "22.0000"]),
        ("Kumo Racks", "TYO-MI300", "MI300X", "JP", "roce", 400, ["23.1200", "23.1200"]),
        ("Meridian Cloud", "IAD-H200", "H200", "US", "infiniband", 400, ["27.9200", "27.9200", "28.7200"]),
    ]
    assert all(site.gpu_count == 8 for site in sites)
    # Sized on the memory CUDA reports: the catalog's measured figure for the H100, elsewhere nvidia-smi's
    # less the driver's 469 MiB.
    assert {s.gpu_type: s.usable_memory_mib for s in sites} == {
        "A100 80GB": 81_920 - 469, "H100 SXM 80GB": 81_090, "MI300X": 196_288 - 469, "H200": 143_771 - 469}
    assert [s.site for s in cluster_sites(Preferences(countries=frozenset({"DE", "FR"})))] == ["FRA-IB1"]


@pytest.mark.postgresql(reason="reads PostgreSQL's plan of the statement (EXPLAIN) to see the partial index serve it")
def test_the_partial_index_serves_the_statement(fleet):
    node(fleet)
    node(fleet)
    with CaptureQueriesContext(connection) as queries:
        cluster_sites(Preferences(countries=frozenset({"DE"})))
    [statement] = [query["sql"] for query in queries]
    with connection.cursor() as cursor:
        # A table this small is read whole whatever the indexes; forbidding that shows which index can
        # serve the statement, i.e. that its filter implies the index's condition.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {statement}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "catalog_machine_cluster_idx" in plan, plan


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql(reason="reads PostgreSQL's plan (EXPLAIN) to see the index cover the statement")
def test_the_index_carries_every_column_the_sites_statement_reads(fleet):
    for number in range(4):
        node(fleet, provider_machine_id=f"v{number}")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE catalog_machine")  # as autovacuum leaves a table between writes
    with CaptureQueriesContext(connection) as queries:
        [site] = cluster_sites(Preferences(countries=frozenset({"DE"})))
    [statement] = [query["sql"] for query in queries]
    with transaction.atomic(), connection.cursor() as cursor:
        # A table this small is read whole, or through the freshness index, whatever else is there;
        # forbidding both leaves the planner the indexes that can serve the statement.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute(f"EXPLAIN {statement}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    # Every column the statement reads is in the index: where the table's pages are all visible (as
    # vacuum leaves them), no machine's row is fetched.
    assert "Index Only Scan using catalog_machine_cluster_idx" in plan, plan
    assert len(site.machine_ids) == 4


# The machines of the clusters shown ---------------------------------------------------------------

def test_the_plans_shown_read_their_machines_ids_and_limits_in_one_statement(fleet):
    for number, limit in enumerate((None, 24, 48)):
        node(fleet, provider_machine_id=f"fra-{number}", booking_limit_hours=limit,
             price_per_gpu_hour=Decimal("2.50") + number)
    for number in range(2):
        node(fleet, site="ams-1", provider_machine_id=f"ams-{number}", price_per_gpu_hour=Decimal("3.00"))
    sites = cluster_sites(ANYWHERE)
    # Plans of two and three machines (their sizing is the planner's business, tested apart).
    counts = {"ams-1": 2, "fra-1": 3}
    plans = [ClusterPlan(site=site, need=ClusterNeed(8, counts[site.site], (), (), 0, 0, None), model=None,
                         precision=16, kv_bits=16, context=8192, requests=1)
             for site in sites]
    with CaptureQueriesContext(connection) as queries:
        shown = with_machines(plans)
    assert len(queries) == 1
    by_site = {plan.site.site: plan for plan in shown}
    assert [(m.provider_machine_id, m.price_per_hour, m.booking_limit_hours) for m in by_site["ams-1"].machines] == [
        ("ams-0", Decimal("24.0000"), None), ("ams-1", Decimal("24.0000"), None)]
    assert [(m.provider_machine_id, m.price_per_hour, m.booking_limit_hours) for m in by_site["fra-1"].machines] == [
        ("fra-0", Decimal("20.0000"), None), ("fra-1", Decimal("28.0000"), 24), ("fra-2", Decimal("36.0000"), 48)]
    assert by_site["fra-1"].booking_limit_hours == 24 and by_site["ams-1"].booking_limit_hours is None
    assert by_site["fra-1"].price_per_hour == Decimal("84.0000")
    # A machine taken out of the catalog since the search: its cluster is not shown.
    Machine.objects.filter(provider_machine_id="ams-1").delete()
    assert [plan.site.site for plan in with_machines(plans)] == ["fra-1"]
    assert with_machines([]) == []


def test_a_plan_whose_machine_was_repriced_since_the_search_is_left_out(fleet):
    """The clusters shown read each machine's market by the rule its price was searched at: a machine whose
    price under the market preference changed in between (its interruptible price gone) leaves its
    cluster out rather than show a price the market named does not have."""
    node(fleet, provider_machine_id="spot", interruptible_price_per_gpu_hour=Decimal("1.00"))
    node(fleet, provider_machine_id="plain")
    [site] = cluster_sites(Preferences(market="interruptible"))
    plan = ClusterPlan(site=site, need=ClusterNeed(8, 2, (), (), 0, 0, None), model=None, precision=16,
                       kv_bits=16, context=8192, requests=1)
    [shown] = with_machines([plan], "interruptible")
    assert [(m.provider_machine_id, m.market, m.price_per_hour) for m in shown.machines] == [
        ("spot", "interruptible", Decimal("8.0000")), ("plain", "on_demand", Decimal("20.0000"))]
    Machine.objects.filter(provider_machine_id="spot").update(interruptible_price_per_gpu_hour=None)
    assert with_machines([plan], "interruptible") == []
