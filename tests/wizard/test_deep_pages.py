"""Pages reach the cheapest 1,000 machines that fit: each reachable page lists exactly what it
listed before the window, and a page past it is refused before anything is computed."""
import random
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog.models import GpuType, Machine
from nodelodge.recommendations import estimate, fleet
from nodelodge.recommendations.query import parse_query
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

FLEET = 1_150  # past the window, so its edge is crossed


@pytest.fixture
def generated_fleet(providers):
    """1,150 machines that fit the 8B query, with many ties of hourly price and price per GPU, so
    the order's every tie-break (provider, machine id) decides somewhere."""
    rng = random.Random(31)
    gpus = {g.name: g for g in GpuType.objects.filter(name__in=["RTX 4090", "A100 80GB", "L40S", "H100 SXM 80GB"])}
    now = timezone.now()
    machines = []
    for number in range(FLEET):
        gpu = gpus[rng.choice(sorted(gpus))]
        count = rng.choice([1, 1, 2, 4])
        machines.append(Machine(
            provider=providers[rng.choice(["secure", "community"])],
            provider_machine_id=f"g-{rng.randrange(10**6):06d}-{number}",
            gpu_type=gpu, gpu_count=count, free_gpus=count, memory_per_gpu_mib=gpu.memory_mib,
            memory_source="datacenter", country=rng.choice(["DE", "FR", "US"]), region="r",
            price_per_gpu_hour=Decimal(rng.choice(["0.40", "0.50", "0.80", "1.00", "1.20"])),
            is_available=True, last_seen_at=now,
        ))
    Machine.objects.bulk_create(machines)


def engine_order():
    """Today's engine over every machine, in the listing's order: the reference."""
    query = parse_query(dict(pair.split("=") for pair in LLAMA_8B.split("&")))
    breakdown, _ = estimate.estimate_for(query)
    recommendation, _ = fleet.recommend_over_every_machine(query, breakdown, {}, timezone.now(), None)
    return [m.offer.id for m in recommendation.machines]


def page_ids(client, limit, page):
    response = client.get(f"/api/v1/recommendations?{LLAMA_8B}&limit={limit}&page={page}")
    assert response.status_code == 200, response.content
    return [m["id"] for m in response.json()["machines"]]


def test_every_reachable_page_lists_the_machines_it_listed_before_in_the_same_order(client, generated_fleet):
    whole = engine_order()
    assert len(whole) == FLEET
    for limit in (25, 100, 7, 1000):
        last = -(-1000 // limit)
        walked = []
        for page in range(1, last + 1):
            ids = page_ids(client, limit, page)
            assert ids == whole[(page - 1) * limit:page * limit], (limit, page)
            walked += ids
        assert walked == whole[:last * limit]
        body = client.get(f"/api/v1/recommendations?{LLAMA_8B}&limit={limit}").json()
        assert body["listing"]["pages"] == last and body["machines_total"] == FLEET


def test_a_page_past_the_window_is_refused_in_words_on_the_api_and_the_page(client, generated_fleet):
    response = client.get(f"/api/v1/recommendations?{LLAMA_8B}&page=11")
    assert response.status_code == 404  # no such page of the list
    assert response.json()["errors"]["page"] == (
        "The list reaches the cheapest 1,000 machines: with 100 per page, pages 1 to 10. "
        "Narrow the search or sort it another way to see others."
    )
    html = client.get(f"/?{LLAMA_8B}&page=99999").content.decode()
    assert "with 25 per page, pages 1 to 40" in html
    html = client.get(f"/de/?{LLAMA_8B}&page=41").content.decode()
    assert "mit 25 je Seite die Seiten 1 bis 40" in html


def described(monkeypatch):
    """Records how many machines each answer had described, on either database's path."""
    seen = []
    for reader in (fleet.KEPT_COUNTS, fleet.EVERY_MACHINE):
        original = reader.recommend

        def spy(query, breakdown, lower, now, machines_shown, *rest, _original=original, **kw):
            recommendation, freshness = _original(query, breakdown, lower, now, machines_shown, *rest, **kw)
            seen.append((machines_shown, len(recommendation.machines)))
            return recommendation, freshness

        monkeypatch.setattr(reader, "recommend", spy)
    return seen


def test_a_deep_page_reads_no_more_machines_than_the_first_thousand(client, generated_fleet, monkeypatch):
    seen = described(monkeypatch)
    with CaptureQueriesContext(connection) as first:
        assert client.get(f"/api/v1/recommendations?{LLAMA_8B}&limit=25").status_code == 200
    assert seen and all(shown == 25 for shown, _ in seen)
    seen.clear()
    assert client.get(f"/api/v1/recommendations?{LLAMA_8B}&limit=25&page=40").status_code == 200
    assert seen and all(shown <= 1000 and rows <= 1000 for shown, rows in seen)
    seen.clear()
    with CaptureQueriesContext(connection) as deep:
        response = client.get(f"/api/v1/recommendations?{LLAMA_8B}&limit=25&page=4000")
    assert response.status_code == 404
    assert seen == []  # no machine was read
    assert len(deep.captured_queries) <= len(first.captured_queries)
