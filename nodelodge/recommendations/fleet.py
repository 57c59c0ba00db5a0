"""One door to the fleet: what an answer reads of the machines, from the database it runs on.

Two readers answer the same questions. `KeptCounts` (PostgreSQL) counts the whole fleet against fit
thresholds in the counts the database keeps, and fetches only the machines an answer shows. `EveryMachine`
(the embedded SQLite run, and the reference the first is tested against) takes the engine over every
available machine, counted with the ORM. `fleet_reader()` chooses once, from what the database can do;
nothing else asks which database it is.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Protocol, cast

from django.conf import settings
from django.db.models import Case, Count, IntegerField, Max, Min, Value, When

from catalog import availability, database
from catalog import clusters as catalog_clusters
from catalog import rows as catalog_rows
from catalog.counting import countries as catalog_countries
from catalog.counting import fleet as catalog_fleet
from catalog.counting import speeds as catalog_speeds
from catalog.counting.fleet_query import FleetQuery
from catalog.models import Machine
from sizing import fit as sizing_fit
from sizing.breakdown import Breakdown
from sizing.cluster_sites import ClusterSite
from sizing.kinds import NO_KINDS, KindSpace
from sizing.matching import ALTERNATIVES_SHOWN, Recommendation, recommend, recommend_counted
from sizing.offers import MachineOffer, Preferences, TierChoice
from sizing.reasons import OFFLINE, STALE

from .query import WorkloadQuery

# Queries counted by one statement of `KeptCounts.meeting_many`: each is one more pass over the kept
# counts (a few thousand rows), so larger statements save round trips only, and plan longer.
MEETING_CHUNK = 50


def stale_cutoff(now: datetime) -> datetime:
    return availability.stale_cutoff(now)


def stale_after_minutes() -> int:
    return settings.MACHINE_STALE_AFTER_SECONDS // 60


def preferences_for(query: WorkloadQuery) -> Preferences:
    return Preferences(
        budget=query.budget,
        max_price_per_hour=query.max_price,
        tier=cast(TierChoice, query.tier),  # a parsed query's tier is one of the choices
        min_reliability=query.min_reliability,
        market=query.market,
        countries=query.countries,
        countries_input=query.countries_input,
        sort=query.sort,
    )


Fits = tuple[tuple[tuple[tuple[int, int], ...], ...], KindSpace]


def fits_of(breakdowns: list[Breakdown]) -> Fits:
    """The fit thresholds of `breakdowns` read against one memory, and the kinds of GPU they tell apart."""
    return sizing_fit.thresholds_alike(breakdowns), sizing_fit.kind_space_of(breakdowns)


def fleet_query(
    query: WorkloadQuery, breakdowns: list[Breakdown], now: datetime, machines_shown: int = 0,
    alternatives_shown: int = 0, lower_shown: int = 0, fits: Fits | None = None,
) -> FleetQuery:
    """The query as the catalog counts it: one set of fit thresholds per breakdown, the first the
    one the machines shown are for (by default counts alone, no machine fetched). `fits`: those
    thresholds and their kinds of GPU (`fits_of`), worked out already."""
    thresholds, kinds = fits_of(breakdowns) if fits is None else fits
    return FleetQuery(
        stale_cutoff=stale_cutoff(now),
        countries=query.countries,
        fits=thresholds,
        by_kind=kinds,
        tier=query.tier,
        max_price_per_hour=query.max_price,
        budget=query.budget,
        machines_shown=machines_shown,
        alternatives_shown=alternatives_shown,
        lower_shown=lower_shown,
        min_reliability=query.min_reliability,
        market=query.market,
    )


def speed_query(
    query: WorkloadQuery, precision: int, thresholds, cutoff: datetime, keep: int, kinds: KindSpace = NO_KINDS
) -> catalog_speeds.SpeedQuery:
    return catalog_speeds.SpeedQuery(
        stale_cutoff=cutoff,
        countries=query.countries,
        tier=query.tier,
        model_slug=cast(str, query.model_slug),  # speeds are read for a model
        precision=precision,
        fits=thresholds,
        max_price_per_hour=query.max_price,
        budget=query.budget,
        target=query.target_tokens,
        efficiency=query.efficiency,
        redundancy=query.redundancy,
        keep=keep,
        per_gpu_type=query.gpu_plans,
        min_reliability=query.min_reliability,
        market=query.market,
        by_kind=kinds,
    )


class FleetReader(Protocol):
    """What the answer reads of the fleet; both readers give the same figures."""

    def recommend(
        self, query: WorkloadQuery, breakdown: Breakdown, lower: dict[int, Breakdown], now: datetime,
        machines_shown: int | None, extra_ids: Sequence[int] = (),
    ) -> tuple[Recommendation, dict]:
        """The engine's answer with its counts over the whole fleet, the first `machines_shown`
        machines described (and those `extra_ids` names), and the reports' freshness."""

    def meeting(
        self, query: WorkloadQuery, breakdown: Breakdown, now: datetime
    ) -> tuple[int, Decimal | None]:
        """How many machines fit `breakdown` and meet every preference of `query`, and the cheapest
        hourly price among them (None: none does): the counts alone, no machine described."""

    def meeting_many(
        self, asked: list[tuple[WorkloadQuery, Breakdown]], now: datetime
    ) -> list[tuple[int, Decimal | None]]:
        """`meeting` of each (query, breakdown) of `asked`, in order."""

    def meeting_by_country(
        self, query: WorkloadQuery, breakdown: Breakdown, now: datetime
    ) -> tuple[int, list[tuple[str, Decimal]]]:
        """How many machines fit `breakdown` and meet every preference of `query`, and each country
        holding them with its cheapest hourly price there, cheapest first (ties by country code)."""

    def meeting_by_country_many(
        self, asked: list[tuple[WorkloadQuery, Breakdown]], now: datetime
    ) -> list[tuple[int, list[tuple[str, Decimal]]]]:
        """`meeting_by_country` of each (query, breakdown) of `asked`, in order."""

    def speed_rows(
        self, query: WorkloadQuery, precision: int, thresholds, cutoff: datetime, keep: int,
        kinds: KindSpace = NO_KINDS,
    ) -> tuple[list[catalog_speeds.SpeedRow], int | None]:
        """The machines with a measured speed for the model and precision that a plan may use (`thresholds`
        of the kinds of GPU `kinds` tells apart), and
        how many fit and meet every preference (None: the rows are not screened by the preferences
        yet, and all of them came back)."""

    def cluster_sites(self, query: WorkloadQuery, now: datetime) -> tuple[ClusterSite, ...]:
        """The sites where a cluster may be formed now for `query`: its machines available by the one
        rule, in its countries and tier, at their prices under its market preference
        (`catalog.clusters.cluster_sites`; prices are held to the preferences per cluster,
        `sizing.cluster_search.ClusterSearch.cheapest`)."""


class KeptCounts:
    """PostgreSQL: the counts the database keeps, and only the machines an answer shows (under every
    market preference: the counts keep each machine's price under each choice)."""

    def recommend(self, query, breakdown, lower, now, machines_shown, extra_ids=()):
        lower_order = sorted(lower, reverse=True)
        fleet = catalog_fleet.counted_fleet(
            fleet_query(
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
            stale_after_minutes=stale_after_minutes(),
            machines_shown=machines_shown,
        )
        return recommendation, {"newest": fleet.newest, "oldest": fleet.oldest}

    def meeting(self, query, breakdown, now):
        fleet = catalog_fleet.counted_fleet(fleet_query(query, [breakdown], now))
        return fleet.counted.fitting, fleet.cheapest_meeting.get(0)

    def meeting_many(self, asked, now):
        """A few counting statements whatever the number asked (MEETING_CHUNK queries each), through
        the countries' counts: a query's machines are those of its countries together, and its
        cheapest price the cheapest country's (the differential tests hold them to `meeting`)."""
        found = []
        for start in range(0, len(asked), MEETING_CHUNK):
            for total, countries in self.meeting_by_country_many(asked[start:start + MEETING_CHUNK], now):
                found.append((total, countries[0][1] if countries else None))
        return found

    def meeting_by_country(self, query, breakdown, now):
        return self.meeting_by_country_many([(query, breakdown)], now)[0]

    def meeting_by_country_many(self, asked, now):
        """One counting statement answers them all. The queries asked of one need (an empty answer's
        openings: a dozen of three) share its fit thresholds, worked out once."""
        fits: dict[int, Fits] = {}
        for _, breakdown in asked:
            if id(breakdown) not in fits:
                fits[id(breakdown)] = fits_of([breakdown])
        every = catalog_countries.meeting_by_country_many(
            [fleet_query(query, [breakdown], now, fits=fits[id(breakdown)]) for query, breakdown in asked]
        )
        return [
            (
                sum(machines for _, _, machines in found),
                [(country, cheapest) for country, cheapest, _ in found],
            )
            for found in every
        ]

    def speed_rows(self, query, precision, thresholds, cutoff, keep, kinds=NO_KINDS):
        """Only those a plan can use and the `keep` cheapest of each speed class come back
        (`catalog.counting.speeds.speed_rows_counted` says why no other can matter)."""
        return catalog_speeds.speed_rows_counted(
            speed_query(query, precision, thresholds, cutoff, keep, kinds))

    def cluster_sites(self, query, now):
        """One statement groups the sites (`catalog.clusters.SITES_SQL`)."""
        return catalog_clusters.cluster_sites(preferences_for(query), now=now, grouped=True)


class EveryMachine:
    """The engine over every machine the catalog may offer: the embedded run's fleet is small."""

    def recommend(self, query, breakdown, lower, now, machines_shown, extra_ids=()):
        # Every machine the answer may show is described already: `extra_ids` adds none.
        return recommend_over_every_machine(query, breakdown, lower, now, machines_shown)

    def meeting(self, query, breakdown, now):
        found, _ = recommend_over_every_machine(query, breakdown, {}, now, 1)
        return found.machines_total, (found.machines[0].hourly_price if found.machines else None)

    def meeting_many(self, asked, now):
        return [self.meeting(query, breakdown, now) for query, breakdown in asked]

    def meeting_by_country(self, query, breakdown, now):
        return self.meeting_by_country_many([(query, breakdown)], now)[0]

    def meeting_by_country_many(self, asked, now):
        """The available machines are read once per set of countries asked, and the engine weighs each
        query over them: an empty answer's openings (a dozen, in two country sets at most) cost a read
        per set, not one per opening."""
        read: dict[frozenset[str] | None, list[MachineOffer]] = {}
        found = []
        for query, breakdown in asked:
            if query.countries not in read:
                read[query.countries] = catalog_rows.machine_offers(
                    Machine.objects.filter(availability.available_q(stale_cutoff(now), query.countries))
                )
            meeting = recommend(
                breakdown, read[query.countries], preferences_for(query), now=now,
                stale_after_minutes=stale_after_minutes(), machines_shown=None,
            )
            cheapest: dict[str, Decimal] = {}
            for machine in meeting.machines:
                # an available machine has a known country (the availability rule's OUTSIDE check)
                country, hourly = cast(str, machine.offer.country), machine.hourly_price
                if country not in cheapest or hourly < cheapest[country]:
                    cheapest[country] = hourly
            found.append(
                (meeting.machines_total, sorted(cheapest.items(), key=lambda item: (item[1], item[0])))
            )
        return found

    def speed_rows(self, query, precision, thresholds, cutoff, keep, kinds=NO_KINDS):
        rows = catalog_speeds.speed_rows(
            stale_cutoff=cutoff,
            countries=query.countries,
            tier=query.tier,
            model_slug=query.model_slug,
            precision=precision,
            min_memory_mib=sizing_fit.lowest_memory(thresholds),
            min_reliability=query.min_reliability,
            market=query.market,
        )
        return rows, None

    def cluster_sites(self, query, now):
        """Every machine that may join one, grouped by the engine's side of the catalog."""
        return catalog_clusters.cluster_sites(preferences_for(query), now=now, grouped=False)


KEPT_COUNTS = KeptCounts()
EVERY_MACHINE = EveryMachine()


def fleet_reader() -> FleetReader:
    """The reader for the database this process runs on."""
    return KEPT_COUNTS if database.keeps_counts() else EVERY_MACHINE


def recommend_over_every_machine(
    query: WorkloadQuery,
    breakdown: Breakdown,
    lower: dict[int, Breakdown],
    now: datetime,
    machines_shown: int | None,
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
        stale_after_minutes=stale_after_minutes(),
        machines_shown=machines_shown,
    )
    return recommendation, {"newest": newest, "oldest": oldest}


def last_report() -> datetime | None:
    """When any machine of the fleet last reported (None: none ever has)."""
    return Machine.objects.filter(availability.in_fleet_q()).aggregate(newest=Max("last_seen_at"))["newest"]
