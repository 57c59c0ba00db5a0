"""flash_attention in the wizard's query (page, /estimate, /recommendations, `estimate`, `recommend`, watches),
through the query's one declaration: under llama.cpp and Ollama every machine row is sized with it by the
calculator the GPU what-if uses (off: the compute buffer holds the attention scores of the whole context),
each row's command says -fa on/off or OLLAMA_FLASH_ATTENTION=1/0 and the breakdown's words say which was
assumed; under another engine, or with a quantized V cache, it is refused beside its field as the what-if
refuses it, in both languages. Left empty, today's answers."""
import json

import pytest
from django.core.management import call_command

from nodelodge.recommendations import fleet_state
from nodelodge.recommendations.query import parse_query
from nodelodge.watches.services import explicit_query
from sizing.calculators import estimate
from sizing.calculators.llamacpp import engine_command, gguf_file_name, llamacpp_need, wizard_settings
from sizing.capacity import Capacity
from tests.sizing.test_llamacpp import spec
from tests.wizard.gguf_query import asked, catalog_spec, get_json, memory_bytes, needs_sized_per_shape

pytestmark = pytest.mark.django_db

# 16,384 tokens: without flash attention the scores of the whole context dwarf the MLP step.
QUERY = "workload=inference&model=llama-3-1-8b&precision=16&context=16384&requests=1&engine=llamacpp"
OLLAMA = QUERY.replace("engine=llamacpp", "engine=ollama")


def settings(engine="llamacpp", flash_attention=True):
    return wizard_settings(16, 16384, 1, 16, engine=engine, flash_attention=flash_attention)


def test_flash_attention_off_sizes_the_scores_of_the_whole_context_by_the_calculators_formula(client, small_fleet):
    status, on = get_json(client, "estimate", QUERY)
    assert status == 200
    status, off = get_json(client, "estimate", QUERY + "&flash_attention=off")
    assert status == 200
    llama = spec("llama-3-1-8b")
    with_scores = llamacpp_need(llama, settings(flash_attention=False))
    without = llamacpp_need(llama, settings())
    assert [item["bytes"] for item in off["items"][:3]] == [item.bytes for item in with_scores.gpu_items]
    assert [item["bytes"] for item in on["items"][:3]] == [item.bytes for item in without.gpu_items]
    # The same weights and cache; the compute buffer holds the scores of 16,384 tokens.
    assert off["items"][1]["bytes"] == on["items"][1]["bytes"]
    assert off["items"][2]["bytes"] > 2 * on["items"][2]["bytes"]
    assert off["total_bytes"] == on["total_bytes"] - on["items"][2]["bytes"] + off["items"][2]["bytes"]
    assert "the attention scores of the whole context (no flash attention)" in off["items"][2]["formula"]
    assert any("flash attention off (-fa off)" in line for line in off["assumptions"])
    assert any(line.endswith("flash attention on.") for line in on["assumptions"])


def test_every_row_is_sized_and_started_with_flash_attention_as_asked(client, small_fleet):
    status, on = get_json(client, "recommendations", QUERY)
    assert status == 200
    status, off = get_json(client, "recommendations", QUERY + "&flash_attention=off")
    assert status == 200 and off["machines"]
    llama = spec("llama-3-1-8b")
    file = gguf_file_name(catalog_spec("llama-3-1-8b"), "F16")
    asked = Capacity(llama, 16, 16, 16384, 1, engine="llamacpp", flash_attention=False)
    held_on = {machine["id"]: machine for machine in on["machines"]}
    fewer = 0
    for machine in off["machines"]:
        assert machine["command"] == engine_command(
            "llamacpp", llamacpp_need(llama, settings(flash_attention=False)), file)
        assert " -fa off" in machine["command"]
        memory = memory_bytes(machine)
        held = asked.on_machine(machine["gpus_used"], memory)
        assert (machine["max_requests_at_context"], machine["max_context_at_requests"]) == (
            held.max_requests_at_context, held.max_context_at_requests)
        if machine["id"] in held_on:  # the scores' buffer grows with the context: fewer tokens held
            assert " -fa on" in held_on[machine["id"]]["command"]
            assert machine["max_context_at_requests"] <= held_on[machine["id"]]["max_context_at_requests"]
            fewer += machine["max_context_at_requests"] < held_on[machine["id"]]["max_context_at_requests"]
    assert fewer  # at least one machine holds less context than with flash attention on


def test_ollama_rows_set_its_flash_attention(client, small_fleet):
    status, off = get_json(client, "recommendations", OLLAMA + "&flash_attention=off")
    assert status == 200 and off["machines"]
    assert all("OLLAMA_FLASH_ATTENTION=0 " in machine["command"] for machine in off["machines"])
    status, on = get_json(client, "recommendations", OLLAMA)
    assert all("OLLAMA_FLASH_ATTENTION=1 " in machine["command"] for machine in on["machines"])
    llama = spec("llama-3-1-8b")
    need = llamacpp_need(llama, settings("ollama", flash_attention=False))
    assert off["memory"]["items"][2]["bytes"] == need.gpu_items[2].bytes


def test_the_page_sizes_it_keeps_it_in_its_form_and_words_it_in_both_languages(client, small_fleet):
    page = client.get(f"/?{QUERY}&flash_attention=off").content.decode()
    assert '<select id="id_flash_attention" name="flash_attention"' in page
    assert '<option value="off" selected>' in page.split('id="id_flash_attention"')[1].split("</select>")[0]
    assert "flash attention off (-fa off)" in page and "flash_attention=off" in page  # the shareable address
    german = client.get(f"/de/?{QUERY}&flash_attention=off").content.decode()
    assert "Flash Attention aus (-fa off)" in german


@pytest.mark.parametrize("engine", ["transformers", "vllm", "sglang"])
def test_another_engine_refuses_it_beside_its_field_as_the_what_if_does(client, small_fleet, engine):
    query = QUERY.replace("engine=llamacpp", f"engine={engine}") + "&flash_attention=off"
    status, body = get_json(client, "recommendations", query)
    assert status == 422 and set(body["errors"]) == {"flash_attention"}
    assert "llama.cpp's -fa and Ollama's OLLAMA_FLASH_ATTENTION" in body["errors"]["flash_attention"]
    if engine != "transformers":  # the what-if has no transformers engine
        what_if = f"model=llama-3-1-8b&engine={engine}&flash_attention=off"
        assert get_json(client, "capacity", what_if)[1]["errors"] == body["errors"]
    page = client.get(f"/?{query}").content.decode()
    assert 'id="err-flash_attention"' in page and "OLLAMA_FLASH_ATTENTION (engine=llamacpp" in page
    _, german = get_json(client, "recommendations", query, HTTP_ACCEPT_LANGUAGE="de")
    assert "von llama.cpp und OLLAMA_FLASH_ATTENTION von Ollama" in german["errors"]["flash_attention"]


@pytest.mark.parametrize("path", ["estimate", "recommendations"])
def test_a_quantized_v_cache_without_flash_attention_is_refused_as_the_what_if_refuses_it(client, small_fleet,
                                                                                          path):
    status, body = get_json(client, path, QUERY + "&kv_cache=8&flash_attention=off")
    assert status == 422 and set(body["errors"]) == {"flash_attention"}
    what_if = get_json(client, "capacity", "model=llama-3-1-8b&engine=llamacpp&kv_cache=q8_0&flash_attention=off")
    assert body["errors"] == what_if[1]["errors"]
    assert "A quantized V cache (q8_0) needs flash attention" in body["errors"]["flash_attention"]
    page = client.get(f"/?{QUERY}&kv_cache=8&flash_attention=off").content.decode()
    assert 'id="err-flash_attention"' in page and "needs flash attention in llama.cpp" in page
    _, german = get_json(client, path, QUERY + "&kv_cache=8&flash_attention=off", HTTP_ACCEPT_LANGUAGE="de")
    assert german["errors"]["flash_attention"] != body["errors"]["flash_attention"]


def test_a_value_other_than_on_or_off_is_refused_in_both_languages(client, small_fleet):
    status, body = get_json(client, "estimate", QUERY + "&flash_attention=maybe")
    assert status == 400 and body["errors"] == {"flash_attention": "Flash attention is on or off."}
    _, german = get_json(client, "estimate", QUERY + "&flash_attention=maybe", HTTP_ACCEPT_LANGUAGE="de")
    assert german["errors"] == {"flash_attention": "Flash Attention ist an oder aus (on oder off)."}


def test_empty_or_on_is_todays_answer_and_the_address_leaves_it_out(client, small_fleet, settings, monkeypatch):
    settings.ANSWER_CACHE_SECONDS = 60
    monkeypatch.setattr(fleet_state, "clock", lambda: 1_800_000_030.0)  # one step of answers
    assert get_json(client, "recommendations", QUERY + "&flash_attention=on")[1]["memory"] == get_json(
        client, "recommendations", QUERY)[1]["memory"]
    query = parse_query(asked(QUERY + "&flash_attention=on"))
    assert query == parse_query(asked(QUERY)) and query.flash_attention is True
    assert "flash_attention" not in query.as_query_string()
    # the answer's cache and ETag tell the two apart
    first = client.get(f"/api/v1/estimate?{QUERY}")
    other = client.get(f"/api/v1/estimate?{QUERY}&flash_attention=off")
    assert first["ETag"] != other["ETag"]
    assert client.get(f"/api/v1/estimate?{QUERY}&flash_attention=off")["ETag"] == other["ETag"]


def test_the_openapi_schema_states_it_on_the_wizards_operations(client, small_fleet):
    schema = client.get("/api/v1/openapi.json").json()
    for path in ("/api/v1/estimate", "/api/v1/recommendations"):
        parameter = next(p for p in schema["paths"][path]["get"]["parameters"] if p["name"] == "flash_attention")
        assert parameter["schema"]["enum"] == ["", "on", "off"]
        assert "OLLAMA_FLASH_ATTENTION" in parameter["description"]


def test_a_watch_writes_it_out_and_keeps_it(small_fleet):
    query = parse_query(asked(QUERY + "&flash_attention=off"))
    assert explicit_query(query)["flash_attention"] == "off"
    assert explicit_query(parse_query(asked(QUERY)))["flash_attention"] == "on"
    vllm = parse_query(asked(QUERY.replace("llamacpp", "vllm")))
    assert "flash_attention" not in explicit_query(vllm)
    assert parse_query(explicit_query(query)).flash_attention is False


def test_the_commands_take_it_and_refuse_it_with_the_fields_message(small_fleet, capsys):
    call_command("estimate", "--model", "llama-3-1-8b", "--engine", "llamacpp", "--context", "16384",
                 "--flash-attention", "off", "--json")
    body = json.loads(capsys.readouterr().out)
    expected = estimate("inference", spec("llama-3-1-8b"), 16, 16384, 1, None, engine="llamacpp",
                        flash_attention=False)
    assert body["total_bytes"] == expected.total_bytes
    call_command("recommend", "--model", "llama-3-1-8b", "--engine", "llamacpp", "--context", "16384",
                 "--flash-attention", "off")
    assert " -fa off" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        call_command("estimate", "--model", "llama-3-1-8b", "--engine", "vllm", "--flash-attention", "off")
    assert "flash_attention: flash_attention is llama.cpp's -fa" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        call_command("estimate", "--model", "llama-3-1-8b", "--engine", "llamacpp", "--kv-cache", "8",
                     "--flash-attention", "off")
    assert "flash_attention: A quantized V cache (q8_0) needs flash attention" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        call_command("estimate", "--parameters", "8000000000", "--layers", "32", "--attention-heads", "32",
                     "--kv-heads", "8", "--head-dim", "128", "--hidden-size", "4096", "--vocab-size", "128256",
                     "--engine", "vllm", "--flash-attention", "off")
    assert "flash_attention:" in capsys.readouterr().err


@pytest.mark.parametrize(("flash_attention", "kv_unified"), [(False, False), (True, True), (False, True)])
def test_a_rows_capacity_with_the_switches_sizes_a_bounded_number_of_needs(monkeypatch, flash_attention,
                                                                           kv_unified):
    """The switches change the settings each need is sized at, not the work: two binary searches and the
    asked need a shape, as without them."""
    for calls in needs_sized_per_shape(monkeypatch, flash_attention=flash_attention, kv_unified=kv_unified):
        assert {(settings.flash_attention, settings.kv_unified) for settings in calls} == {
            (flash_attention, kv_unified)}


DEEPSEEK = ("workload=inference&model=deepseek-v3&precision=16&context=8192&requests=1&engine=llamacpp"
            "&quantization=Q4_K_M&engine_version=b9500")


def test_latent_attention_is_sized_without_flash_attention_on_the_wizard_and_by_the_commands(client, small_fleet,
                                                                                             capsys):
    """DeepSeek-V3 (b9500: the V-less cache) with flash attention off: the calculator's buffer (the scores of
    the whole context and the latent of every cell copied transposed) on the estimate, each row started
    with -fa off, and the command prints the same bytes."""
    status, off = get_json(client, "estimate", DEEPSEEK + "&flash_attention=off")
    assert status == 200, off
    from sizing.calculators.llamacpp_builds import LlamaCppBuild

    model = spec("deepseek-v3")
    need = llamacpp_need(model, wizard_settings(16, 8192, 1, 16, "Q4_K_M", LlamaCppBuild(9500),
                                                flash_attention=False))
    assert [item["bytes"] for item in off["items"][:3]] == [item.bytes for item in need.gpu_items]
    assert "copied transposed as V (a view of the K cache): 8,192 cells" in off["items"][2]["formula"]
    status, rows = get_json(client, "recommendations", DEEPSEEK + "&flash_attention=off")
    assert status == 200 and rows["machines"]
    commands = [machine["command"] for machine in rows["machines"] if machine.get("command")]
    assert commands and all(" -fa off" in command for command in commands)
    call_command("estimate", "--model", "deepseek-v3", "--engine", "llamacpp", "--quantization", "Q4_K_M",
                 "--context", "8192", "--engine-version", "b9500", "--flash-attention", "off", "--json")
    assert json.loads(capsys.readouterr().out)["total_bytes"] == off["total_bytes"]
