"""kv_unified in the wizard's query (page, /estimate, /recommendations, `estimate`, `recommend`, watches), through
the query's one declaration: under llama.cpp from b5913 every machine row is sized with one KV pool the
requests' slots share (no stream per slot rounded up to 256 cells, the micro-batch not rounded to the slots) by
the calculator the GPU what-if uses, each row's command adds --kv-unified and the breakdown's words say so;
under Ollama or vLLM, or with a build before b5913, it is refused beside its field as the what-if refuses it,
in both languages. Left empty, today's answers."""
import html
import json

import pytest
from django.core.management import call_command

from nodelodge.recommendations.query import parse_query
from nodelodge.watches.services import explicit_query
from sizing.calculators import estimate
from sizing.calculators.llamacpp import (
    cache_cells,
    engine_command,
    gguf_file_name,
    llamacpp_need,
    wizard_settings,
)
from sizing.calculators.llamacpp_builds import parse_build
from sizing.capacity import Capacity
from tests.sizing.test_llamacpp import spec
from tests.wizard.gguf_query import asked, catalog_spec, get_json, memory_bytes

pytestmark = pytest.mark.django_db

# Three requests of 4,000 tokens on build b10240: a stream per slot pads each to 4,096 cells (12,288), one pool
# pads -c 12,000 to 12,032.
QUERY = ("workload=inference&model=llama-3-1-8b&precision=4&context=4000&requests=3&engine=llamacpp"
         "&engine_version=b10240")
BUILD = parse_build("b10240")


def settings(kv_unified: bool):
    return wizard_settings(4, 4000, 3, 16, build=BUILD, kv_unified=kv_unified)


def test_kv_unified_sizes_one_pool_by_the_calculators_formula(client, small_fleet):
    status, streams = get_json(client, "estimate", QUERY)
    assert status == 200
    status, pool = get_json(client, "estimate", QUERY + "&kv_unified=on")
    assert status == 200
    llama = spec("llama-3-1-8b")
    assert cache_cells(settings(True)) == 12_032 and cache_cells(settings(False)) == 12_288
    assert [item["bytes"] for item in pool["items"][:3]] == [
        item.bytes for item in llamacpp_need(llama, settings(True)).gpu_items]
    assert [item["bytes"] for item in streams["items"][:3]] == [
        item.bytes for item in llamacpp_need(llama, settings(False)).gpu_items]
    assert pool["items"][1]["bytes"] < streams["items"][1]["bytes"]
    assert "one pool the 3 parallel slots share: --kv-unified" in pool["items"][1]["formula"]
    assert any(" --kv-unified: one KV pool the 3 slots share" in line for line in pool["assumptions"])
    assert not any("--kv-unified:" in line for line in streams["assumptions"])


def test_every_row_is_sized_with_one_pool_and_its_command_says_kv_unified(client, small_fleet):
    status, pool = get_json(client, "recommendations", QUERY + "&kv_unified=on")
    assert status == 200 and pool["machines"]
    status, streams = get_json(client, "recommendations", QUERY)
    llama = spec("llama-3-1-8b")
    file = gguf_file_name(catalog_spec("llama-3-1-8b"), "Q4_K_M")
    command = engine_command("llamacpp", llamacpp_need(llama, settings(True)), file)
    assert command.endswith(" --kv-unified")
    held = Capacity(llama, 4, 16, 4000, 3, engine="llamacpp", build=BUILD, kv_unified=True)
    for machine in pool["machines"]:
        assert machine["command"] == command
        memory = memory_bytes(machine)
        on_machine = held.on_machine(machine["gpus_used"], memory)
        assert (machine["max_requests_at_context"], machine["max_context_at_requests"]) == (
            on_machine.max_requests_at_context, on_machine.max_context_at_requests)
    assert all("--kv-unified" not in machine["command"] for machine in streams["machines"])


def test_the_page_sizes_it_keeps_it_in_its_form_and_words_it_in_both_languages(client, small_fleet):
    page = client.get(f"/?{QUERY}&kv_unified=on").content.decode()
    assert '<option value="on" selected>' in page.split('id="id_kv_unified"')[1].split("</select>")[0]
    assert "--kv-unified: one KV pool the 3 slots share" in page and "kv_unified=on" in page
    german = client.get(f"/de/?{QUERY}&kv_unified=on").content.decode()
    assert "--kv-unified: ein KV-Pool für die 3 Slots" in german


@pytest.mark.parametrize(("query", "words", "german"), [
    (QUERY.replace("engine=llamacpp", "engine=ollama").replace("&engine_version=b10240", ""),
     "Ollama and the other engines set no such option", "Ollama und die anderen"),
    (QUERY.replace("engine=llamacpp", "engine=vllm").replace("&engine_version=b10240", ""),
     "is llama-server's --kv-unified", "--kv-unified von llama-server"),
    (QUERY.replace("b10240", "b5000"), "before b5913 have no --kv-unified", "b5913"),
])
def test_where_no_engine_or_build_takes_it_it_is_refused_beside_its_field_as_the_what_if_does(
        client, small_fleet, query, words, german):
    status, body = get_json(client, "recommendations", query + "&kv_unified=on")
    assert status == 422 and set(body["errors"]) == {"kv_unified"}
    assert words in body["errors"]["kv_unified"]
    params = asked(query)
    what_if = (f"model=llama-3-1-8b&engine={params['engine']}&kv_unified=on"
               + (f"&engine_version={params['engine_version']}" if "engine_version" in params else ""))
    assert get_json(client, "capacity", what_if)[1]["errors"] == body["errors"]
    page = client.get(f"/?{query}&kv_unified=on").content.decode()
    assert 'id="err-kv_unified"' in page and html.escape(words) in page
    _, in_german = get_json(client, "recommendations", query + "&kv_unified=on", HTTP_ACCEPT_LANGUAGE="de")
    assert german in in_german["errors"]["kv_unified"]


def test_a_value_other_than_on_or_off_is_refused_in_both_languages(client, small_fleet):
    status, body = get_json(client, "estimate", QUERY + "&kv_unified=maybe")
    assert status == 400 and body["errors"] == {"kv_unified": "kv_unified is on or off."}
    _, german = get_json(client, "estimate", QUERY + "&kv_unified=maybe", HTTP_ACCEPT_LANGUAGE="de")
    assert german["errors"] == {"kv_unified": "kv_unified ist an oder aus (on oder off)."}


def test_empty_or_off_is_todays_answer_and_an_old_build_may_say_off(client, small_fleet):
    assert get_json(client, "recommendations", QUERY + "&kv_unified=off")[1]["memory"] == get_json(
        client, "recommendations", QUERY)[1]["memory"]
    query = parse_query(asked(QUERY + "&kv_unified=off"))
    assert query == parse_query(asked(QUERY)) and "kv_unified" not in query.as_query_string()
    status, old = get_json(client, "estimate", QUERY.replace("b10240", "b5000") + "&kv_unified=off")
    assert status == 200 and "--kv-unified:" not in " ".join(old["assumptions"])


def test_the_openapi_schema_states_it_on_the_wizards_operations(client, small_fleet):
    schema = client.get("/api/v1/openapi.json").json()
    for path in ("/api/v1/estimate", "/api/v1/recommendations"):
        parameter = next(p for p in schema["paths"][path]["get"]["parameters"] if p["name"] == "kv_unified")
        assert parameter["schema"]["enum"] == ["", "on", "off"]
        assert "--kv-unified" in parameter["description"]
    what_if = next(p for p in schema["paths"]["/api/v1/capacity"]["get"]["parameters"] if p["name"] == "kv_unified")
    assert what_if["schema"]["enum"] == ["", "on", "off"]


def test_a_watch_writes_it_out_and_keeps_it(small_fleet):
    query = parse_query(asked(QUERY + "&kv_unified=on"))
    assert query.kv_unified is True and query.as_params()["kv_unified"] == "on"
    assert explicit_query(query)["kv_unified"] == "on"
    assert explicit_query(parse_query(asked(QUERY)))["kv_unified"] == "off"
    ollama = parse_query(asked(QUERY.replace("engine=llamacpp", "engine=ollama").replace("b10240", "0.30.1")))
    assert "kv_unified" not in explicit_query(ollama) and explicit_query(ollama)["flash_attention"] == "on"
    assert parse_query(explicit_query(query)).kv_unified is True


def test_the_commands_take_it_and_refuse_it_with_the_fields_message(small_fleet, capsys):
    options = ("--model", "llama-3-1-8b", "--precision", "4", "--context", "4000", "--requests", "3",
               "--engine", "llamacpp", "--engine-version", "b10240")
    call_command("estimate", *options, "--kv-unified", "on", "--json")
    body = json.loads(capsys.readouterr().out)
    expected = estimate("inference", spec("llama-3-1-8b"), 4, 4000, 3, None, engine="llamacpp",
                        llamacpp_build=BUILD, kv_unified=True)
    assert body["total_bytes"] == expected.total_bytes and body["items"][1]["bytes"] == expected.items[1].bytes
    call_command("recommend", *options, "--kv-unified", "on")
    assert "--kv-unified" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        call_command("estimate", "--model", "llama-3-1-8b", "--engine", "ollama", "--kv-unified", "on")
    assert "kv_unified: kv_unified is llama-server's --kv-unified" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        call_command("estimate", *options[:-1], "b5000", "--kv-unified", "on")
    assert "kv_unified: llama.cpp builds before b5913" in capsys.readouterr().err
