"""Every request's work is bounded whatever its parameters: an answer under the market preference
(interruptible allowed, any market) is read from the kept counts and the price walks as the default's is,
in as many statements, and the rows it reads do not grow with the fleet."""
from __future__ import annotations

import copy
import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog.models import Machine
from nodelodge.recommendations.answer import recommendation_for
from tests.differential import parse, random_fleet
from tests.helpers import LLAMA_8B, RowsRead

pytestmark = pytest.mark.postgresql(
    reason="the kept counts answer on PostgreSQL; on SQLite the engine reads the fleet, as for every market"
)

COPIES = 9  # the fleet grown tenfold: each machine again, at the same figures, under other ids


def work(query_string: str, now) -> tuple[int, int]:
    """(statements, rows returned) of one answer, with relaxing (its hints) included."""
    rows = RowsRead()
    with CaptureQueriesContext(connection) as statements, connection.execute_wrapper(rows):
        recommendation_for(parse(query_string), now=now)
    return len(statements), rows.rows


def grow(copies: int) -> None:
    """Each machine not gone `copies` times more, at the same figures under other ids at its provider."""
    machines = list(Machine.objects.filter(gone_at__isnull=True))
    copied = []
    for number in range(copies):
        for machine in machines:
            twin = copy.copy(machine)
            twin.pk = None
            twin.provider_machine_id = f"{machine.provider_machine_id}-{number}"
            copied.append(twin)
    Machine.objects.bulk_create(copied)


@pytest.mark.parametrize("market", ["interruptible", "any"])
def test_an_answer_under_another_market_does_the_defaults_work_whatever_the_fleet(models_and_gpus, market):
    now = timezone.now()
    random_fleet(random.Random(11), 60, now)
    queries = {"default": LLAMA_8B + "&limit=3", market: LLAMA_8B + f"&limit=3&market={market}"}
    small = {name: work(query, now) for name, query in queries.items()}
    grow(COPIES)
    available = Machine.objects.filter(gone_at__isnull=True, is_available=True).count()
    large = {name: work(query, now) for name, query in queries.items()}
    # As many statements as the default answer, at either size.
    assert small[market][0] == small["default"][0] and large[market][0] == large["default"][0]
    assert large[market][0] == small[market][0]
    # The same rows read with ten times the machines: shapes and the few machines shown, never the fleet
    # (the engine over every machine read each available one).
    assert large[market][1] == small[market][1] and large["default"][1] == small["default"][1]
    assert large[market][1] < available // 4
