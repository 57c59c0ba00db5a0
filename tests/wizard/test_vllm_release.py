"""vLLM's release on the wizard's query (engine_version, cudagraph_estimate, skip_vision_tower, model_runner): the same
default as the GPU what-if, named in every answer; the breakdown, each row's capacity and command, clusters
and watches sized on it; inputs that do not apply refused beside their field, on the page, the API and the
commands alike."""
import json
import re

import pytest
from django.core.management import call_command

from sizing.calculators.vllm_versions import CUDAGRAPH_SWITCH, DEFAULT_VERSION, SKIP_TOWER_FLAG
from tests.helpers import LLAMA_8B, with_details_opened
from tests.sizing.test_cluster_plan import llama_405b_16_bit_per_gpu

pytestmark = pytest.mark.django_db

VLLM = LLAMA_8B + "&engine=vllm"
GRAPHS = "CUDA graphs (estimated inside the budget)"
SWITCH_OFF = f"{CUDAGRAPH_SWITCH}=0 vllm serve meta-llama/Llama-3.1-8B"


def get_json(client, path, query):
    response = client.get(f"/api/v1/{path}?{query}")
    return response.status_code, response.json()


def test_the_wizard_assumes_the_what_ifs_default_release_and_names_it(client, small_fleet):
    _, estimate = get_json(client, "estimate", VLLM)
    _, what_if = get_json(client, "capacity", "model=llama-3-1-8b&gpu_memory_gib=80")
    assert estimate["engine_version"] == what_if["engine_version"] == DEFAULT_VERSION
    assert GRAPHS in [item["name"] for item in estimate["items"]]
    assert any(f"vLLM {DEFAULT_VERSION} (0.29 on" in line for line in estimate["assumptions"])


def inside(body):
    """The budget's items, the KV cache among them: all but what utilization leaves and the driver keeps."""
    return sum(item["bytes"] for item in body["items"][:-2])


def test_a_release_before_0_20_leaves_the_graphs_outside_and_the_answer_names_it(client, small_fleet):
    _, default = get_json(client, "estimate", VLLM)
    status, old = get_json(client, "estimate", VLLM + "&engine_version=0.19")
    assert status == 200 and old["engine_version"] == "0.19"
    assert GRAPHS not in [item["name"] for item in old["items"]]
    assert any("vLLM 0.19 (0.9.2 to 0.19)" in line for line in old["assumptions"])
    # the CUDA graphs' estimate, 1 GiB, inside; each need over its release's default utilization, 0.92 and 0.9
    assert inside(default) - inside(old) == 2**30
    assert default["total_bytes"] == -(-inside(default) * 25 // 23) + 469 * 2**20
    assert old["total_bytes"] == -(-inside(old) * 10 // 9) + 469 * 2**20


def test_from_0_25_to_0_28_the_v2_runner_keeps_a_dense_models_graphs_outside(client, small_fleet):
    _, v2 = get_json(client, "estimate", VLLM + "&engine_version=0.26")
    assert GRAPHS not in [item["name"] for item in v2["items"]]
    assert any("V2 model runner" in line for line in v2["assumptions"])
    _, v1 = get_json(client, "estimate", VLLM + "&engine_version=0.26&model_runner=v1")
    assert inside(v1) - inside(v2) == 2**30
    _, body = get_json(client, "recommendations", VLLM + "&engine_version=0.26&model_runner=v1")
    commands = [row["command"] for row in body["machines"] if row["command"]]
    assert commands and all(command.startswith("VLLM_USE_V2_MODEL_RUNNER=0 vllm serve ") for command in commands)
    page = client.get(f"/?{VLLM}&engine_version=0.26&model_runner=v1").content.decode()
    assert 'id="id_model_runner"' in page and '<option value="v1" selected>' in page
    address = page.split('name="query" value="')[1].split('"')[0]
    assert "model_runner=v1" in address


def test_the_switch_is_on_every_rows_command_and_the_address(client, small_fleet):
    status, body = get_json(client, "recommendations", VLLM + "&cudagraph_estimate=off")
    assert status == 200 and body["machines"]
    commands = [row["command"] for row in body["machines"] if row["command"]]
    assert commands and all(command.startswith(SWITCH_OFF) for command in commands)
    assert body["memory"]["engine_version"] == DEFAULT_VERSION
    _, plain = get_json(client, "recommendations", VLLM)
    assert not any(CUDAGRAPH_SWITCH in (row["command"] or "") for row in plain["machines"])


def test_the_page_shows_the_assumed_release_and_the_switch_in_the_command(client, small_fleet):
    page = with_details_opened(client, client.get(f"/?{VLLM}&engine_version=0.27&cudagraph_estimate=off").content.decode())
    assert 'id="id_engine_version"' in page and 'value="0.27"' in page
    assert "vLLM 0.27 with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0" in page
    assert SWITCH_OFF in page
    # the page's own address keeps the release and its switch (a watch, the language switch)
    address = page.split('name="query" value="')[1].split('"')[0]
    assert "engine_version=0.27" in address and "cudagraph_estimate=off" in address
    default = client.get(f"/?{VLLM}").content.decode()
    assert f"vLLM {DEFAULT_VERSION} (0.29 on" in default and f"its {DEFAULT_VERSION} budget" in default


def test_a_rows_gpu_what_if_link_carries_the_release(client, small_fleet):
    page = client.get(f"/?{VLLM}&engine_version=0.19").content.decode()
    links = re.findall(r'href="(/calculators/\?[^"]+)"', page)
    assert links and all("engine_version=0.19" in link for link in links)
    opened = client.get(links[0].replace("&amp;", "&")).content.decode()
    assert "vLLM 0.19 (0.9.2 to 0.19)" in opened


def test_the_german_page_names_the_release(client, small_fleet):
    page = client.get(f"/de/?{VLLM}&engine_version=0.19", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "vLLM 0.19 (0.9.2 bis 0.19)" in page and "vLLM-Version" in page


@pytest.mark.parametrize(("extra", "field", "words"), [
    ("&engine=vllm&engine_version=nineteen", "engine_version", "numbers with dots"),
    ("&engine=vllm&engine_version=0.7", "engine_version", "from 0.8"),
    ("&engine=vllm&engine_version=0.19&cudagraph_estimate=on", "cudagraph_estimate", "0.20"),
    ("&engine=vllm&skip_vision_tower=maybe", "skip_vision_tower", "on or off"),
    ("&engine=vllm&engine_version=0.21&model_runner=v2", "model_runner", "0.22"),
    ("&engine=vllm&model_runner=v3", "model_runner", "v1 or v2"),
])
def test_a_bad_release_is_a_400_beside_its_field_and_worded_on_the_page(client, small_fleet, extra, field, words):
    status, body = get_json(client, "recommendations", LLAMA_8B + extra)
    assert status == 400 and words in body["errors"][field]
    page = client.get(f"/?{LLAMA_8B}{extra}").content.decode()
    assert f'id="err-{field}"' in page and words in page


@pytest.mark.parametrize(("extra", "field", "words"), [
    ("&engine_version=0.19", "engine_version",
     "read by vLLM (its release), llama.cpp (its build) and Ollama (its version) only"),
    # Three numbers have the form of an Ollama release, which the schema allows: a vLLM release past the
    # known ones written so is a value that does not go with vLLM (422), no longer a bad value (400).
    ("&engine=vllm&engine_version=0.7.3", "engine_version", "from 0.8"),
    ("&engine=vllm&engine_version=0.32.15", "engine_version", "from 0.8"),
    ("&engine=sglang&cudagraph_estimate=off", "cudagraph_estimate", "read by vLLM only"),
    ("&engine=vllm&skip_vision_tower=on", "skip_vision_tower", "no vision tower"),
    ("&model_runner=v1", "model_runner", "read by vLLM only"),
    ("&engine=vllm&engine_version=0.26&cudagraph_estimate=on", "cudagraph_estimate", "V1 runner"),
])
def test_an_input_that_does_not_apply_is_a_422_beside_its_field(client, small_fleet, extra, field, words):
    status, body = get_json(client, "estimate", LLAMA_8B + extra)
    assert status == 422 and words in body["errors"][field]
    page = client.get(f"/?{LLAMA_8B}{extra}").content.decode()
    assert f'id="err-{field}"' in page and words in page


def test_a_model_with_a_vision_tower_skips_it_on_the_breakdown_and_the_command(client, small_fleet):
    query = VLLM.replace("llama-3-1-8b", "gemma-3-4b")
    _, loaded = get_json(client, "estimate", query)
    _, skipped = get_json(client, "estimate", query + "&skip_vision_tower=on")
    assert skipped["items"][0]["bytes"] < loaded["items"][0]["bytes"]
    assert any(SKIP_TOWER_FLAG in line for line in skipped["assumptions"])
    _, body = get_json(client, "recommendations", query + "&skip_vision_tower=on")
    commands = [row["command"] for row in body["machines"] if row["command"]]
    assert commands and all(command.endswith(SKIP_TOWER_FLAG) for command in commands)


def test_the_commands_take_and_name_the_release(small_fleet, capsys):
    call_command("estimate", "--model", "llama-3-1-8b", "--engine", "vllm", "--engine-version", "0.19", "--json")
    assert json.loads(capsys.readouterr().out)["engine_version"] == "0.19"
    call_command("estimate", "--model", "llama-3-1-8b", "--engine", "vllm")
    assert f"Sized as vLLM {DEFAULT_VERSION} starts" in capsys.readouterr().out
    call_command("recommend", "--model", "llama-3-1-8b", "--engine", "vllm", "--cudagraph-estimate", "off")
    assert SWITCH_OFF in capsys.readouterr().out
    call_command("recommend", "--model", "llama-3-1-8b", "--engine", "vllm", "--engine-version", "0.26",
                 "--model-runner", "v1")
    assert "VLLM_USE_V2_MODEL_RUNNER=0 vllm serve meta-llama/Llama-3.1-8B" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        call_command("estimate", "--model", "llama-3-1-8b", "--engine", "vllm", "--engine-version", "0.5")
    assert refused.value.code == 2 and "engine_version" in capsys.readouterr().err


def test_a_cluster_is_sized_on_the_chosen_release(client, h100_site):
    query = "workload=inference&model=llama-3-1-405b&precision=16&context=8192&requests=1&engine=vllm"
    _, old = get_json(client, "recommendations", query + "&engine_version=0.19")
    (cluster,) = old["clusters"]
    assert [item["bytes"] for item in cluster["items"]] == list(llama_405b_16_bit_per_gpu(2).values())
    assert cluster["need_per_gpu_gib"] == 51.08
    assert "Sized as vLLM 0.19 starts on each GPU" in " ".join(cluster["assumptions"])
    _, off = get_json(client, "recommendations", query + "&cudagraph_estimate=off")
    (cluster,) = off["clusters"]
    assert cluster["need_per_gpu_gib"] == 51.08
    assert cluster["vllm_commands"][2].startswith(f"{CUDAGRAPH_SWITCH}=0 vllm serve meta-llama/Llama-3.1-405B")


def test_the_interconnect_asked_sizes_the_split_is_named_and_stays_on_the_address(client, small_fleet):
    status, said = get_json(client, "estimate", VLLM + "&interconnect=pcie")
    assert status == 200
    assert any("Sized for: PCIe without peer-to-peer." in line for line in said["assumptions"])
    _, unsaid = get_json(client, "estimate", VLLM)
    assert any("Sized for: NVLink through NVSwitch" in line for line in unsaid["assumptions"])
    page = client.get(f"/?{VLLM}&interconnect=pcie_p2p").content.decode()
    assert 'id="id_interconnect"' in page and '<option value="pcie_p2p" selected>' in page
    address = page.split('name="query" value="')[1].split('"')[0]
    assert "interconnect=pcie_p2p" in address
    status, body = get_json(client, "recommendations", VLLM + "&interconnect=pcie")
    assert status == 200 and body["machines"]


def test_the_interconnect_with_another_engine_or_unknown_is_refused_beside_its_field(client, small_fleet):
    status, body = get_json(client, "estimate", LLAMA_8B + "&interconnect=pcie")  # transformers
    assert status == 422 and set(body["errors"]) == {"interconnect"}
    status, body = get_json(client, "estimate", VLLM + "&interconnect=infiniband")
    assert status == 400 and set(body["errors"]) == {"interconnect"}
