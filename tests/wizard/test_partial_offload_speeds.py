"""Measured speeds where -ngl N (Ollama's num_gpu N) keeps layers on the CPU: a machine's speeds are measured
with the whole model on its GPUs, so they price no answer that runs layers on the CPU. Such rows keep their
measured speeds, said to be measured with every layer on the GPUs, and show no price per million tokens; the
price-per-million sort lists them as machines without a measured price; a throughput plan is refused beside
target_tokens (page, API, CLI) in both languages. Every-layer answers, a count past the layers included, are
unchanged."""
import pytest
from django.core.management import call_command

from sizing.describing import measured_speeds_note, plan_refusal, speeds_price_the_answer
from sizing.speeds import price_per_million_tokens
from tests.factories import make_measured_speed
from tests.wizard.gguf_query import get_json
from tests.wizard.test_gpu_layers_query import NGL, OLLAMA, QUERY

pytestmark = pytest.mark.django_db

NOTE = ("Measured with every layer on the GPUs: this answer keeps layers on the CPU, which run slower, so these "
        "speeds overstate it and price no million tokens.")
NOTE_DE = ("Gemessen mit allen Schichten auf den GPUs: diese Antwort lässt Schichten auf der CPU, die langsamer "
           "laufen; diese Geschwindigkeiten überzeichnen sie und ergeben keinen Preis pro Million Token.")
REFUSAL = ("A throughput plan adds up speeds measured with every layer on the GPUs; with -ngl 40 some layers run on "
           "the CPU, slower by an amount no measurement gives. Leave gpu_layers empty (every layer) to plan, or "
           "leave the throughput empty.")
REFUSAL_DE_START = "Ein Durchsatzplan addiert Geschwindigkeiten, gemessen mit allen Schichten auf den GPUs; mit -ngl 40"
CLI = ["--model", "llama-3-1-70b", "--precision", "4", "--context", "8192", "--requests", "1",
       "--engine", "llamacpp", "--engine-version", "b9500"]


@pytest.fixture
def measured(small_fleet):
    """Llama 3.1 70B at 4 bits measured on the RTX 4090 (which holds it only with -ngl) and the A100 80GB
    (which holds it whole)."""
    make_measured_speed(small_fleet["cheap_4090"], "18.5", model="llama-3-1-70b", precision=4)
    make_measured_speed(small_fleet["a100"], "950", model="llama-3-1-70b", precision=4)
    return small_fleet


def rows_by_id(body: dict) -> dict[int, dict]:
    return {machine["id"]: machine for machine in body["machines"]}


@pytest.mark.parametrize("query", [QUERY, OLLAMA])
def test_a_row_with_layers_on_the_cpu_keeps_its_speeds_said_so_and_shows_no_price(client, measured, query):
    status, body = get_json(client, "recommendations", f"{query}&gpu_layers={NGL}")
    assert status == 200
    rows = rows_by_id(body)
    for machine in ("cheap_4090", "a100"):
        row = rows[measured[machine].pk]
        assert row["measured_speeds"] and row["measured_speeds"][0]["model"] == "llama-3-1-70b"
        assert row["measured_speeds_note"] == NOTE
        assert row["price_per_million_tokens"] is None
        assert row["price_per_million_tokens_text"] == "none: layers on the CPU"
    assert all(machine["price_per_million_tokens"] is None for machine in body["machines"])
    unmeasured = rows[measured["community_3090"].pk]  # no speed measured on it: said as before
    assert unmeasured["price_per_million_tokens_text"] == "no measured speed"
    assert unmeasured["measured_speeds_note"] is None
    _, german = get_json(client, "recommendations", f"{query}&gpu_layers={NGL}", HTTP_ACCEPT_LANGUAGE="de")
    row = rows_by_id(german)[measured["a100"].pk]
    assert row["measured_speeds_note"] == NOTE_DE
    assert row["price_per_million_tokens_text"] == "keiner: Schichten auf der CPU"


@pytest.mark.parametrize("every_layer", ["", "&gpu_layers=200"])
def test_every_layer_answers_are_priced_as_before(client, measured, every_layer):
    status, body = get_json(client, "recommendations", QUERY + every_layer)
    assert status == 200
    row = rows_by_id(body)[measured["a100"].pk]
    assert row["measured_speeds_note"] is None
    assert row["price_per_million_tokens"] == str(price_per_million_tokens(measured["a100"].price_per_gpu_hour,
                                                                           950, 1))
    assert measured["cheap_4090"].pk not in rows_by_id(body)  # the whole model does not fit on it


def test_the_price_per_million_sort_treats_them_as_without_a_measured_price(client, measured):
    _, by_hour = get_json(client, "recommendations", f"{QUERY}&gpu_layers={NGL}")
    _, by_million = get_json(client, "recommendations", f"{QUERY}&gpu_layers={NGL}&sort=price_per_million_tokens")
    # no row has a price: the sort falls back to the cheapest per hour, as for machines without a speed
    assert [m["id"] for m in by_million["machines"]] == [m["id"] for m in by_hour["machines"]]
    assert by_million["machines"][0]["id"] != measured["a100"].pk
    _, whole = get_json(client, "recommendations", f"{QUERY}&sort=price_per_million_tokens")
    assert whole["machines"][0]["id"] == measured["a100"].pk  # with every layer its measured price leads


def test_the_page_says_so_in_the_price_column_and_beside_the_speeds(client, measured):
    page = client.get(f"/?{QUERY}&gpu_layers={NGL}").content.decode()
    assert 'data-testid="per-million"><span class="muted">none: layers on the CPU</span>' in page
    german = client.get(f"/de/?{QUERY}&gpu_layers={NGL}").content.decode()
    assert "keiner: Schichten auf der CPU" in german
    whole = client.get(f"/?{QUERY}").content.decode()
    assert "none: layers on the CPU" not in whole and "no measured speed" in whole
    # the row's details, on the machine's own page: its speeds and what they were measured with
    a100 = measured["a100"].pk
    details = client.get(f"/machine/?{QUERY}&gpu_layers={NGL}&machine={a100}&gpus=1").content.decode()
    assert "950.0 tokens/s on 1 GPU" in details
    assert "Measured with every layer on the GPUs: this answer keeps layers on the CPU" in details
    german = client.get(f"/de/machine/?{QUERY}&gpu_layers={NGL}&machine={a100}&gpus=1").content.decode()
    assert "Gemessen mit allen Schichten auf den GPUs" in german
    whole = client.get(f"/machine/?{QUERY}&machine={a100}&gpus=1").content.decode()
    assert "950.0 tokens/s on 1 GPU" in whole and "Measured with every layer" not in whole


def test_a_throughput_plan_with_layers_on_the_cpu_is_refused_beside_its_field(client, measured, capsys):
    with pytest.raises(SystemExit) as exited:
        call_command("recommend", *CLI, "--gpu-layers", str(NGL), "--target-tokens", "100")
    assert exited.value.code == 2
    assert f"error: target_tokens: {REFUSAL}" in capsys.readouterr().err
    query = f"{QUERY}&gpu_layers={NGL}&target_tokens=100"
    status, body = get_json(client, "recommendations", query)
    assert status == 422 and body["errors"] == {"target_tokens": REFUSAL}
    status, german = get_json(client, "recommendations", query, HTTP_ACCEPT_LANGUAGE="de")
    assert status == 422 and german["errors"]["target_tokens"].startswith(REFUSAL_DE_START)
    _, ollama = get_json(client, "recommendations", f"{OLLAMA}&gpu_layers={NGL}&target_tokens=100")
    assert "with num_gpu 40 some layers run on the CPU" in ollama["errors"]["target_tokens"]
    page = client.get(f"/?{query}").content.decode()
    assert 'id="err-target_tokens"' in page and "A throughput plan adds up speeds measured with every" in page
    assert "Ein Durchsatzplan addiert" in client.get(f"/de/?{query}").content.decode()


@pytest.mark.parametrize("every_layer", ["", "&gpu_layers=200"])
def test_a_throughput_plan_with_every_layer_is_planned_as_before(client, measured, every_layer):
    status, body = get_json(client, "recommendations", f"{QUERY}{every_layer}&target_tokens=100&redundancy=0")
    assert status == 200 and body["throughput_plan"]["plans"]
    assert body["throughput_plan"]["plans"][0]["machines"][0]["id"] == measured["a100"].pk


def test_the_rule_is_one_and_reads_the_need_not_the_field(measured):
    from sizing.calculators import estimate
    from sizing.calculators.llamacpp_builds import parse_build
    from tests.wizard.gguf_query import catalog_spec

    def need(gpu_layers, engine="llamacpp"):
        return estimate("inference", catalog_spec("llama-3-1-70b"), 4, 8192, 1, None, engine=engine,
                        llamacpp_build=parse_build("b9500"), gpu_layers=gpu_layers)

    for every_layer in (None, 81, 200):  # from b7847 -ngl 81 is the output head and all 80 layers
        answer = need(every_layer)
        assert speeds_price_the_answer(answer) and plan_refusal(answer) is None
        assert measured_speeds_note(answer) is None
    for partial in (0, NGL, 80):  # -ngl 80 leaves one layer on the CPU
        answer = need(partial)
        assert not speeds_price_the_answer(answer) and measured_speeds_note(answer) == NOTE
        assert plan_refusal(answer) is not None


def test_the_commands_table_says_why_a_row_has_no_price(measured, capsys):
    call_command("recommend", *CLI, "--gpu-layers", str(NGL))
    offloaded = capsys.readouterr().out
    assert "layers on CPU" in offloaded and "$" in offloaded
    call_command("recommend", *CLI)
    assert "layers on CPU" not in capsys.readouterr().out
