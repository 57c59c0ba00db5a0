"""Clusters in the answer (language-model inference): planned when no single machine fits, or when asked
(`clusters=show`); the price limit and the budget applied to the cluster's total price per hour; in the
API, its schema, the address, the command and "Constraints applied"; and an answer that needs no cluster
reads no cluster site."""
import html as html_lib
import json
import re
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.query import parse_query
from sizing.cluster import cluster_need
from sizing.offers import Preferences
from sizing.preferences import preference_breaks
from sizing.reasons import BREAK_BUDGET
from sizing.units import MIB
from tests.helpers import LLAMA_8B
from tests.sizing.test_cluster_plan import (
    LLAMA_405B,
    at_current_release,
    deepseek_per_gpu,
    llama_405b_16_bit_per_gpu,
)

pytestmark = pytest.mark.django_db

LLAMA_405B_8K = "workload=inference&model=llama-3-1-405b&precision=16&context=8192&requests=1"
DEEPSEEK_16 = "workload=inference&model=deepseek-v3&precision=16&context=8192&requests=1"
H100_USABLE_MIB = 81_090


def get_json(client, query, **headers):
    response = client.get(f"/api/v1/recommendations?{query}", **headers)
    return response.status_code, response.json()


def test_llama_405b_in_16_bit_fits_no_machine_and_gets_two_8_x_h100_at_tp_8_pp_2(client, h100_site):
    status, body = get_json(client, LLAMA_405B_8K)
    assert status == 200 and body["machines_total"] == 0
    (cluster,) = body["clusters"]
    assert cluster["machine_ids"] == [h100_site[0].id, h100_site[1].id]
    assert (cluster["tensor_parallel"], cluster["pipeline_parallel"]) == (8, 2)
    assert (cluster["provider"], cluster["site"], cluster["country"]) == ("Harbor Compute", "iad-1", "US")
    assert cluster["price_per_hour"] == "40.00"
    # Sized under the current stable vLLM (the query names no release): its CUDA graphs' estimate inside, its
    # default gpu_memory_utilization 0.92 of the 79.19 GiB CUDA reports.
    by_hand = at_current_release(llama_405b_16_bit_per_gpu(2))
    assert [item["bytes"] for item in cluster["items"]] == list(by_hand.values())
    assert cluster["need_per_gpu_bytes"] == sum(by_hand.values())
    assert cluster["need_per_gpu_gib"] == 52.08 and cluster["budget_per_gpu_gib"] == 72.85
    assert cluster["confidence"] == "low" and cluster["confidence_reasons"]
    assert cluster["vllm_commands"][2].startswith(
        "vllm serve meta-llama/Llama-3.1-405B --tensor-parallel-size 8 --pipeline-parallel-size 2")
    assert len(cluster["sglang_commands"]) == 2 and "--tp 16 --nnodes 2 --node-rank 1" in cluster["sglang_commands"][1]
    assert "InfiniBand at 400 Gb/s" in " ".join(cluster["assumptions"])
    assert "a cluster holds it: 2 × (8 × H100 SXM 80GB) at Harbor Compute, iad-1" in body["empty_reason"]


def test_deepseek_v3_in_16_bit_two_8_x_h200_or_three_8_x_h100_cheapest_first(client, h100_site, h200_site):
    _, body = get_json(client, DEEPSEEK_16)
    assert body["machines_total"] == 0
    h200, h100 = body["clusters"]
    assert (h200["gpu_type"], h200["pipeline_parallel"], h200["price_per_hour"]) == ("H200", 2, "56.00")
    assert [item["bytes"] for item in h200["items"]] == list(at_current_release(deepseek_per_gpu(16, 2)).values())
    assert (h100["gpu_type"], h100["pipeline_parallel"], h100["price_per_hour"]) == ("H100 SXM 80GB", 3, "64.00")
    assert [item["bytes"] for item in h100["items"]] == list(at_current_release(deepseek_per_gpu(16, 3)).values())
    assert h100["layers_per_stage"] == [20, 21, 20]
    assert h100["sglang_commands"] == [] and "128" in h100["sglang_note"]
    assert body["clusters_total"] == 2


def test_the_price_limit_applies_to_the_clusters_total(client, h100_site):
    _, body = get_json(client, LLAMA_405B_8K + "&max_price=39.99")
    assert body["clusters"] == [] and body["clusters_over_price"] == 1
    assert "more per hour than the price limit" in body["clusters_note"]
    _, body = get_json(client, LLAMA_405B_8K + "&max_price=40")
    assert [c["price_per_hour"] for c in body["clusters"]] == ["40.00"]


def test_a_cluster_whose_hour_the_budget_does_not_cover_is_not_offered(client, h100_site):
    # $40 per hour: a budget of $39.99 does not cover one hour of it, as it would not of a machine.
    assert preference_breaks(None, Decimal("40.00"), Preferences(budget=Decimal("39.99"))) == (BREAK_BUDGET,)
    _, body = get_json(client, LLAMA_405B_8K + "&budget=39.99")
    assert body["clusters"] == [] and body["clusters_total"] == 0 and body["clusters_over_price"] == 1
    assert body["clusters_note"] == "The budget covers under an hour of 1 more cluster."
    assert "a cluster holds it" not in body["empty_reason"]
    # One within the budget still is: a budget of one hour's price covers it.
    _, body = get_json(client, LLAMA_405B_8K + "&budget=40")
    assert [c["price_per_hour"] for c in body["clusters"]] == ["40.00"]
    assert body["clusters_total"] == 1 and body["clusters_over_price"] == 0 and body["clusters_note"] is None


def test_the_budget_covers_the_total_cut_at_the_shortest_booking_limit(client, h100_site):
    _, body = get_json(client, LLAMA_405B_8K + "&budget=100")
    assert body["clusters"][0]["hours_covered"] == 2.5  # $100 ÷ $40 per hour
    h100_site[1].booking_limit_hours = 2
    h100_site[1].save()
    _, body = get_json(client, LLAMA_405B_8K + "&budget=100")
    cluster = body["clusters"][0]
    assert cluster["booking_limit_hours"] == 2 and cluster["hours_covered"] == 2.0


def test_clusters_show_plans_them_beside_machines_that_fit_alone(client, h100_site):
    _, auto = get_json(client, LLAMA_8B)
    assert auto["machines_total"] > 0 and auto["clusters"] == []
    _, shown = get_json(client, LLAMA_8B + "&clusters=show")
    assert shown["machines"] == auto["machines"]
    (cluster,) = shown["clusters"]
    assert cluster["pipeline_parallel"] == 2  # two machines at least: a cluster


def test_in_fp8_one_8_x_h100_machine_is_the_ordinary_answer(client, h100_site):
    _, body = get_json(client, LLAMA_405B_8K.replace("precision=16", "precision=8") + "&engine=vllm")
    assert body["machines_total"] >= 1 and body["clusters"] == []
    need = cluster_need(LLAMA_405B, 8, 16, 8192, 1, gpus_per_machine=8, machines=1,
                        usable_bytes=H100_USABLE_MIB * MIB)
    first = next(m for m in body["machines"] if m["gpu_type"] == "H100 SXM 80GB" and m["gpu_count"] == 8)
    assert first["gpus_used"] == 8 and need.fits


def test_an_answer_that_needs_no_cluster_reads_no_cluster_site(h100_site):
    query = parse_query({**dict(pair.split("=") for pair in LLAMA_8B.split("&"))})
    with CaptureQueriesContext(connection) as auto:
        answer = recommendation_for(query)
    assert answer.recommendation.machines_total > 0 and answer.clusters is None
    assert not any("site_gbps" in q["sql"] for q in auto.captured_queries)
    shown = parse_query({**dict(pair.split("=") for pair in LLAMA_8B.split("&")), "clusters": "show"})
    with CaptureQueriesContext(connection) as asked:
        answer = recommendation_for(shown)
    assert answer.clusters is not None and answer.clusters.offers
    assert sum("site_gbps" in q["sql"] for q in asked.captured_queries) == 1
    # The sites (with their GPU types' usable memory) and the shown clusters' machines: two reads more,
    # nothing else.
    assert len(asked.captured_queries) == len(auto.captured_queries) + 2


def test_the_cluster_sizes_on_the_catalogs_usable_memory(client, h100_site):
    _, body = get_json(client, LLAMA_405B_8K)
    assert body["clusters"][0]["usable_memory_per_gpu_gib"] == round(H100_USABLE_MIB * MIB / 2**30, 2)


def test_machines_outside_the_chosen_countries_never_join(client, h100_site):
    _, body = get_json(client, LLAMA_405B_8K + "&countries=DE")
    assert body["clusters"] == []


def test_other_workloads_plan_no_cluster_and_do_not_name_the_input(client, h100_site):
    _, finetune = get_json(client, "workload=finetune&model=llama-3-1-8b&clusters=show")
    assert finetune["clusters"] == []
    assert "Clusters of machines" not in [c["label"] for c in finetune["constraints"]]
    _, speech = get_json(client, "workload=inference&model=whisper-large-v3&requests=1&clusters=show")
    assert speech["clusters"] == [] and speech["clusters_note"] is None
    assert "Clusters of machines" not in [c["label"] for c in speech["constraints"]]
    _, inference = get_json(client, LLAMA_8B)
    constraint = next(c for c in inference["constraints"] if c["label"] == "Clusters of machines")
    assert constraint["value"] == "planned when no single machine fits"
    _, german = get_json(client, LLAMA_8B + "&clusters=show", HTTP_ACCEPT_LANGUAGE="de")
    assert any(c["label"] == "Cluster aus Maschinen" for c in german["constraints"])


@pytest.mark.parametrize("value", ["always", "SHOW", "1"])
def test_a_bad_clusters_value_is_refused_naming_the_field(client, small_fleet, value):
    status, body = get_json(client, f"{LLAMA_8B}&clusters={value}")
    assert status == 400 and set(body["errors"]) == {"clusters"}


def test_the_schema_names_the_input_and_the_clusters(client, small_fleet):
    schema = client.get("/api/v1/openapi.json").json()
    parameters = schema["paths"]["/api/v1/recommendations"]["get"]["parameters"]
    clusters = next(p for p in parameters if p["name"] == "clusters")
    assert clusters["schema"]["enum"] == ["auto", "show", ""] and clusters["schema"]["default"] == "auto"
    answer = schema["components"]["schemas"]["RecommendationsOut"]
    assert {"clusters", "clusters_total", "clusters_over_price", "clusters_note"} <= set(answer["properties"])
    cluster = schema["components"]["schemas"]["ClusterOut"]["properties"]
    assert {"machine_ids", "tensor_parallel", "pipeline_parallel", "items", "need_per_gpu_bytes",
            "budget_per_gpu_gib", "hours_covered", "vllm_commands", "sglang_commands"} <= set(cluster)


def test_the_address_keeps_clusters_show_and_leaves_auto_out(small_fleet):
    assert "clusters=show" in parse_query({"clusters": "show"}).as_query_string()
    assert "clusters" not in parse_query({"clusters": "auto"}).as_query_string()


def test_the_command_prints_the_clusters(h100_site, capsys):
    call_command("recommend", "--model", "llama-3-1-405b", "--context", "8192")
    out = capsys.readouterr().out
    assert "Clusters (tensor parallel within a machine × pipeline parallel across machines" in out
    assert "2 × (8 × H100 SXM 80GB) Harbor Compute iad-1 US  TP 8 × PP 2" in out
    assert "vLLM: ray start --head --port=6379" in out
    call_command("recommend", "--model", "llama-3-1-8b", "--clusters", "show", "--json")
    body = json.loads(capsys.readouterr().out)
    assert body["clusters"][0]["machines"] == 2


def test_the_page_shows_the_clusters_with_their_launch_button_and_a_link_to_their_commands(client, h100_site):
    page = client.get(f"/?{LLAMA_405B_8K}").content.decode()
    assert 'data-testid="clusters"' in page and 'data-testid="cluster-row"' in page
    assert "2 × (8 × H100 SXM 80GB)" in page and "TP 8 × PP 2" in page
    assert "52.08 of 72.85 GiB" in page
    # The details (items, commands) are loaded when a cluster is opened, or followed by its link.
    assert "ray start" not in page
    detail = re.search(r'<a href="(/cluster/\?[^"]+)" data-testid="cluster-detail-link"', page).group(1)
    cluster_page = client.get(detail.replace("&amp;", "&")).content.decode()
    assert "ray start --head --port=6379\nray start --address=&lt;head&gt;:6379\nvllm serve" in cluster_page
    assert "--tp 16 --nnodes 2 --node-rank 0" in cluster_page
    assert 'data-testid="launch-group-form"' in page and 'name="kind" value="cluster"' in page
    ids = f"{h100_site[0].id}:8,{h100_site[1].id}:8"
    assert f'name="machines" value="{ids}"' in page and 'name="price_per_hour" value="40.00"' in page
    assert "cluster holds it: 2 × (8 × H100 SXM 80GB)" in page
    assert '<option value="show" >' in page or '<option value="show">' in page


def test_the_page_in_german_names_the_clusters(client, h100_site):
    page = client.get(f"/de/?{LLAMA_405B_8K}").content.decode()
    assert "52,08 von 72,85 GiB" in page and "TP 8 × PP 2" in page and "Cluster aus Maschinen" in page


def test_reading_the_machines_alone_plans_no_cluster(h100_site):
    """Launch and the watches read an answer's machines alone (relax=False): no cluster site is read."""
    query = parse_query(dict(pair.split("=") for pair in LLAMA_405B_8K.split("&")))
    with CaptureQueriesContext(connection) as alone:
        answer = recommendation_for(query, relax=False)
    assert answer.recommendation.machines_total == 0 and answer.clusters is None
    assert not any("site_gbps" in q["sql"] for q in alone.captured_queries)
    assert recommendation_for(query).clusters.offers


def test_an_empty_answer_without_any_cluster_site_says_so(client, small_fleet):
    _, body = get_json(client, LLAMA_405B_8K)
    assert body["machines_total"] == 0 and body["clusters"] == []
    assert body["clusters_note"].startswith("No site has identical machines free")
    assert "cluster holds it" not in body["empty_reason"]


def test_the_page_shows_the_section_where_a_cluster_was_found_or_asked_for(client, small_fleet):
    empty = client.get(f"/?{LLAMA_405B_8K}").content.decode()
    assert 'data-testid="clusters"' not in empty  # none found, none asked for: the empty answer says enough
    asked = client.get(f"/?{LLAMA_405B_8K}&clusters=show").content.decode()
    assert 'data-testid="clusters"' in asked and 'data-testid="clusters-note"' in asked


def test_at_most_ten_clusters_the_cheapest_one_per_site(client, small_fleet, make_machine):
    for number in range(11):
        for _ in range(2):
            make_machine("H100 SXM 80GB", gpu_count=8, free_gpus=8, site=f"site-{number:02d}",
                         interconnect="roce", interconnect_gbps=200, country="US",
                         price_per_gpu_hour=Decimal("2.00") + Decimal(number) / 100)
    _, body = get_json(client, LLAMA_405B_8K)
    assert body["clusters_total"] == 11 and len(body["clusters"]) == 10
    assert [c["site"] for c in body["clusters"]] == [f"site-{number:02d}" for number in range(10)]
    prices = [Decimal(c["price_per_hour"]) for c in body["clusters"]]
    assert prices == sorted(prices) and prices[0] == Decimal("32.00")


@pytest.mark.parametrize(("prefix", "language"), [("", "en"), ("/de", "de")])
def test_an_empty_answers_page_states_the_clusters_note_in_the_apis_words(client, small_fleet, prefix, language):
    body = client.get(f"/api/v1/recommendations?{LLAMA_405B_8K}", HTTP_ACCEPT_LANGUAGE=language).json()
    assert body["machines_total"] == 0 and body["clusters"] == [] and body["clusters_note"]
    page = client.get(f"{prefix}/?{LLAMA_405B_8K}").content.decode()
    empty = re.search(r'data-testid="empty-reason">(.*?)</div>', page, re.S).group(1)
    note = re.search(r'<p data-testid="empty-clusters-note">([^<]*)</p>', empty)
    assert note, "the empty answer says nothing about clusters"
    assert html_lib.unescape(note.group(1)) == body["clusters_note"]
