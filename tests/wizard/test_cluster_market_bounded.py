"""Every request's work is bounded whatever its parameters: an answer's clusters under the market
preference (interruptible allowed, any market) are read in as many statements as on demand only, the rows
read back differ from on demand's by no more than a constant, and on PostgreSQL they do not grow with the
machines a site lists (each site is one grouped row, its machines cut at MACHINES_PER_SITE). The machines'
own listing under a market is held to its bound by test_market_bounded.py."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog.clusters import MACHINES_PER_SITE
from nodelodge.recommendations.clusters import clusters_for
from nodelodge.recommendations.estimate import estimate_for
from tests.differential import parse
from tests.helpers import RowsRead

pytestmark = pytest.mark.django_db

# Llama 3.1 405B in 16-bit fits no machine: the answer plans its clusters (and says what to relax).
QUERY = "workload=inference&model=llama-3-1-405b&precision=16&context=8192&requests=1&clusters=show"
MARKETS = ("interruptible", "any")
SITES = 6
# What a market may read besides on demand's: nothing today (the same statements, one row per site, the
# same machines for the clusters shown); a constant, never a share of the fleet.
EXTRA_ROWS = 0


def work(query_string: str, now) -> tuple[int, int, int]:
    """(statements, rows returned, clusters shown) of an answer's clusters (`clusters_for`, as the answer
    plans them; the model's row read before)."""
    query = parse(query_string)
    _breakdown, model_row = estimate_for(query)
    rows = RowsRead()
    with CaptureQueriesContext(connection) as statements, connection.execute_wrapper(rows):
        answer = clusters_for(query, model_row, now)
    return len(statements), rows.rows, len(answer.offers)


def add_machines(make_machine, per_site: int, start: int = 0) -> None:
    """`per_site` more whole 8 × H100 machines at each of SITES sites, their prices and markets varied:
    every other one also offered interruptible, every third with a reserved term."""
    for site in range(SITES):
        for number in range(start, start + per_site):
            markets: dict = {}
            if number % 2:
                markets["interruptible_price_per_gpu_hour"] = Decimal("1.00") + Decimal(number % 7) / 10
            if number % 3 == 0:
                markets.update(reserved_price_per_gpu_hour=Decimal("1.80"), reserved_term_days=30)
            make_machine("H100 SXM 80GB", gpu_count=8, free_gpus=8, site=f"site-{site}", interconnect="infiniband",
                         interconnect_gbps=400, country="US", region="Virginia",
                         price_per_gpu_hour=Decimal("2.00") + Decimal((number * 13 + site) % 11) / 10, **markets)


@pytest.mark.parametrize("market", MARKETS)
def test_clusters_under_a_market_take_the_statements_and_rows_of_on_demand(models_and_gpus, make_machine, market):
    add_machines(make_machine, 4)
    now = timezone.now()
    default = work(QUERY, now)
    chosen = work(QUERY + f"&market={market}", now)
    assert default[2] == chosen[2] == SITES  # a cluster at every site, under either choice
    assert chosen[0] == default[0] == 2  # the sites, then the machines of the clusters shown
    assert default[1] <= chosen[1] <= default[1] + EXTRA_ROWS
    # At most a site's cut of machines per site, and the machines of the clusters shown.
    assert chosen[1] <= SITES * MACHINES_PER_SITE + 2 * SITES


@pytest.mark.postgresql(reason="PostgreSQL groups each site into one row; SQLite reads each site's machines up to "
                               "MACHINES_PER_SITE through window functions, whatever the market")
@pytest.mark.parametrize("market", MARKETS)
def test_clusters_under_a_market_read_as_much_whatever_the_machines_a_site_lists(
    models_and_gpus, make_machine, market
):
    add_machines(make_machine, 4)
    now = timezone.now()
    small = {name: work(query, now) for name, query in (("default", QUERY), (market, QUERY + f"&market={market}"))}
    add_machines(make_machine, 3 * MACHINES_PER_SITE, start=4)  # past what a site's row lists
    large = {name: work(query, now) for name, query in (("default", QUERY), (market, QUERY + f"&market={market}"))}
    assert large[market][0] == small[market][0] == large["default"][0]
    assert large[market][1] == small[market][1] == SITES + 2 * SITES  # a row per site, two machines per cluster
    assert large[market][1] <= large["default"][1] + EXTRA_ROWS
