"""The throughput plan and the price per million tokens through the page, the API and the CLI, on
real PostgreSQL: only machines in the chosen countries and tier, never more GPUs than free, never a
machine without a speed measured for the model and precision."""
from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.management import call_command

from catalog.models import MeasuredSpeed
from nodelodge.recommendations import answer, estimate, fleet
from nodelodge.recommendations.query import parse_query
from nodelodge.wizard import result_page
from sizing.throughput_plan import cheapest_plan
from tests.factories import load_shipped_catalog, make_measured_speed
from tests.helpers import LLAMA_8B, LLAMA_8B_ARGS

pytestmark = pytest.mark.django_db

def plan_of(client, query: str) -> dict:
    response = client.get(f"/api/v1/recommendations?{query}")
    assert response.status_code == 200, response.content
    return response.json()["throughput_plan"]


def test_the_documentation_example_through_the_api_and_the_page(client, make_machine):
    h100 = make_machine("H100 SXM 80GB", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("2.50"))
    make_measured_speed(h100, "75000")
    query = f"{LLAMA_8B}&target_tokens=180000&efficiency=75&redundancy=1"
    plan = plan_of(client, query)
    (cheapest,) = plan["plans"]
    assert (cheapest["productive_gpus"], cheapest["spare_gpus"], cheapest["gpus"]) == (4, 1, 5)
    assert cheapest["price_per_hour"] == "12.50"
    assert "Productive GPUs = ceil(180,000 ÷ 56,250) = 4" in cheapest["steps"]
    assert cheapest["steps"][-1] == "Total GPUs = 4 productive + 1 redundancy = 5"
    assert cheapest["machines"][0]["copies_text"] == "copies: 4 productive + 1 spare, 1 GPU each; 8 free"
    german = client.get(f"/api/v1/recommendations?{query}", HTTP_ACCEPT_LANGUAGE="de").json()
    copies = german["throughput_plan"]["plans"][0]["machines"][0]["copies_text"]
    assert "4" in copies and "copies" not in copies and "GPU" in copies
    page = client.get(f"/?{query}").content.decode()
    assert 'data-testid="throughput-plan"' in page
    assert "Productive GPUs = ceil(180,000 ÷ 56,250) = 4" in page


def test_a_long_plan_lists_its_first_machines_and_every_one_on_request(client, make_machine):
    """Fourteen one-GPU machines in the plan: the page lists the first ten with their lines of the
    formula, says how many more there are and links to every one; the totals always show; the API
    always lists every machine."""
    for index in range(14):
        machine = make_machine("RTX 4090", gpu_count=1, free_gpus=1,
                               price_per_gpu_hour=Decimal("0.30") + Decimal(index) / 100)
        make_measured_speed(machine, "2000")
    query = f"{LLAMA_8B}&target_tokens=21500&efficiency=100&redundancy=1"
    (cheapest,) = plan_of(client, query)["plans"]
    assert len(cheapest["machines"]) == 12 and cheapest["productive_gpus"] == 11
    page = client.get(f"/?{query}").content.decode()
    plan = page[page.index('data-testid="plan-1"'):page.index('id="machines"')]
    listed = [m["id"] for m in cheapest["machines"] if f'data-machine-id="{m["id"]}"' in plan]
    assert listed == [m["id"] for m in cheapest["machines"][:10]]
    assert "… and 2 more machines in this plan: list every one" in plan
    # One line of the formula per machine with productive copies, in the machines' order.
    lines = sum(1 for m in cheapest["machines"][:10] if m["productive_copies"])
    assert all(step in plan for step in cheapest["steps"][:lines])
    assert all(step not in plan for step in cheapest["steps"][lines:11])
    more = 11 - lines
    assert f"… the same for {more} more machine" + ("s" if more > 1 else "") + "<" in plan
    assert all(step in plan for step in cheapest["steps"][11:])
    assert 'data-testid="plan-rows-link"' in plan and "plan_rows=all#throughput" in plan
    every = client.get(f"/?{query}&plan_rows=all").content.decode()
    plan = every[every.index('data-testid="plan-1"'):every.index('id="machines"')]
    assert all(f'data-machine-id="{m["id"]}"' in plan for m in cheapest["machines"])
    assert all(step in plan for step in cheapest["steps"]) and 'data-testid="plan-rows-link"' not in plan


def test_every_row_of_a_plan_is_bounded_and_past_it_the_page_links_to_the_api(client, make_machine, monkeypatch):
    """`plan_rows=all` lists at most PLAN_ROWS_MOST machines of a plan (a plan of thousands would cost
    seconds to write); past them the page says how many more and links to the API, which lists every
    one, and Launch this plan still books every machine of the plan."""
    monkeypatch.setattr(result_page, "PLAN_ROWS_MOST", 12)
    for index in range(14):
        machine = make_machine("RTX 4090", gpu_count=1, free_gpus=1,
                               price_per_gpu_hour=Decimal("0.30") + Decimal(index) / 100)
        make_measured_speed(machine, "2000")
    query = f"{LLAMA_8B}&target_tokens=25500&efficiency=100&redundancy=1"
    (cheapest,) = plan_of(client, query)["plans"]
    assert cheapest["machine_count"] == len(cheapest["machines"]) == 14
    every = client.get(f"/?{query}&plan_rows=all").content.decode()
    plan = every[every.index('data-testid="plan-1"'):every.index('id="machines"')]
    listed = [m["id"] for m in cheapest["machines"] if f'data-machine-id="{m["id"]}"' in plan]
    assert listed == [m["id"] for m in cheapest["machines"][:12]]
    assert "… and 2 more machines in this plan: the API lists every one" in plan
    assert 'data-testid="plan-rows-api-link"' in plan and "/api/v1/recommendations?" in plan
    booked = ",".join(f"{m['id']}:{m['gpus']}" for m in cheapest["machines"])
    assert f'value="{booked}"' in plan


def test_the_plans_on_each_gpu_type_come_when_asked_for(client, make_machine, capsys):
    """By default the answer plans once (the cheapest); `gpu_plans=1` (the page's link and checkbox,
    the API's parameter, the command's --gpu-plans) adds the cheapest on each GPU type."""
    h100 = make_machine("H100 SXM 80GB", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("2.50"))
    make_measured_speed(h100, "75000")
    l40s = make_machine("L40S", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("0.90"))
    make_measured_speed(l40s, "9000")
    query = f"{LLAMA_8B}&target_tokens=20000&redundancy=0"
    (only,) = plan_of(client, query)["plans"]
    asked = plan_of(client, query + "&gpu_plans=1")["plans"]
    assert asked[0] == only and {tuple(p["gpu_types"]) for p in asked[1:]} >= {("H100 SXM 80GB",), ("L40S",)} - {
        tuple(only["gpu_types"])
    }
    page = client.get(f"/?{query}").content.decode()
    assert 'data-testid="gpu-plans-link"' in page and "gpu_plans=1#throughput" in page
    assert 'data-testid="plan-2"' not in page
    with_types = client.get(f"/?{query}&gpu_plans=1").content.decode()
    assert 'data-testid="plan-2"' in with_types and 'data-testid="gpu-plans-link"' not in with_types
    assert 'name="gpu_plans" value="1" checked' in with_types
    call_command("recommend", *LLAMA_8B_ARGS,
                 "--target-tokens", "20000", "--redundancy", "0", "--gpu-plans", "--json")
    assert len(json.loads(capsys.readouterr().out)["throughput_plan"]["plans"]) == len(asked)


def test_a_plan_keeps_to_countries_tier_free_gpus_and_measured_speeds(client, make_machine):
    keep = make_machine("RTX 4090", gpu_count=4, free_gpus=2, price_per_gpu_hour=Decimal("0.40"))
    make_measured_speed(keep, "1700")
    outside = make_machine("RTX 4090", gpu_count=8, free_gpus=8, country="US", price_per_gpu_hour=Decimal("0.10"))
    make_measured_speed(outside, "1700")
    community = make_machine("RTX 4090", tier="community", gpu_count=8, free_gpus=8,
                             price_per_gpu_hour=Decimal("0.10"))
    make_measured_speed(community, "1700")
    other_precision = make_machine("RTX 4090", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("0.05"))
    make_measured_speed(other_precision, "2200", precision=8)
    other_model = make_machine("RTX 4090", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("0.05"))
    make_measured_speed(other_model, "1800", model="qwen2-5-7b")
    unmeasured = make_machine("RTX 4090", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("0.05"))
    dearer = make_machine("L40S", gpu_count=4, free_gpus=4, price_per_gpu_hour=Decimal("0.90"))
    make_measured_speed(dearer, "1600")

    plan = plan_of(client, f"{LLAMA_8B}&target_tokens=3000&countries=DE&tier=secure&redundancy=0&gpu_plans=1")
    (cheapest, *others) = plan["plans"]
    used = {machine["id"]: machine["gpus"] for machine in cheapest["machines"]}
    assert used == {keep.pk: 2, dearer.pk: 1}  # 2 × 1,275 + 1 × 1,200 usable ≥ 3,000
    assert all(m["gpus"] <= m["free_gpus"] for p in plan["plans"] for m in p["machines"])
    never = {outside.pk, community.pk, other_precision.pk, other_model.pk, unmeasured.pk}
    assert not never & {m["id"] for p in plan["plans"] for m in p["machines"]}
    # Fit and meet every preference without a measured speed: the two of the wrong speed and the unmeasured one.
    assert (plan["machines_with_speed"], plan["machines_without_speed"]) == (2, 3)
    assert [p["gpu_types"] for p in others] == [["L40S"]]


def test_a_speed_measured_on_another_gpu_type_is_dropped_and_never_used(client, make_machine):
    from catalog.models import GpuType
    from catalog.services import save_machine

    machine = make_machine("RTX 4090", gpu_count=2, free_gpus=2, price_per_gpu_hour=Decimal("0.40"))
    make_measured_speed(machine, "1700")
    machine.gpu_type = GpuType.objects.get(name="RTX 3090")
    save_machine(machine)
    assert not MeasuredSpeed.objects.filter(machine=machine).exists()
    plan = plan_of(client, f"{LLAMA_8B}&target_tokens=1000")
    assert plan["plans"] == [] and plan["machines_without_speed"] == 1
    assert "has a speed measured for Llama 3.1 8B at 16-bit" in plan["empty_reason"]


def test_price_per_million_tokens_on_every_row_and_the_sort_by_it(client, make_machine):
    cheap_slow = make_machine("RTX 4090", price_per_gpu_hour=Decimal("0.40"))
    make_measured_speed(cheap_slow, "1000")  # 0.40 ÷ 3.6 = $0.1111 per million
    dear_fast = make_machine("H100 SXM 80GB", price_per_gpu_hour=Decimal("2.49"))
    make_measured_speed(dear_fast, "24500")  # 2.49 ÷ 88.2 = $0.0282 per million
    none = make_machine("RTX 3090", price_per_gpu_hour=Decimal("0.30"))
    body = client.get(f"/api/v1/recommendations?{LLAMA_8B}").json()
    rows = {row["id"]: row for row in body["machines"]}
    assert [row["id"] for row in body["machines"]] == [none.pk, cheap_slow.pk, dear_fast.pk]
    assert rows[cheap_slow.pk]["price_per_million_tokens"] == "0.1111"
    assert rows[dear_fast.pk]["price_per_million_tokens"] == "0.0282"
    assert rows[none.pk]["price_per_million_tokens"] is None
    assert rows[none.pk]["price_per_million_tokens_text"] == "no measured speed"
    ordered = client.get(f"/api/v1/recommendations?{LLAMA_8B}&sort=price_per_million_tokens&limit=2").json()
    assert [row["id"] for row in ordered["machines"]] == [dear_fast.pk, cheap_slow.pk]
    page = client.get(f"/?{LLAMA_8B}&sort=price_per_million_tokens").content.decode()
    assert "Sorted by price per million tokens" in page and "no measured speed" in page
    image = client.get("/api/v1/recommendations?workload=image&model=stable-diffusion-xl&precision=16").json()
    assert all(row["price_per_million_tokens_text"] is None for row in image["machines"])


def test_the_sorted_answer_equals_the_engine_over_every_machine(make_machine):
    """On PostgreSQL the sort reads the kept latest speeds and the counting SQL; the embedded run
    reads every speed and machine. Either way the first page is the engine's over every machine."""
    for index in range(12):
        machine = make_machine("RTX 4090", price_per_gpu_hour=Decimal("0.30") + Decimal(index) / 100)
        if index % 3:
            make_measured_speed(machine, str(900 + 97 * index))
    query = parse_query({**dict(p.split("=") for p in LLAMA_8B.split("&")), "sort": "price_per_million_tokens",
                         "limit": "5"})
    counted = answer.recommendation_for(query)
    now = counted.freshness["as_of"]
    breakdown, _ = estimate.estimate_for(query)
    reference, _ = fleet.recommend_over_every_machine(query, breakdown, {}, now, 5)
    assert [m.offer.id for m in counted.recommendation.machines] == [m.offer.id for m in reference.machines]


def test_a_throughput_target_is_refused_for_images_and_bad_values_name_their_field(client, models_and_gpus):
    # A target for a model that serves no tokens is valid alone but does not go with it: 422.
    for query, field, status in (
        ("workload=image&model=stable-diffusion-xl&precision=16&target_tokens=100", "target_tokens", 422),
        ("workload=inference&model=whisper-large-v3&precision=16&requests=1&target_tokens=100", "target_tokens",
         422),
        (f"{LLAMA_8B}&target_tokens=-5", "target_tokens", 400),
        (f"{LLAMA_8B}&target_tokens=100&efficiency=0", "efficiency", 400),
        (f"{LLAMA_8B}&target_tokens=100&redundancy=65", "redundancy", 400),
        (f"{LLAMA_8B}&sort=fastest", "sort", 400),
    ):
        response = client.get(f"/api/v1/recommendations?{query}")
        assert response.status_code == status, query
        assert field in response.json()["errors"], query


def test_the_openapi_schema_describes_the_plan_and_the_price_per_million(client, models_and_gpus):
    schema = client.get("/api/v1/openapi.json").json()
    names = {p["name"] for p in schema["paths"]["/api/v1/recommendations"]["get"]["parameters"]}
    assert {"target_tokens", "efficiency", "redundancy", "sort"} <= names
    components = schema["components"]["schemas"]
    assert "throughput_plan" in components["RecommendationsOut"]["properties"]
    assert "price_per_million_tokens" in components["MachineOut"]["properties"]
    assert {"engine", "concurrency", "gpus", "measured_by"} <= set(components["SpeedOut"]["properties"])


def test_the_command_prints_the_plan(make_machine, capsys):
    h100 = make_machine("H100 SXM 80GB", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("2.50"))
    make_measured_speed(h100, "75000")
    call_command("recommend", *LLAMA_8B_ARGS, "--target-tokens", "180000")
    out = capsys.readouterr().out
    assert "Cheapest plan: $12.50/h, 5 GPUs (4 productive + 1 redundancy)" in out
    assert "Productive GPUs = ceil(180,000 ÷ 56,250) = 4" in out
    call_command("recommend", *LLAMA_8B_ARGS, "--target-tokens", "180000", "--json")
    assert json.loads(capsys.readouterr().out)["throughput_plan"]["plans"][0]["gpus"] == 5
    with pytest.raises(SystemExit) as exit_status:
        call_command("recommend", *LLAMA_8B_ARGS, "--target-tokens", "1", "--efficiency", "0")
    assert exit_status.value.code == 2


def test_the_wizard_turns_a_target_into_the_cheapest_plan_of_the_demo_fleet(client, db):
    load_shipped_catalog()
    assert MeasuredSpeed.objects.filter(source="feed").values("machine").distinct().count() >= 340 // 6
    query = f"{LLAMA_8B}&target_tokens=20000&countries=EU&gpu_plans=1"
    plan = plan_of(client, query)
    cheapest = plan["plans"][0]
    assert plan["machines_with_speed"] > 0 and plan["machines_without_speed"] > 0
    assert [p["price_per_hour"] for p in plan["plans"]] == sorted(
        (p["price_per_hour"] for p in plan["plans"]), key=Decimal
    )
    parsed = parse_query(dict(p.split("=") for p in query.split("&")))
    breakdown, _ = estimate.estimate_for(parsed)
    from django.utils import timezone

    from nodelodge.recommendations.throughput import speed_candidates
    # Every machine with a measured speed, none left out by the database's cut: the same cheapest plan.
    candidates, total = speed_candidates(parsed, breakdown, fleet.stale_cutoff(timezone.now()),
                                         fleet.preferences_for(parsed), every_one=True)
    assert plan["machines_with_speed"] == total == len(candidates)
    again = cheapest_plan([c.plan for c in candidates], Decimal(20000), Decimal(75), 1)
    assert Decimal(cheapest["price_per_hour"]) == again.price_per_hour
    eu = {c.row.machine_id: c.row.country for c in candidates}
    assert all(m["country"] in {"DE", "NL", "IE", "FR", "PL", "ES", "IT", "SE", "FI", "AT"} for m in cheapest["machines"])
    assert all(m["id"] in eu for m in cheapest["machines"])
    page = client.get(f"/?{query}").content.decode()
    assert "Cheapest plan:" in page and cheapest["steps"][-1] in page


def test_the_lowest_price_per_million_comes_first_even_beyond_the_cheapest_thousand(client, make_machine):
    from django.utils import timezone

    from catalog.models import GpuType, Machine

    template = make_machine("RTX 4090", price_per_gpu_hour=Decimal("0.10"))
    gpu = GpuType.objects.get(name="RTX 4090")
    Machine.objects.bulk_create([
        Machine(provider=template.provider, provider_machine_id=f"cheap-{index:05d}", tier="secure", gpu_type=gpu,
                gpu_count=1, free_gpus=1, memory_per_gpu_mib=gpu.memory_mib, memory_source="datacenter",
                country="DE", price_per_gpu_hour=Decimal("0.10"), last_seen_at=timezone.now())
        for index in range(1_100)
    ])
    fast = make_machine("H100 SXM 80GB", price_per_gpu_hour=Decimal("2.49"))
    make_measured_speed(fast, "24500")
    body = client.get(f"/api/v1/recommendations?{LLAMA_8B}&sort=price_per_million_tokens&limit=3").json()
    assert body["machines"][0]["id"] == fast.pk
    assert body["machines"][0]["price_per_million_tokens"] == "0.0282"
    assert [row["price_per_million_tokens_text"] for row in body["machines"][1:]] == ["no measured speed"] * 2


def _speed_candidates_both_ways(make_machine, target: int, redundancy: int):
    """Forty machines with speeds; the plan's candidates as the wizard reads them, and every one."""
    from django.utils import timezone

    from nodelodge.recommendations.throughput import speed_candidates

    for index in range(40):
        gpu = ("RTX 4090", "RTX 3090", "L40S", "A100 80GB")[index % 4]
        machine = make_machine(gpu, gpu_count=4, free_gpus=1 + index % 4,
                               price_per_gpu_hour=Decimal("0.30") + Decimal(index * 7 % 23) / 10)
        make_measured_speed(machine, ("1700", "1300", "1600", "2600")[index % 4])
    query = parse_query({**dict(p.split("=") for p in LLAMA_8B.split("&")), "target_tokens": str(target),
                         "redundancy": str(redundancy)})
    breakdown, _ = estimate.estimate_for(query)
    cutoff, preferences = fleet.stale_cutoff(timezone.now()), fleet.preferences_for(query)
    cut, total = speed_candidates(query, breakdown, cutoff, preferences)
    every, every_total = speed_candidates(query, breakdown, cutoff, preferences, every_one=True)
    assert total == every_total == 40
    return cut, every


PLAN_TARGETS = [(3_000, 0), (12_000, 1), (40_000, 2)]


@pytest.mark.parametrize(("target", "redundancy"), PLAN_TARGETS)
def test_the_candidates_the_wizard_reads_keep_the_cheapest_plan(make_machine, target, redundancy):
    """The plan made from the candidates the wizard reads (a cut made in SQL on PostgreSQL, every
    speed on the embedded run) costs what the plan over every speed of every machine costs."""
    cut, every = _speed_candidates_both_ways(make_machine, target, redundancy)
    plans = [cheapest_plan([c.plan for c in found], Decimal(target), Decimal(75), redundancy) for found in (cut, every)]
    assert plans[0] is not None and plans[0].price_per_hour == plans[1].price_per_hour


@pytest.mark.postgresql(reason="the database cut of speed candidates is made in SQL over the kept latest speeds; SQLite reads every one")
@pytest.mark.parametrize(("target", "redundancy"), PLAN_TARGETS)
def test_the_database_cut_reads_fewer_candidates(make_machine, target, redundancy):
    cut, every = _speed_candidates_both_ways(make_machine, target, redundancy)
    assert len(cut) < len(every) if target < 20_000 else len(cut) <= len(every)


def test_the_link_to_a_plan_spells_the_target_as_typed(models_and_gpus):
    query = parse_query({**dict(p.split("=") for p in LLAMA_8B.split("&")), "target_tokens": "20000",
                         "efficiency": "80.50"})
    params = query.as_params()
    assert (params["target_tokens"], params["efficiency"], params["redundancy"]) == ("20000", "80.5", "1")
