"""Commands valid for the GPU (issue #43) through every door: the API's machine rows and clusters, the page,
the GPU what-if (`/api/v1/capacity` with `gpu`), the `recommend` command, both languages, and the catalog's
GPU types (the admin's check, the shipped values). No command is offered that cannot start on its GPU."""
import json
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from catalog.data.gpu_types import ARCHITECTURES
from catalog.models import GpuType
from tests.helpers import with_details_opened

pytestmark = pytest.mark.django_db

LLAMA_8B_FP8 = "workload=inference&model=llama-3-1-8b&precision=8&kv_cache=8&context=8192&requests=4&engine=vllm"
REASON = "vLLM cannot run FP8 weights on V100 32GB (Volta, compute capability 7.0)"
ALTERNATIVE = ("vllm serve meta-llama/Llama-3.1-8B --dtype half --tensor-parallel-size 1 --max-model-len 8192 "
               "--max-num-seqs 4 --gpu-memory-utilization 0.92")


@pytest.fixture
def v100_fleet(make_machine):
    """A V100 32GB, a T4 and an H100 machine: Volta (no FP8), Turing (FP8 through Marlin, float16 only) and
    Hopper."""
    return {
        "v100": make_machine("V100 32GB", price_per_gpu_hour=Decimal("0.25")),
        "t4": make_machine("T4", price_per_gpu_hour=Decimal("0.20")),
        "h100": make_machine("H100 SXM 80GB", price_per_gpu_hour=Decimal("2.50")),
    }


def recommendations(client, query, **headers):
    response = client.get(f"/api/v1/recommendations?{query}", **headers)
    assert response.status_code == 200
    return response.json()


def row_of(body, machine):
    return next(row for row in body["machines"] if row["id"] == machine.id)


def test_a_v100_row_at_8_bit_offers_no_fp8_says_why_and_offers_what_runs(client, v100_fleet):
    body = recommendations(client, LLAMA_8B_FP8)
    v100 = row_of(body, v100_fleet["v100"])
    assert v100["command"] is None and v100["runs_on_gpu"] is False
    assert "--quantization fp8" not in json.dumps(v100) and "--kv-cache-dtype fp8" not in json.dumps(v100)
    assert v100["gpu_support_text"].startswith(REASON)
    assert "an FP8 KV cache on V100 32GB" in v100["gpu_support_text"]
    assert v100["gpu_support_text"].endswith(
        "What runs there and fits instead: 16-bit weights with a 16-bit KV cache (--dtype half), started by the "
        "command below.")
    assert v100["alternative"] == {"precision": 16, "kv_cache_bits": 16, "command": ALTERNATIVE,
                                   "max_requests_at_context": v100["alternative"]["max_requests_at_context"],
                                   "max_context_at_requests": 8192}
    assert v100["alternative"]["max_requests_at_context"] >= 4
    t4, h100 = row_of(body, v100_fleet["t4"]), row_of(body, v100_fleet["h100"])
    assert t4["runs_on_gpu"] is True and t4["gpu_support_text"] is None and t4["alternative"] is None
    assert "--dtype half" in t4["command"] and t4["command"].endswith("--kv-cache-dtype fp8 --quantization fp8")
    assert "--dtype" not in h100["command"] and h100["command"].endswith("--quantization fp8")


def test_the_page_shows_the_reason_and_the_command_that_runs_never_the_fp8_one(client, v100_fleet):
    page = with_details_opened(client, client.get(f"/?{LLAMA_8B_FP8}").content.decode())
    row = page.split(f'data-machine-id="{v100_fleet["v100"].id}"')[1].split("</tbody>")[0]
    assert 'data-testid="gpu-support-flag">Does not run on this GPU as asked<' in row
    assert f'data-testid="gpu-support">{REASON}' in row
    assert f'data-testid="alternative-command">{ALTERNATIVE}</code>' in row
    assert 'data-testid="command"' not in row and "fp8" not in row.split('data-testid="gpu-support"')[0]


def test_german_words_on_the_v100_row(client, v100_fleet):
    body = recommendations(client, LLAMA_8B_FP8, HTTP_ACCEPT_LANGUAGE="de")
    words = row_of(body, v100_fleet["v100"])["gpu_support_text"]
    assert words.startswith(
        "vLLM kann FP8-Gewichte auf V100 32GB (Volta, Compute Capability 7.0) nicht ausführen: FP8 läuft auf "
        "NVIDIA-GPUs ab Compute Capability 7.5")
    assert words.endswith("Was dort läuft und stattdessen passt: 16-Bit-Gewichte mit 16-Bit-KV-Cache "
                          "(--dtype half), gestartet mit dem Befehl unten.")
    page = with_details_opened(client, client.get(f"/de/?{LLAMA_8B_FP8}").content.decode())
    assert "Läuft so nicht auf dieser GPU" in page and "Mit vLLM starten, was auf dieser GPU läuft" in page


def test_the_recommend_command_prints_the_reason_and_the_command_that_runs(v100_fleet, capsys):
    call_command("recommend", "--model", "llama-3-1-8b", "--engine", "vllm", "--precision", "8", "--kv-cache", "8",
                 "--context", "8192", "--requests", "4")
    out = capsys.readouterr().out
    assert REASON in out and ALTERNATIVE in out
    assert not any("V100" in line and "--quantization fp8" in line for line in out.splitlines())


V100_CLUSTER = LLAMA_8B_FP8 + "&clusters=show"


def test_a_v100_cluster_offers_what_runs_on_volta_and_no_sglang(client, make_machine):
    machines = [make_machine("V100 32GB", gpu_count=8, free_gpus=8, site="v100-1", interconnect="infiniband",
                             interconnect_gbps=400, country="US", price_per_gpu_hour=Decimal("0.30"))
                for _ in range(2)]
    (cluster,) = recommendations(client, V100_CLUSTER)["clusters"]
    assert cluster["machine_ids"] == [machine.id for machine in machines]
    assert cluster["vllm_commands"] == [] and cluster["sglang_commands"] == [] and cluster["runs_on_gpu"] is False
    assert cluster["gpu_support_text"].startswith(REASON)
    alternative = cluster["alternative"]
    assert (alternative["precision"], alternative["kv_cache_bits"]) == (16, 16)
    assert alternative["vllm_commands"][2].startswith("vllm serve meta-llama/Llama-3.1-8B --dtype half")
    assert "fp8" not in json.dumps(alternative)
    assert alternative["sglang_commands"] == [] and "SGLang itself on V100 32GB" in alternative["sglang_note"]
    ids = ",".join(str(machine.id) for machine in machines)
    page = client.get(f"/cluster/?{V100_CLUSTER}&machines={ids}").content.decode()
    assert 'data-testid="cluster-gpu-support">' + REASON in page
    assert 'data-testid="cluster-vllm-alternative"' in page and 'data-testid="cluster-vllm"' not in page


CAPACITY = "/api/v1/capacity?model=llama-3-1-8b&precision={precision}&kv_cache=16&engine=vllm&max_model_len=8192"


def test_the_what_if_for_a_v100_at_8_bit_answers_no_command_the_reason_and_what_runs(client, v100_fleet):
    body = client.get(CAPACITY.format(precision=8) + "&gpu=V100 32GB").json()
    assert body["gpu"] == "V100 32GB" and body["gpu_architecture"] == "Volta, compute capability 7.0"
    assert body["command"] is None and body["runs_on_gpu"] is False
    assert body["gpu_support_text"].startswith(REASON)
    assert body["alternative"]["precision"] == 16 and body["alternative"]["command"].startswith(
        "vllm serve meta-llama/Llama-3.1-8B --dtype half --tensor-parallel-size 1 --max-model-len 8192")
    page = client.get(f"/calculators/?{CAPACITY.format(precision=8).split('?')[1]}&gpu=V100 32GB").content.decode()
    assert 'data-testid="what-if-gpu-support"' in page and 'data-testid="what-if-alternative-command"' in page
    assert 'data-testid="what-if-command"' not in page


def test_the_what_if_writes_dtype_half_below_compute_capability_8_and_nothing_without_a_gpu(client, v100_fleet):
    t4 = client.get(CAPACITY.format(precision=8) + "&gpu=T4&max_num_seqs=4&gpu_memory_utilization=0.85").json()  # FP8 through Marlin
    assert t4["runs_on_gpu"] is True and t4["gpu_support_text"] is None
    assert t4["command"].startswith("vllm serve meta-llama/Llama-3.1-8B --dtype half --tensor-parallel-size 1")
    h100 = client.get(CAPACITY.format(precision=8) + "&gpu=h100 sxm 80gb").json()
    assert h100["command"].endswith("--quantization fp8") and "--dtype" not in h100["command"]
    unnamed = client.get(CAPACITY.format(precision=8) + "&gpu_memory_gib=31.75").json()
    assert unnamed["runs_on_gpu"] is None and unnamed["gpu_support_text"] is None
    assert unnamed["command"].endswith("--quantization fp8")  # no GPU named: as before


def test_the_shipped_gpu_types_carry_their_architecture(models_and_gpus):
    for gpu in GpuType.objects.all():
        assert (gpu.architecture, gpu.compute_capability) == ARCHITECTURES[gpu.name]
        gpu.full_clean()


@pytest.mark.parametrize(("changes", "field"), [
    ({"compute_capability": "8.0"}, "compute_capability"),
    ({"architecture": "cdna3"}, "architecture"),
    ({"compute_capability": "seven"}, "compute_capability"),
])
def test_the_admin_refuses_an_architecture_that_contradicts_the_gpu(models_and_gpus, changes, field):
    gpu = GpuType.objects.get(name="V100 32GB")
    for name, value in changes.items():
        setattr(gpu, name, value)
    with pytest.raises(ValidationError) as refused:
        gpu.full_clean()
    assert set(refused.value.message_dict) == {field}
