"""Any GGUF type as the wizard's `quantization` (llama.cpp and Ollama): on the page, in the API and the
commands, through the query's one declaration; the answer and each row name the type and the file
assumed; a type the engine does not read, or an unknown one, is refused beside its field."""
import json
import math

import pytest
from django.core.management import call_command

from sizing.calculators import estimate
from sizing.gguf import QUANT_TYPES, gguf_weights
from sizing.units import MIB
from tests.helpers import LLAMA_8B, with_details_opened
from tests.sizing.test_llamacpp import spec

pytestmark = pytest.mark.django_db

LLAMACPP = LLAMA_8B + "&engine=llamacpp"


def get_json(client, path, query, **headers):
    response = client.get(f"/api/v1/{path}?{query}", **headers)
    return response.status_code, response.json()


def test_the_quantization_asked_is_the_file_sized_whatever_the_precision(client, small_fleet):
    assert "precision=16" in LLAMACPP
    status, body = get_json(client, "recommendations", LLAMACPP + "&quantization=Q5_K_M")
    assert status == 200, body
    gguf = body["memory"]["gguf"]
    sized = gguf_weights(spec("llama-3-1-8b"), "Q5_K_M")
    assert gguf["quantization"] == "Q5_K_M" and gguf["bytes"] == sized.bytes
    assert gguf["bits_per_weight"] == round(float(sized.bits_per_weight), 4)
    assert "GGUF Q5_K_M" in body["memory"]["title"]
    assert body["machines"]
    for machine in body["machines"]:
        assert machine["quantization"] == "Q5_K_M" and machine["gguf_file"] == gguf["file"]
        assert machine["command"].startswith(f"llama-server -m {gguf['file']} ")
    precision = next(c for c in body["constraints"] if c["label"] == "Precision")
    assert "Q5_K_M" in precision["value"]
    assert any(c["label"] == "GGUF file" and gguf["file"] in c["value"] for c in body["constraints"])
    # the precision does not decide the file: no lower-precision alternatives are sized
    assert body["precision_alternatives"] == []


@pytest.mark.parametrize("quant_type", list(QUANT_TYPES))
def test_every_type_the_sizing_engine_sizes_is_taken_in_either_case(client, small_fleet, quant_type):
    status, body = get_json(client, "estimate", f"{LLAMACPP}&quantization={quant_type.lower()}")
    assert status == 200, body
    assert body["gguf"]["quantization"] == quant_type
    assert body["gguf"]["bytes"] == gguf_weights(spec("llama-3-1-8b"), quant_type).bytes


def test_without_a_quantization_the_precision_keeps_its_short_form(client, small_fleet):
    _, body = get_json(client, "estimate", LLAMACPP.replace("precision=16", "precision=8"))
    assert body["gguf"]["quantization"] == "Q8_0"
    _, plain = get_json(client, "estimate", LLAMA_8B)
    assert plain.get("gguf") is None  # another engine's answer names no file


@pytest.mark.parametrize("quant_type", ["Q9_K", "fp8", "Q4_K_M;", "x" * 300])
def test_an_unknown_type_is_refused_beside_its_field(client, small_fleet, quant_type):
    status, body = get_json(client, "recommendations", f"{LLAMACPP}&quantization={quant_type}")
    assert status == 400 and set(body["errors"]) == {"quantization"}
    assert "Q4_K_M" in body["errors"]["quantization"]


@pytest.mark.parametrize("engine", ["transformers", "vllm"])
def test_a_type_the_engine_does_not_read_is_a_conflict_naming_the_field(client, small_fleet, engine):
    status, body = get_json(client, "recommendations", f"{LLAMA_8B}&engine={engine}&quantization=Q4_K_M")
    assert status == 422 and set(body["errors"]) == {"quantization"}
    assert "llama.cpp and Ollama only" in body["errors"]["quantization"]
    page = client.get(f"/?{LLAMA_8B}&engine={engine}&quantization=Q4_K_M").content.decode()
    assert 'id="err-quantization"' in page and "llama.cpp and Ollama only" in page


def test_the_page_keeps_the_type_in_its_form_and_names_the_file_on_each_row(client, small_fleet):
    query = LLAMACPP.replace("engine=llamacpp", "engine=ollama") + "&quantization=iq4_xs"
    page = with_details_opened(client, client.get(f"/?{query}").content.decode())
    assert '<option value="IQ4_XS" selected>' in page
    assert 'data-testid="gguf-file"' in page and "Llama-3.1-8B-IQ4_XS.gguf" in page
    assert "quantization=IQ4_XS" in page  # the shareable address carries it
    german = with_details_opened(client, client.get(f"/de/?{query}").content.decode())
    assert "GGUF-Quantisierung" in german and "GGUF-Datei" in german


def test_the_commands_take_any_type(small_fleet, capsys):
    call_command("estimate", "--model", "llama-3-1-8b", "--engine", "ollama", "--quantization", "Q6_K", "--json")
    body = json.loads(capsys.readouterr().out)
    assert body["gguf"]["quantization"] == "Q6_K"
    call_command("recommend", "--model", "llama-3-1-8b", "--engine", "llamacpp", "--quantization", "IQ3_M")
    out = capsys.readouterr().out
    assert "GGUF IQ3_M: Llama-3.1-8B-IQ3_M.gguf" in out and "llama-server -m Llama-3.1-8B-IQ3_M.gguf" in out


def test_the_commands_refuse_an_unknown_type_with_the_fields_message(small_fleet, capsys):
    with pytest.raises(SystemExit):
        call_command("estimate", "--model", "llama-3-1-8b", "--engine", "llamacpp", "--quantization", "Q9")
    assert "quantization" in capsys.readouterr().err


@pytest.mark.parametrize("quant_type", ["IQ2_XXS", "Q2_K", "Q6_K", "BF16"])
def test_a_rows_capacity_at_any_type_sizes_a_bounded_number_of_needs(monkeypatch, quant_type):
    """Whatever the type, a row is two binary searches and the asked need, and the file is typed once."""
    import sizing.calculators.llamacpp as llamacpp_module
    import sizing.capacity as capacity_module
    from sizing.limits import MAX_CONTEXT, MAX_REQUESTS

    calls, typed = [], []
    real, real_typing = capacity_module.llamacpp_need, llamacpp_module.gguf_weights
    monkeypatch.setattr(capacity_module, "llamacpp_need", lambda *args: calls.append(1) or real(*args))
    monkeypatch.setattr(llamacpp_module, "gguf_weights", lambda *args: typed.append(1) or real_typing(*args))
    llamacpp_module._typed_file.cache_clear()
    bound = 2 * (math.ceil(math.log2(MAX_REQUESTS)) + math.ceil(math.log2(MAX_CONTEXT))) + 5
    for memory_mib, gpus in ((24564, 1), (81559, 8), (2048, 1)):
        need = estimate("inference", spec("llama-3-1-70b"), 16, 4096, 3, None, 8, engine="llamacpp",
                        quantization=quant_type)
        calls.clear()
        capacity_module._gguf_need.cache_clear()  # each shape's own count (an answer's shapes share theirs)
        held = need.capacity._on_machine(gpus, memory_mib * MIB, None)
        assert 0 < len(calls) <= bound, (memory_mib, gpus, len(calls))
        assert held.quantization == quant_type
    assert len(typed) == 1


def test_deepseek_v3_is_sized_as_its_gguf_file_under_llama_cpp_on_the_page_and_in_the_api(client, small_fleet):
    """Latent attention under llama.cpp: the deepseek2 file typed as the quantizer types it, its latent cache
    and the absorbed graph's compute buffer; 8 × H100 hold the 376.7 GiB Q4_K_M file."""
    query = ("workload=inference&model=deepseek-v3&precision=16&context=8192&requests=1&engine=llamacpp"
             "&quantization=Q4_K_M")
    status, body = get_json(client, "recommendations", query)
    assert status == 200, body
    assert body["memory"]["gguf"]["bytes"] == gguf_weights(spec("deepseek-v3"), "Q4_K_M").bytes
    assert [machine["gpu_count"] for machine in body["machines"]] == [8]
    page = client.get(f"/?{query}")
    assert page.status_code == 200 and "GGUF Q4_K_M" in page.content.decode()


def test_qwen3_next_is_sized_under_llama_cpp_on_the_page_in_the_api_and_by_the_command(client, small_fleet,
                                                                                        capsys):
    """Linear attention under llama.cpp: the qwen3next file, the recurrent state beside the full-attention
    layers' KV cache, the Gated DeltaNet layer in the compute buffer; the command prints what the API answers."""
    query = ("workload=inference&model=qwen3-next-80b-a3b&precision=16&context=8192&requests=2"
             "&engine=llamacpp&quantization=Q4_K_M")
    status, body = get_json(client, "recommendations", query)
    assert status == 200, body
    assert body["memory"]["gguf"]["bytes"] == gguf_weights(spec("qwen3-next-80b-a3b"), "Q4_K_M").bytes
    formulas = " ".join(item["formula"] for item in body["memory"]["items"])
    assert "the 36 linear-attention layers keep a recurrent state" in formulas and "Gated DeltaNet" in formulas
    assert body["machines"]
    page = client.get(f"/?{query}").content.decode()
    assert "GGUF Q4_K_M" in page and "linear-attention layers keep a recurrent state" in page
    status, api = get_json(client, "estimate", query)
    assert status == 200, api
    call_command("estimate", "--model", "qwen3-next-80b-a3b", "--precision", "16", "--context", "8192",
                 "--requests", "2", "--engine", "llamacpp", "--quantization", "Q4_K_M", "--json")
    assert json.loads(capsys.readouterr().out) == api


def test_kimi_linear_is_sized_under_llama_cpp_on_the_page_in_the_api_and_by_the_command(client, small_fleet,
                                                                                        capsys):
    """Kimi Delta Attention under llama.cpp: the kimi-linear file, the KDA layers' recurrent state beside the
    latent layers' cache, the KDA layer in the compute buffer; the command prints what the API answers; under
    Ollama without its version, refused beside engine_version."""
    query = ("workload=inference&model=kimi-linear-48b-a3b&precision=16&context=8192&requests=2"
             "&engine=llamacpp&quantization=Q4_K_M")
    status, body = get_json(client, "recommendations", query)
    assert status == 200, body
    assert body["memory"]["gguf"]["bytes"] == gguf_weights(spec("kimi-linear-48b-a3b"), "Q4_K_M").bytes
    formulas = " ".join(item["formula"] for item in body["memory"]["items"])
    assert "the 20 linear-attention layers keep a recurrent state" in formulas
    assert "Kimi Delta Attention layer's graph" in formulas and body["machines"]
    page = client.get(f"/?{query}").content.decode()
    assert "GGUF Q4_K_M" in page and "linear-attention layers keep a recurrent state" in page
    status, api = get_json(client, "estimate", query)
    assert status == 200, api
    call_command("estimate", "--model", "kimi-linear-48b-a3b", "--precision", "16", "--context", "8192",
                 "--requests", "2", "--engine", "llamacpp", "--quantization", "Q4_K_M", "--json")
    assert json.loads(capsys.readouterr().out) == api
    status, refused = get_json(client, "estimate", query.replace("engine=llamacpp", "engine=ollama"))
    assert status in (400, 409, 422) and "0.30.0" in str(refused)
