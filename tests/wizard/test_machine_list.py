"""The machine list: sort, filters, grouping and pages, the same in the page's URL, the API and the CLI."""
from decimal import Decimal

import pytest

from nodelodge.recommendations.query import parse_query
from nodelodge.recommendations.sorts import SORTS
from tests.helpers import LLAMA_8B, LLAMA_8B_ARGS

pytestmark = pytest.mark.django_db


def api(client, query):
    response = client.get("/api/v1/recommendations?" + query)
    return response.status_code, response.json()


def test_the_default_stays_cheapest_first_and_says_so(client, small_fleet):
    status, body = api(client, LLAMA_8B)
    assert status == 200
    assert body["listing"]["sort"] == "price" and body["listing"]["page"] == 1
    prices = [Decimal(m["price_per_hour"]) for m in body["machines"]]
    assert prices == sorted(prices)
    html = client.get("/?" + LLAMA_8B).content.decode()
    assert "Cheapest first; ties by price per GPU-hour" in html


def test_sort_by_memory_puts_the_most_memory_first_and_the_page_says_it_was_chosen(client, small_fleet):
    _, body = api(client, LLAMA_8B + "&sort=memory")
    memory = [m["memory_per_gpu_gib"] for m in body["machines"]]
    assert memory == sorted(memory, reverse=True) and memory[0] > memory[-1]
    # ties keep the engine's order: the cheaper of two equal-memory machines first
    html = client.get("/?" + LLAMA_8B + "&sort=memory").content.decode()
    assert "Sorted by memory per GPU, most first</strong>, as you chose" in html


def test_every_sort_is_deterministic_and_keeps_every_machine(client, small_fleet):
    _, default = api(client, LLAMA_8B)
    ids = sorted(m["id"] for m in default["machines"])
    for code in SORTS:
        _, first = api(client, LLAMA_8B + f"&sort={code}")
        _, again = api(client, LLAMA_8B + f"&sort={code}")
        assert [m["id"] for m in first["machines"]] == [m["id"] for m in again["machines"]]
        assert sorted(m["id"] for m in first["machines"]) == ids, code


def test_filters_narrow_the_list_and_count_what_matches(client, small_fleet):
    _, body = api(client, LLAMA_8B + "&gpu=h100 sxm 80gb")
    assert [m["gpu_type"] for m in body["machines"]] == ["H100 SXM 80GB"]
    assert body["listing"]["machines_matching"] == 1 and body["machines_total"] > 1
    _, body = api(client, LLAMA_8B + "&min_memory_gib=48")
    assert body["machines"] and all(m["memory_per_gpu_gib"] >= 48 for m in body["machines"])
    _, body = api(client, LLAMA_8B + "&confidence=high")
    assert all(m["confidence"] == "high" for m in body["machines"])


def test_pages_split_the_list_in_the_default_order(client, small_fleet):
    _, whole = api(client, LLAMA_8B)
    _, page1 = api(client, LLAMA_8B + "&limit=2")
    _, page2 = api(client, LLAMA_8B + "&limit=2&page=2")
    assert page1["listing"]["pages"] == -(-whole["machines_total"] // 2)
    assert [m["id"] for m in page1["machines"] + page2["machines"]] == [m["id"] for m in whole["machines"][:4]]
    html = client.get("/?" + LLAMA_8B + "&limit=2&page=2").content.decode()
    assert 'aria-current="page" class="current">2<' in html and "Page 2 of" in html


def test_grouping_by_gpu_model_heads_each_group_with_its_count(client, small_fleet):
    _, body = api(client, LLAMA_8B + "&group=gpu")
    groups = body["listing"]["groups"]
    assert sum(g["machines"] for g in groups) == body["machines_total"]
    order = [m["gpu_type"] for m in body["machines"]]
    assert order == sorted(order, key=[g["gpu_type"] for g in groups].index)
    html = client.get("/?" + LLAMA_8B + "&group=gpu").content.decode()
    assert 'data-testid="group-heading">RTX 4090 · 1 machine<' in html


def test_the_list_lives_in_the_url(small_fleet):
    query = parse_query({"workload": "inference", "model": "llama-3-1-8b", "precision": "16", "sort": "gpu",
                         "gpu": "T4", "min_memory_gib": "10", "confidence": "medium", "group": "gpu", "page": "3"})
    params = query.as_params()
    assert params["sort"] == "gpu" and params["gpu"] == "T4" and params["group"] == "gpu" and params["page"] == "3"
    assert "sort" not in parse_query({"workload": "notebook", "memory_gib": "8"}).as_params()


@pytest.mark.parametrize(
    ("query", "field", "words"),
    [
        ("&sort=fastest", "sort", "Sort by one of: price, price_per_gpu"),
        ("&page=0", "page", "Pages start at 1."),
        ("&group=provider", "group", "Group by gpu"),
        ("&min_memory_gib=-1", "min_memory_gib", "Memory per GPU must be more than 0 GiB"),
    ],
)
def test_bad_list_parameters_are_refused_in_words(client, small_fleet, query, field, words):
    status, body = api(client, LLAMA_8B + query)
    assert status == 400 and body["errors"][field].startswith(words)


def test_the_recommend_command_takes_the_same_sort(small_fleet, capsys):
    import json

    from django.core.management import call_command

    call_command("recommend", *LLAMA_8B_ARGS, "--sort", "memory", "--json")
    body = json.loads(capsys.readouterr().out)
    memory = [m["memory_per_gpu_gib"] for m in body["machines"]]
    assert body["listing"]["sort"] == "memory" and memory == sorted(memory, reverse=True)
