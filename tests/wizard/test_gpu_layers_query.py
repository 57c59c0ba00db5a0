"""gpu_layers in the wizard's query (page, /estimate, /recommendations, `estimate`, `recommend`, watches),
through the query's one declaration: under llama.cpp and Ollama every machine row is sized with -ngl N
(Ollama's num_gpu) by the calculator and placement rule the GPU what-if uses, so a machine too small for
the whole model is listed with part of it in host memory; each row's command carries -ngl N (Ollama:
num_gpu=N) and the breakdown and the row's words say how many layers sit on the GPUs and that the rest run
on the CPU, in both languages. A count past the model's layers is every layer, as the what-if reads it;
under another engine it is refused beside its field as the what-if refuses it. Left empty, today's
answers."""
import json

import pytest
from django.core.management import call_command

from nodelodge.recommendations import fleet_state
from nodelodge.recommendations.query import parse_query
from nodelodge.watches.services import WatchRequest, create_watch, explicit_query
from sizing.calculators import estimate
from sizing.calculators.llamacpp import engine_command, gguf_file_name, llamacpp_need, wizard_settings
from sizing.calculators.llamacpp_builds import build_for, parse_build, parse_ollama_version
from sizing.capacity import Capacity
from tests.factories import make_user
from tests.sizing.test_llamacpp import spec
from tests.wizard.gguf_query import asked, catalog_spec, get_json, memory_bytes, needs_sized_per_shape

pytestmark = pytest.mark.django_db

# Llama 3.1 70B in Q4_K_M (about 40 GiB) at 8,192 tokens: no 24 GB card of the small fleet holds it whole;
# with -ngl 40 (the head and 39 of its 80 layers, about 21 GiB) an RTX 4090 or 3090 does.
QUERY = ("workload=inference&model=llama-3-1-70b&precision=4&context=8192&requests=1&engine=llamacpp"
         "&engine_version=b9500")
OLLAMA = QUERY.replace("engine=llamacpp&engine_version=b9500", "engine=ollama&engine_version=0.31.0")
NGL = 40
LAYERS = 80


def settings(engine="llamacpp", version="b9500", gpu_layers=None):
    """The wizard's settings for QUERY under `engine` at the build or Ollama release `version`."""
    build = parse_build(version) if engine == "llamacpp" else build_for("ollama", parse_ollama_version(version))
    return wizard_settings(4, 8192, 1, 16, build=build, engine=engine, gpu_layers=gpu_layers)


def test_the_breakdown_holds_the_ngl_layers_by_the_calculators_formula(client, small_fleet):
    status, whole = get_json(client, "estimate", QUERY)
    assert status == 200
    status, part = get_json(client, "estimate", f"{QUERY}&gpu_layers={NGL}")
    assert status == 200
    llama = spec("llama-3-1-70b")
    offloaded = llamacpp_need(llama, settings(gpu_layers=NGL))
    every = llamacpp_need(llama, settings())
    assert [item["bytes"] for item in part["items"][:3]] == [item.bytes for item in offloaded.gpu_items]
    assert [item["bytes"] for item in whole["items"][:3]] == [item.bytes for item in every.gpu_items]
    # from b7847 -ngl 40 is the output head and the last 39 layers (ggml-org/llama.cpp#18148)
    assert (offloaded.gpu_layers, offloaded.output_on_gpu) == (NGL - 1, True)
    assert part["total_bytes"] < whole["total_bytes"] / 2 + 2 * 2**30
    assert part["items"][0]["formula"].startswith(f"{NGL - 1} of {LAYERS} layers and the output head")
    assert f"(-ngl {NGL}: the output head first" in part["items"][0]["formula"]
    words = part["assumptions"][0]
    assert f"-ngl {NGL}: {NGL - 1} of {LAYERS} layers and the output head on the GPUs; the other {LAYERS - NGL + 1} " \
           "layers and their KV cache stay in host memory" in words
    assert words.endswith("run on the CPU, slower.")
    assert "every layer on the GPUs" in whole["assumptions"][0]
    german = client.get(f"/api/v1/estimate?{QUERY}&gpu_layers={NGL}", HTTP_ACCEPT_LANGUAGE="de").json()
    assert f"-ngl {NGL}: {NGL - 1} von {LAYERS} Schichten und der Ausgabekopf auf den GPUs" in german["assumptions"][0]
    assert "laufen auf der CPU, langsamer." in german["assumptions"][0]


def test_a_machine_too_small_for_the_whole_model_is_listed_with_its_ngl_command(client, small_fleet):
    status, whole = get_json(client, "recommendations", QUERY)
    assert status == 200
    status, part = get_json(client, "recommendations", f"{QUERY}&gpu_layers={NGL}")
    assert status == 200
    card = small_fleet["cheap_4090"].pk
    assert card not in {machine["id"] for machine in whole["machines"]}
    rows = {machine["id"]: machine for machine in part["machines"]}
    assert card in rows and small_fleet["community_3090"].pk in rows
    llama = spec("llama-3-1-70b")
    file = gguf_file_name(catalog_spec("llama-3-1-70b"), "Q4_K_M")
    offloaded = Capacity(llama, 4, 16, 8192, 1, engine="llamacpp", build=parse_build("b9500"), gpu_layers=NGL)
    for machine in part["machines"]:
        held = offloaded.on_machine(machine["gpus_used"], memory_bytes(machine))
        assert (machine["max_requests_at_context"], machine["max_context_at_requests"]) == (
            held.max_requests_at_context, held.max_context_at_requests)
        assert machine["command"] == engine_command(
            "llamacpp", llamacpp_need(llama, settings(gpu_layers=NGL)), file)
        assert f" -ngl {NGL} " in machine["command"]
        assert any(f"-ngl {NGL}: {NGL - 1} of {LAYERS} layers and the output head on the GPUs" in line
                   and line.endswith("run on the CPU, slower") for line in machine["why_it_fits"])
    # the same machine is sized with the layers asked: the rest and their cache are not on its GPU
    assert rows[card]["max_requests_at_context"] >= 1
    _, german = get_json(client, "recommendations", f"{QUERY}&gpu_layers={NGL}", HTTP_ACCEPT_LANGUAGE="de")
    row = next(machine for machine in german["machines"] if machine["id"] == card)
    assert any("von 80 Schichten und der Ausgabekopf auf den GPUs" in line and "langsamer" in line
               for line in row["why_it_fits"])


def test_ollama_rows_carry_num_gpu_as_the_what_if_words_it(client, small_fleet):
    status, body = get_json(client, "recommendations", f"{OLLAMA}&gpu_layers={NGL}")
    assert status == 200 and body["machines"]
    assert small_fleet["cheap_4090"].pk in {machine["id"] for machine in body["machines"]}
    need = llamacpp_need(spec("llama-3-1-70b"), settings("ollama", "0.31.0", NGL))
    assert need.ollama_settings()["num_gpu"] == str(NGL)
    for machine in body["machines"]:
        assert machine["command"].endswith(f"ollama serve # num_gpu={NGL}")
        assert machine["command"] == engine_command("ollama", need, "unused.gguf")
        assert any(f"; num_gpu {NGL}: {NGL - 1} of {LAYERS} layers" in line for line in machine["why_it_fits"])
    assert body["memory"]["items"][0]["bytes"] == need.gpu_items[0].bytes
    what_if = get_json(client, "capacity", "model=llama-3-1-70b&engine=ollama&engine_version=0.31.0"
                       f"&max_model_len=8192&gpu=RTX 4090&gpu_layers={NGL}")[1]
    assert what_if["ollama"]["num_gpu"] == str(NGL)


def test_a_count_past_the_models_layers_is_every_layer_as_the_what_if_reads_it(client, small_fleet):
    status, whole = get_json(client, "estimate", QUERY)
    status, past = get_json(client, "estimate", f"{QUERY}&gpu_layers=200")
    assert status == 200
    assert past["items"] == whole["items"] and past["assumptions"] == whole["assumptions"]
    what_if = get_json(client, "capacity", "model=llama-3-1-70b&engine=llamacpp&engine_version=b9500"
                       "&quantization=Q4_K_M&max_model_len=8192&gpu=H100 SXM 80GB&gpu_layers=200")[1]
    assert what_if["gpu_layers"] == LAYERS and what_if["weights_bytes"] == whole["items"][0]["bytes"]
    _, rows = get_json(client, "recommendations", f"{QUERY}&gpu_layers=200")
    assert rows["machines"] and all(" -ngl 200 " in machine["command"] for machine in rows["machines"])


def test_the_page_keeps_it_in_its_form_and_words_it_in_both_languages(client, small_fleet):
    page = client.get(f"/?{QUERY}&gpu_layers={NGL}").content.decode()
    assert f'id="id_gpu_layers" name="gpu_layers" value="{NGL}"' in page
    assert f"gpu_layers={NGL}" in page  # the shareable address
    assert f"-ngl {NGL}: {NGL - 1} of {LAYERS} layers and the output head on the GPUs" in page
    german = client.get(f"/de/?{QUERY}&gpu_layers={NGL}").content.decode()
    assert "Schichten auf den GPUs (-ngl; leer: alle)" in german
    assert f"-ngl {NGL}: {NGL - 1} von {LAYERS} Schichten und der Ausgabekopf auf den GPUs" in german


@pytest.mark.parametrize("engine", ["transformers", "vllm", "sglang"])
def test_another_engine_refuses_it_beside_its_field_as_the_what_if_does(client, small_fleet, engine):
    query = QUERY.replace("engine=llamacpp&engine_version=b9500", f"engine={engine}") + "&gpu_layers=20"
    for path in ("estimate", "recommendations"):
        status, body = get_json(client, path, query)
        assert status == 422 and set(body["errors"]) == {"gpu_layers"}
        assert body["errors"]["gpu_layers"] == ("gpu_layers is llama.cpp's -ngl and Ollama's num_gpu "
                                                "(engine=llamacpp or engine=ollama); the other engines keep "
                                                "every layer on the GPUs.")
    if engine != "transformers":  # the what-if has no transformers engine
        what_if = get_json(client, "capacity", f"model=llama-3-1-8b&engine={engine}&gpu_layers=20")
        assert what_if[0] == 422 and what_if[1]["errors"] == body["errors"]
    page = client.get(f"/?{query}").content.decode()
    assert 'id="err-gpu_layers"' in page and "gpu_layers is llama.cpp&#x27;s -ngl" in page
    _, german = get_json(client, "recommendations", query, HTTP_ACCEPT_LANGUAGE="de")
    assert german["errors"]["gpu_layers"].startswith("gpu_layers ist -ngl von llama.cpp und num_gpu von Ollama")


@pytest.mark.parametrize(("value", "english", "german"), [
    ("-1", "The GPU layers are 0 or more.", "Die GPU-Schichten sind 0 oder mehr."),
    ("1000", "At most 999 GPU layers.", "Höchstens 999 GPU-Schichten."),
    ("many", "The GPU layers are a whole number, such as 20.", "Die GPU-Schichten sind eine ganze Zahl, etwa 20."),
])
def test_a_bad_count_is_refused_beside_its_field_in_both_languages(client, small_fleet, value, english, german):
    status, body = get_json(client, "estimate", f"{QUERY}&gpu_layers={value}")
    assert status == 400 and body["errors"] == {"gpu_layers": english}
    _, in_german = get_json(client, "estimate", f"{QUERY}&gpu_layers={value}", HTTP_ACCEPT_LANGUAGE="de")
    assert in_german["errors"] == {"gpu_layers": german}
    what_if = get_json(client, "capacity", f"model=llama-3-1-8b&engine=llamacpp&gpu_layers={value}")[1]
    assert what_if["errors"]["gpu_layers"] == english
    page = client.get(f"/?{QUERY}&gpu_layers={value}").content.decode()
    assert 'id="err-gpu_layers"' in page and 'aria-invalid="true"' in page.split('id="id_gpu_layers"')[1][:300]


def test_empty_is_todays_answer_and_the_address_leaves_it_out(client, small_fleet, settings, monkeypatch):
    settings.ANSWER_CACHE_SECONDS = 60
    monkeypatch.setattr(fleet_state, "clock", lambda: 1_800_000_030.0)  # one step of answers
    today = get_json(client, "recommendations", QUERY)[1]
    assert get_json(client, "recommendations", QUERY + "&gpu_layers=")[1]["memory"] == today["memory"]
    assert all(" -ngl 999 " in machine["command"] for machine in today["machines"])
    query = parse_query(asked(QUERY + "&gpu_layers="))
    assert query == parse_query(asked(QUERY)) and query.gpu_layers is None
    assert "gpu_layers" not in query.as_query_string()
    assert f"gpu_layers={NGL}" in parse_query(asked(f"{QUERY}&gpu_layers={NGL}")).as_query_string()
    # the answer's cache and ETag tell the counts apart
    first = client.get(f"/api/v1/estimate?{QUERY}")
    other = client.get(f"/api/v1/estimate?{QUERY}&gpu_layers={NGL}")
    assert first["ETag"] != other["ETag"]
    assert client.get(f"/api/v1/estimate?{QUERY}&gpu_layers={NGL}")["ETag"] == other["ETag"]
    assert client.get(f"/api/v1/estimate?{QUERY}&gpu_layers=41")["ETag"] != other["ETag"]


def test_a_workload_that_serves_no_tokens_ignores_it(client, small_fleet):
    query = parse_query({"workload": "notebook", "memory_gib": "24", "gpu_layers": "20"})
    assert query.gpu_layers is None and "gpu_layers" not in query.as_query_string()


def test_the_openapi_schema_states_it_on_the_wizards_operations(client, small_fleet):
    schema = client.get("/api/v1/openapi.json").json()
    for path in ("/api/v1/estimate", "/api/v1/recommendations"):
        parameter = next(p for p in schema["paths"][path]["get"]["parameters"] if p["name"] == "gpu_layers")
        assert {"type": "integer", "minimum": 0, "maximum": 999} in parameter["schema"]["anyOf"]
        assert "num_gpu" in parameter["description"] and "-ngl" in parameter["description"]


def test_a_watch_keeps_it(small_fleet):
    query = parse_query(asked(f"{QUERY}&gpu_layers={NGL}"))
    assert explicit_query(query)["gpu_layers"] == str(NGL)
    assert "gpu_layers" not in explicit_query(parse_query(asked(QUERY)))  # every layer: as watches saved it
    assert parse_query(explicit_query(query)).gpu_layers == NGL
    user = make_user()
    offloaded = create_watch(user, WatchRequest(query=asked(f"{QUERY}&gpu_layers={NGL}")))
    whole = create_watch(user, WatchRequest(query=asked(QUERY)))
    assert offloaded.query["gpu_layers"] == str(NGL) and f"gpu_layers={NGL}" in offloaded.query_key
    assert "gpu_layers" not in whole.query and offloaded.pk != whole.pk
    # the same query asked again is the same watch's query
    again = create_watch(user, WatchRequest(query=asked(f"{QUERY}&gpu_layers={NGL}")))
    assert again.query_key == offloaded.query_key != whole.query_key


def test_the_commands_take_it_and_refuse_it_with_the_fields_message(small_fleet, capsys):
    call_command("estimate", "--model", "llama-3-1-70b", "--precision", "4", "--context", "8192", "--engine",
                 "llamacpp", "--engine-version", "b9500", "--gpu-layers", str(NGL), "--json")
    body = json.loads(capsys.readouterr().out)
    expected = estimate("inference", catalog_spec("llama-3-1-70b"), 4, 8192, 1, None, engine="llamacpp",
                        llamacpp_build=parse_build("b9500"), gpu_layers=NGL)
    assert body["total_bytes"] == expected.total_bytes
    call_command("recommend", "--model", "llama-3-1-70b", "--precision", "4", "--context", "8192", "--engine",
                 "llamacpp", "--engine-version", "b9500", "--gpu-layers", str(NGL))
    assert f" -ngl {NGL} " in capsys.readouterr().out
    with pytest.raises(SystemExit):
        call_command("estimate", "--model", "llama-3-1-8b", "--engine", "vllm", "--gpu-layers", "20")
    assert "gpu_layers: gpu_layers is llama.cpp's -ngl" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        call_command("estimate", "--model", "llama-3-1-8b", "--engine", "llamacpp", "--gpu-layers", "-1")
    assert "gpu_layers: The GPU layers are 0 or more." in capsys.readouterr().err
    figures = ["--parameters", "8000000000", "--layers", "32", "--attention-heads", "32", "--kv-heads", "8",
               "--head-dim", "128", "--hidden-size", "4096", "--vocab-size", "128256"]
    with pytest.raises(SystemExit):
        call_command("estimate", *figures, "--engine", "vllm", "--gpu-layers", "20")
    assert "gpu_layers:" in capsys.readouterr().err


@pytest.mark.parametrize("gpu_layers", [0, 1, 40, 80, 81])
def test_a_rows_capacity_with_gpu_layers_sizes_a_bounded_number_of_needs(monkeypatch, gpu_layers):
    """-ngl changes the settings each need is sized at, not the work: two binary searches and the asked
    need a shape, as with every layer on the GPUs."""
    for calls in needs_sized_per_shape(monkeypatch, gpu_layers=gpu_layers):
        assert {settings.gpu_layers for settings in calls} == {gpu_layers}


def test_the_constraints_applied_say_where_the_layers_sit_and_how_the_engine_ran(client, small_fleet):
    """The answer's "Engine" constraint says what it was sized as: every layer on the GPUs or -ngl N's with the
    rest on the CPU, flash attention on or off, --kv-unified's one pool where asked (both languages)."""
    def engine(query, **headers):
        status, body = get_json(client, "recommendations", query, **headers)
        assert status == 200, body
        return next(c["value"] for c in body["constraints"] if c["label"] == "Engine")

    assert engine(QUERY) == "llama.cpp (the GGUF file in Q4_K_M, every layer on the GPUs, flash attention on)"
    asked = f"{QUERY}&gpu_layers={NGL}&flash_attention=off&kv_unified=on"
    assert engine(asked) == (f"llama.cpp (the GGUF file in Q4_K_M, -ngl {NGL}, the other layers on the CPU, "
                             "flash attention off); one KV cache pool the slots share (--kv-unified)")
    assert f"num_gpu {NGL}, the other layers on the CPU" in engine(f"{OLLAMA}&gpu_layers={NGL}")
    status, german = get_json(client, "recommendations", asked, HTTP_ACCEPT_LANGUAGE="de")
    assert status == 200
    assert any(c["value"] == (f"llama.cpp (die GGUF-Datei in Q4_K_M, -ngl {NGL}, die übrigen Schichten auf der "
                              "CPU, Flash Attention aus); ein KV-Cache-Pool, den sich die Slots teilen "
                              "(--kv-unified)") for c in german["constraints"])
