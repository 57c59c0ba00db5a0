"""The price and stock history the refreshes keep: one row per GPU type, market, country and hour,
sampled from the whole fleet in one statement at most once per interval, pruned past its retention."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog.markets import Market, market_prices, markets_of
from catalog.models import Machine
from nodelodge.refresh.history import hour_of, prune_price_history, record_price_history, sample_price_history
from nodelodge.refresh.models import ALL_COUNTRIES, HistorySampling, PriceHistory
from tests.factories import make_machine

pytestmark = pytest.mark.django_db


def rows(gpu_type) -> dict[tuple[str, str], tuple]:
    return {
        (row.market, row.country): (row.cheapest_per_gpu_hour, row.median_per_gpu_hour, row.offers,
                                     row.offers_in_stock, row.refreshes, row.refreshes_with_stock)
        for row in PriceHistory.objects.filter(gpu_type=gpu_type)
    }


def test_a_refresh_writes_one_row_per_type_market_and_country_and_one_for_every_country(gpu_types, providers):
    h100, secure, community = gpu_types["h100"], providers["secure"], providers["community"]
    for price, country, free in (("2.00", "DE", 0), ("3.00", "DE", 2), ("2.50", "DE", 0), ("1.50", "US", 1)):
        make_machine(secure, h100, price_per_gpu_hour=Decimal(price), country=country, free_gpus=free, gpu_count=2)
    # Another provider's offer of the same type counts too; an interruptible one is its own market.
    make_machine(community, h100, price_per_gpu_hour=Decimal("4.00"), country="US", free_gpus=0)
    make_machine(community, h100, price_per_gpu_hour=Decimal("0.90"), country="DE", interruptible=True)
    now = timezone.now()

    record_price_history(now)

    assert rows(h100) == {
        ("on_demand", "DE"): (Decimal("2.0000"), Decimal("2.50000"), 3, 1, 1, 1),
        ("on_demand", "US"): (Decimal("1.5000"), Decimal("2.75000"), 2, 1, 1, 1),
        ("on_demand", ALL_COUNTRIES): (Decimal("1.5000"), Decimal("2.50000"), 5, 2, 1, 1),
        ("interruptible", "DE"): (Decimal("0.9000"), Decimal("0.90000"), 1, 1, 1, 1),
        ("interruptible", ALL_COUNTRIES): (Decimal("0.9000"), Decimal("0.90000"), 1, 1, 1, 1),
    }
    assert set(PriceHistory.objects.values_list("hour", flat=True)) == {hour_of(now)}


def test_refreshes_in_the_same_hour_keep_the_lowest_price_the_latest_median_and_count_the_stock(
        gpu_types, providers):
    h100, secure = gpu_types["h100"], providers["secure"]
    now = timezone.now().replace(minute=5)
    machine = make_machine(secure, h100, price_per_gpu_hour=Decimal("2.00"), free_gpus=1, last_seen_at=now)
    record_price_history(now)
    machine.price_per_gpu_hour, machine.free_gpus = Decimal("3.00"), 0
    for minutes in (20, 40):  # each refresh hears from the machine
        machine.last_seen_at = now + timedelta(minutes=minutes)
        machine.save()
        record_price_history(machine.last_seen_at)

    # Three refreshes, one of them with stock: a share of 1/3, exact.
    assert rows(h100)[("on_demand", "DE")] == (Decimal("2.0000"), Decimal("3.00000"), 1, 0, 3, 1)
    # The next hour is a row of its own.
    Machine.objects.filter(pk=machine.pk).update(last_seen_at=now + timedelta(hours=1))
    record_price_history(now + timedelta(hours=1))
    assert PriceHistory.objects.filter(gpu_type=h100, country="DE").count() == 2


def test_gone_stale_and_inactive_providers_offers_are_not_seen(gpu_types, providers):
    h100, secure, community = gpu_types["h100"], providers["secure"], providers["community"]
    now = timezone.now()
    make_machine(secure, h100, price_per_gpu_hour=Decimal("2.00"))
    make_machine(secure, h100, price_per_gpu_hour=Decimal("0.50"), gone_at=now, is_available=False)
    make_machine(secure, h100, price_per_gpu_hour=Decimal("0.60"), last_seen_at=now - timedelta(hours=2))
    community.is_active = False
    community.save()
    make_machine(community, h100, price_per_gpu_hour=Decimal("0.70"))

    record_price_history(now)

    assert rows(h100)[("on_demand", "DE")] == (Decimal("2.0000"), Decimal("2.00000"), 1, 1, 1, 1)


def test_a_sample_observes_every_gpu_type_of_every_provider(gpu_types, providers):
    secure, community = providers["secure"], providers["community"]
    make_machine(secure, gpu_types["h100"])
    make_machine(community, gpu_types["rtx4090"])

    record_price_history(timezone.now())

    assert len(rows(gpu_types["rtx4090"])) == 2
    assert len(rows(gpu_types["h100"])) == 2


def test_a_refresh_samples_the_history_at_most_once_per_interval(gpu_types, providers, settings):
    settings.PRICE_HISTORY_SAMPLE_SECONDS = 300
    make_machine(providers["secure"], gpu_types["h100"], country="DE")
    now = timezone.now()

    taken = [sample_price_history(now + timedelta(seconds=seconds)) for seconds in (0, 1, 299, 300, 450, 600)]

    assert taken == [True, False, False, True, False, True]
    # Three samples, whichever hours they fall in: each counted once.
    assert sum(row.refreshes for row in PriceHistory.objects.filter(gpu_type=gpu_types["h100"], market="on_demand",
                                                                    country="DE")) == 3


def test_a_sampling_row_lost_to_a_flush_is_made_again(gpu_types, providers):
    make_machine(providers["secure"], gpu_types["h100"])
    HistorySampling.objects.all().delete()

    assert sample_price_history(timezone.now()) is True
    assert HistorySampling.objects.get().sampled_at is not None


@pytest.mark.parametrize(("machines", "groups"), [(3, 6), (150, 16)])
def test_the_history_is_written_by_one_statement_whatever_the_fleet(gpu_types, providers, machines, groups):
    secure = providers["secure"]
    for number in range(machines):
        make_machine(secure, gpu_types["h100" if number % 2 else "rtx4090"], country=("DE", "US", "FR")[number % 3],
                     price_per_gpu_hour=Decimal(1 + number % 7), interruptible=number % 5 == 0)
    with CaptureQueriesContext(connection) as statements:
        record_price_history(timezone.now())
    assert len(statements) == 1
    # 150 machines: 2 types × 2 markets × (3 countries + every country)
    assert PriceHistory.objects.count() == groups


def test_pruning_deletes_the_hours_past_the_retention_only(gpu_types, providers, settings):
    settings.PRICE_HISTORY_RETENTION_DAYS = 90
    secure = providers["secure"]
    make_machine(secure, gpu_types["h100"])
    now = timezone.now()
    for age in (timedelta(days=91), timedelta(days=90, hours=1), timedelta(days=89), timedelta(0)):
        record_price_history(now - age)
    with CaptureQueriesContext(connection) as statements:
        assert prune_price_history(now) == 4  # two hours × (DE, every country)
    assert len(statements) == 1
    assert sorted({hour_of(now - age) for age in (timedelta(days=89), timedelta(0))}) == sorted(
        set(PriceHistory.objects.values_list("hour", flat=True)))


def test_a_machines_market_and_price_come_from_one_place(gpu_types, providers):
    secure = providers["secure"]
    on_demand = make_machine(secure, gpu_types["h100"], price_per_gpu_hour=Decimal("2.10"))
    spot = make_machine(secure, gpu_types["h100"], price_per_gpu_hour=Decimal("0.80"), interruptible=True)
    assert markets_of(on_demand) == [(Market.ON_DEMAND, Decimal("2.10"))]
    assert markets_of(spot) == [(Market.INTERRUPTIBLE, Decimal("0.80"))]


def test_a_machine_offered_in_three_markets_is_recorded_in_each_at_its_price_there(gpu_types, providers):
    """The history's markets are the offers' (`sizing.markets`): on demand at the listed price, the
    interruptible price, the reserved price with its term; the ORM's filters and prices say the same
    as the rule does of each machine."""
    h100, secure = gpu_types["h100"], providers["secure"]
    three = make_machine(secure, h100, price_per_gpu_hour=Decimal("2.10"), country="DE", free_gpus=1,
                         interruptible_price_per_gpu_hour=Decimal("0.61"),
                         reserved_price_per_gpu_hour=Decimal("1.55"), reserved_term_days=30)
    listed_spot = make_machine(secure, h100, price_per_gpu_hour=Decimal("0.70"), country="DE", free_gpus=1,
                               interruptible=True)
    now = timezone.now()

    record_price_history(now)

    found = rows(h100)
    assert {key: value[0] for key, value in found.items() if key[1] == "DE"} == {
        ("on_demand", "DE"): Decimal("2.1000"),
        ("interruptible", "DE"): Decimal("0.6100"),
        ("reserved", "DE"): Decimal("1.5500"),
    }
    assert found[("interruptible", "DE")][2] == 2  # both machines are offered interruptible
    assert markets_of(three) == [(Market.ON_DEMAND, Decimal("2.10")), (Market.INTERRUPTIBLE, Decimal("0.61")),
                                 (Market.RESERVED, Decimal("1.55"))]
    assert markets_of(listed_spot) == [(Market.INTERRUPTIBLE, Decimal("0.70"))]
    for market in market_prices():
        offered = Machine.objects.filter(market.where).annotate(market_price=market.price)
        assert {machine.pk: machine.market_price for machine in offered} == {
            machine.pk: market.price_of(machine)
            for machine in Machine.objects.all() if market.offered(machine)
        }
