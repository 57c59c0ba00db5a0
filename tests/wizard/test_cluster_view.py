"""A cluster's own page (`/cluster/?<the answer's query>&machines=<ids>`): what each GPU holds, the
assumptions and both commands, with its Launch cluster button; the part the Clusters panel loads when a
cluster is opened (HTMX); German; and a clear 400 for machines that are no cluster or a query that is
refused, never a 500."""
import re
from decimal import Decimal

import pytest

from tests.sizing.test_cluster_plan import at_current_release, llama_405b_16_bit_per_gpu

pytestmark = pytest.mark.django_db

LLAMA_405B_8K = "workload=inference&model=llama-3-1-405b&precision=16&context=8192&requests=1"


def address(machines, query=LLAMA_405B_8K, prefix="/"):
    return f"{prefix}cluster/?{query}&machines={','.join(str(machine.id) for machine in machines)}"


def panel_link(client, query=LLAMA_405B_8K, prefix="/") -> str:
    page = client.get(f"{prefix}?{query}").content.decode()
    return re.search(r'<a href="(/[a-z/]*cluster/\?[^"]+)" data-testid="cluster-detail-link"', page).group(1).replace(
        "&amp;", "&")


def test_the_panels_link_opens_the_cheapest_clusters_page_with_its_items_commands_and_launch(client, h100_site):
    link = panel_link(client)
    assert link.endswith(f"&machines={h100_site[0].id},{h100_site[1].id}")
    response = client.get(link)
    assert response.status_code == 200
    page = response.content.decode()
    assert "<h1>2 × (8 × H100 SXM 80GB) at" in page
    assert "TP 8 × PP 2: 52.08 of 72.85 GiB per GPU (vLLM's budget), $40.00 per hour" in page
    assert "Model weights as loaded:" in page and "Communication buffers:" in page
    assert "vllm serve meta-llama/Llama-3.1-405B --tensor-parallel-size 8" in page and "--pipeline-parallel-size 2" in page
    assert "--tp 16 --nnodes 2 --node-rank 1" in page
    ids = f"{h100_site[0].id}:8,{h100_site[1].id}:8"
    assert 'name="kind" value="cluster"' in page and f'name="machines" value="{ids}"' in page
    assert f'href="/?{LLAMA_405B_8K}' in page.replace("&amp;", "&")  # back to the answer


ITEM_NAMES = {"weights": "Model weights as loaded", "kv": "KV cache (vLLM blocks)",
              "activation": "Activation peak (profiling step)", "non_torch": "Memory outside PyTorch",
              "cuda_graphs": "CUDA graphs (estimated inside the budget)", "communication": "Communication buffers"}


def test_the_items_are_the_hand_checked_per_gpu_figures(client, h100_site):
    page = client.get(address(h100_site[:2])).content.decode()
    items = re.findall(r'<li>([^:<]+): <strong class="nowrap">([0-9.]+) GiB</strong>', page)
    expected = [(ITEM_NAMES[key], f"{Decimal(value) / 2**30:.2f}")
                for key, value in at_current_release(llama_405b_16_bit_per_gpu(2)).items()]
    assert items == expected


def test_an_htmx_request_gets_the_details_part_alone(client, h100_site):
    response = client.get(address(h100_site[:2]), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div class="machine-detail" data-testid="cluster-detail">')
    assert "<html" not in html and "ray start --head" in html and "launch-group-form" not in html


def test_the_panel_loads_the_details_when_a_cluster_opens(client, h100_site):
    page = client.get(f"/?{LLAMA_405B_8K}").content.decode()
    details = re.search(r'<details class="machine" hx-get="([^"]+)" hx-trigger="toggle once" '
                        r'hx-target="find .machine-detail" hx-swap="outerHTML"', page)
    assert details and details.group(1).replace("&amp;", "&") == panel_link(client)


def test_three_machines_are_sized_as_three_stages(client, h100_site):
    page = client.get(address(h100_site)).content.decode()
    assert "TP 8 × PP 3" in page and "--pipeline-parallel-size 3" in page and "$64.00" in page


def test_the_german_page(client, h100_site):
    link = panel_link(client, prefix="/de/")
    assert link.startswith("/de/cluster/?")
    page = client.get(link).content.decode()
    assert "TP 8 × PP 2: 52,08 von 72,85 GiB pro GPU (vLLM-Budget)" in page
    assert "Zurück zur Antwort" in page and "--pipeline-parallel-size 2" in page


def refusal(response) -> str:
    assert response.status_code == 400
    return re.search(r'data-testid="cluster-problem">([^<]*)<', response.content.decode()).group(1)


@pytest.mark.parametrize("machines", ["", "12", "1,x", "-1,2", "1,1", ",".join(str(n) for n in range(1, 18)),
                                      "1" * 40 + ",2", "١,٢"])
def test_a_bad_machines_value_is_refused_with_what_to_write(client, h100_site, machines):
    response = client.get(f"/cluster/?{LLAMA_405B_8K}&machines={machines}")
    assert "machines=12,34 (at least two)" in refusal(response).replace("&#x27;", "'")


def test_machines_of_two_sites_or_not_clusterable_are_no_cluster(client, h100_site, h200_site, small_fleet):
    for machines in ([h100_site[0], h200_site[0]], [h100_site[0], small_fleet["h100x8"]],
                     [h100_site[0], h100_site[1], type("Gone", (), {"id": 10**9})()]):
        assert "do not form a cluster" in refusal(client.get(address(machines)))


def test_a_cluster_that_does_not_hold_the_workload_says_why(client, h100_site):
    long_context = LLAMA_405B_8K.replace("context=8192", "context=131072").replace("requests=1", "requests=64")
    assert "more than vLLM" in refusal(client.get(address(h100_site[:2], long_context))).replace("&#x27;", "'")


def test_a_refused_query_is_a_400_naming_the_problem(client, h100_site):
    assert "context" in refusal(client.get(address(h100_site[:2], LLAMA_405B_8K.replace("8192", "abc")))).lower()
    assert "inference" in refusal(client.get(address(h100_site[:2], "workload=notebook&memory_gib=24")))
