"""Under llama.cpp and Ollama an empty answer whose model no machine holds whole names the most layers on
the GPUs (-ngl, Ollama's num_gpu) at which some machine fits and meets every preference: the calculator's
own search of what each shape of machine holds (each catalog GPU memory size at 1, 2, 4 or 8 GPUs), each
figure counted with the other openings in their one statement. Its link sets gpu_layers and finds what it
says. Under the other engines nothing changes."""
import re
from decimal import Decimal

import pytest

from catalog import rows as catalog_rows
from nodelodge.recommendations import relax
from sizing.calculators.llamacpp import LlamaCppNeed, llamacpp_need
from sizing.units import MIB
from tests.sizing.test_llamacpp import spec
from tests.wizard.gguf_query import get_json, memory_bytes
from tests.wizard.test_gpu_layers_query import LAYERS, OLLAMA, QUERY, settings

pytestmark = pytest.mark.django_db

HINT = re.compile(r"with (-ngl|num_gpu) (\d+) \((\d+) of (\d+) layers and the output head on the GPUs, the rest "
                  r"on the CPU, slower\) the model fits on (\d+) machines? from \$([\d.]+)/h")


@pytest.fixture
def cards(make_machine):
    """Llama 3.1 70B in Q4_K_M at 8,192 tokens (about 42 GiB) fits none of these whole; part of it fits the
    24 GB cards."""
    return {
        "rtx_4090": make_machine("RTX 4090", price_per_gpu_hour=Decimal("0.40")),
        "rtx_3090": make_machine("RTX 3090", tier="community", price_per_gpu_hour=Decimal("0.30")),
        "t4": make_machine("T4", price_per_gpu_hour=Decimal("0.20")),
    }


def layer_hints(body: dict) -> list[dict]:
    assert body["machines"] == []
    return [hint for hint in body["relax"] if "gpu_layers" in hint["changes"]]


@pytest.mark.parametrize(("query", "engine", "setting", "version"), [
    (QUERY, "llamacpp", "-ngl", "b9500"),
    (OLLAMA, "ollama", "num_gpu", "0.31.0"),
], ids=["llamacpp", "ollama"])
def test_the_most_layers_a_machine_holds_opens_what_the_hint_says(client, cards, query, engine, setting,
                                                                   version):
    status, body = get_json(client, "recommendations", query)
    assert status == 200
    [hint] = layer_hints(body)
    match = HINT.fullmatch(hint["text"])
    assert match, hint["text"]
    assert match.group(1) == setting
    figure = int(match.group(2))
    assert hint["changes"] == {"gpu_layers": str(figure)}
    assert f"gpu_layers={figure}" in hint["query"]
    # from b7847 (and under Ollama 0.31.0's build) -ngl N is the output head and the last N − 1 layers
    assert (int(match.group(3)), int(match.group(4))) == (figure - 1, LAYERS)
    assert hint["text"] in body["empty_reason"]
    # following the link finds its machines and its cheapest price
    status, opened = get_json(client, "recommendations", hint["query"])
    assert status == 200
    assert opened["machines_total"] == hint["machines"] == int(match.group(5)) > 0
    assert opened["machines"][0]["price_per_hour"] == hint["cheapest_price_per_hour"] == match.group(6)
    # the figure is what the calculator says the machines it opens hold, and the largest that opens any
    need = llamacpp_need(spec("llama-3-1-70b"), settings(engine, version))
    held = {need.layers_that_fit(row["gpus_used"], memory_bytes(row)) for row in opened["machines"]}
    assert max(held) == figure < LAYERS
    assert {row["id"] for row in opened["machines"]} == {cards["rtx_4090"].pk, cards["rtx_3090"].pk}
    assert get_json(client, "recommendations", f"{query}&gpu_layers={figure + 1}")[1]["machines_total"] == 0


def test_the_hint_in_german(client, cards):
    _, english = get_json(client, "recommendations", QUERY)
    [hint] = layer_hints(english)
    figure = int(hint["changes"]["gpu_layers"])
    _, german = get_json(client, "recommendations", QUERY, HTTP_ACCEPT_LANGUAGE="de")
    [worded] = layer_hints(german)
    assert worded["changes"] == hint["changes"] and worded["machines"] == hint["machines"] == 2
    assert worded["text"] == (f"mit -ngl {figure} ({figure - 1} von {LAYERS} Schichten und der Ausgabekopf auf den "
                              "GPUs, der Rest auf der CPU, langsamer) passt das Modell auf 2 Maschinen ab 0,30 $/h")
    page = client.get(f"/de/?{QUERY}").content.decode()
    assert f"Mit -ngl {figure} ({figure - 1} von {LAYERS} Schichten" in page
    assert f"gpu_layers={figure}" in page


def test_an_asked_count_that_fits_nowhere_gets_the_largest_below_it(client, cards):
    _, every = get_json(client, "recommendations", QUERY)
    [hint] = layer_hints(every)
    figure = int(hint["changes"]["gpu_layers"])
    _, asked = get_json(client, "recommendations", f"{QUERY}&gpu_layers={figure + 10}")
    [lower] = layer_hints(asked)
    assert lower["changes"] == hint["changes"] and lower["machines"] == hint["machines"]
    # a count past the layers is every layer: the same hint
    _, past = get_json(client, "recommendations", f"{QUERY}&gpu_layers=200")
    assert layer_hints(past) == [hint]
    # one that fits has machines and no hint
    _, fits = get_json(client, "recommendations", f"{QUERY}&gpu_layers={figure}")
    assert fits["machines_total"] == 2 and fits["relax"] == []


def test_the_sizing_is_bounded_by_the_catalogs_shapes(client, cards, monkeypatch):
    """The calculator's search runs once per shape (each catalog memory size up to the largest GPU among the
    machines considered, and that GPU's own, × 1, 2, 4, 8 GPUs), the searches share each -ngl's need, and
    each distinct figure is sized once: at most as many needs as shapes, whatever the fleet."""
    from django.db.models import Max

    from catalog.models import Machine
    from sizing.calculators import llamacpp as llamacpp_module

    searched, sized, needs, searching = [], [], [], []
    layers_that_fit, need_at, sized_need = LlamaCppNeed.layers_that_fit, relax._need_at, llamacpp_module.llamacpp_need

    def counted_search(self, gpus, memory_bytes, shared=None):
        searched.append((gpus, memory_bytes))
        searching.append(True)
        try:
            return layers_that_fit(self, gpus, memory_bytes, shared)
        finally:
            searching.pop()

    def counted_layers(model, settings):
        if searching:  # a need the searches size, not an estimate's
            needs.append(settings.gpu_layers)
        return sized_need(model, settings)

    def counted_need(query, field_name, value, breakdown, model_row):
        sized.append((field_name, value))
        return need_at(query, field_name, value, breakdown, model_row)

    monkeypatch.setattr(LlamaCppNeed, "layers_that_fit", counted_search)
    monkeypatch.setattr(relax, "_need_at", counted_need)
    monkeypatch.setattr(llamacpp_module, "llamacpp_need", counted_layers)
    _, body = get_json(client, "recommendations", QUERY)
    assert layer_hints(body)
    largest = Machine.objects.aggregate(most=Max("memory_per_gpu_mib"))["most"]
    memory = {size for size in catalog_rows.gpu_memory_sizes() if size <= largest} | {largest}
    assert sorted(searched) == sorted((gpus, size * MIB) for size in memory for gpus in relax.SHAPE_GPUS)
    searched_layers = [layers for layers in needs if layers is not None]
    assert len(searched_layers) == len(set(searched_layers)) <= LAYERS + 1  # each -ngl sized once
    figures = [value for field_name, value in sized if field_name == "gpu_layers"]
    assert 1 <= len(figures) == len(set(figures)) <= len(searched)
    assert figures == sorted(figures, reverse=True) and max(figures) < LAYERS + 1


# Llama 3.1 8B at 16-bit with 16 requests of 131,072 tokens fits no card of `cards` under any engine; a smaller
# context does under each, and under llama.cpp (the build not given: the placement needing more, here the
# last layers without the head) a few layers on the GPUs do too.
EIGHT_B = "workload=inference&model=llama-3-1-8b&precision=16&context=131072&requests=16&engine="


@pytest.mark.parametrize("engine", ["vllm", "sglang", "transformers", "llamacpp"])
def test_the_other_engines_keep_their_hints(client, cards, monkeypatch, engine):
    searched = []
    layers_that_fit = LlamaCppNeed.layers_that_fit

    def counted_search(self, gpus, memory_bytes, shared=None):
        searched.append(gpus)
        return layers_that_fit(self, gpus, memory_bytes, shared)

    monkeypatch.setattr(LlamaCppNeed, "layers_that_fit", counted_search)
    status, body = get_json(client, "recommendations", EIGHT_B + engine)
    assert status == 200
    assert [set(hint["changes"]) for hint in body["relax"] if "context" in hint["changes"]] == [{"context"}]
    layered = layer_hints(body)
    if engine != "llamacpp":
        assert layered == [] and searched == []
        assert "layers on the GPUs" not in body["empty_reason"]
        return
    [hint] = layered
    figure = int(hint["changes"]["gpu_layers"])
    assert hint["text"] == (f"with -ngl {figure} ({figure} of 32 layers on the GPUs, the rest and the output head "
                            f"on the CPU, slower) the model fits on 2 machines from $0.30/h")
    _, opened = get_json(client, "recommendations", hint["query"])
    assert opened["machines_total"] == 2 and opened["machines"][0]["price_per_hour"] == "0.30"
    assert get_json(client, "recommendations", f"{EIGHT_B}{engine}&gpu_layers={figure + 1}")[1]["machines_total"] == 0


def test_the_api_schema_says_a_hint_may_set_the_gpu_layers(client, db):
    schema = client.get("/api/v1/openapi.json").json()
    assert "gpu_layers" in schema["components"]["schemas"]["RelaxHintOut"]["description"]


@pytest.mark.postgresql(reason="the hints read the kept fleet counts; the embedded run scans its small fleet instead")
@pytest.mark.parametrize("machines", [1, 40])
def test_the_figures_are_counted_in_the_openings_statement(client, make_machine, django_assert_max_num_queries,
                                                           machines):
    """Every figure is one more opening of the one counting statement, not a statement of its own: the
    answer with the hint stays within the statements of an empty answer with every hint (test_relax's
    6), whatever the fleet; the catalog's memory sizes are read once."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for number in range(machines):
        make_machine("RTX 4090", price_per_gpu_hour=Decimal("0.40") + Decimal(number) / 100, country="DE")
    query = f"{QUERY}&countries=DE"
    with django_assert_max_num_queries(6), CaptureQueriesContext(connection) as statements:
        _, body = get_json(client, "recommendations", query)
    [hint] = layer_hints(body)
    assert hint["machines"] == machines and hint["cheapest_price_per_hour"] == "0.40"
    by_country = [s["sql"] for s in statements.captured_queries if "GROUP BY m.country, m.tier, m.market" in s["sql"]]
    assert len(by_country) == 1  # the openings, every figure among them
    assert by_country[0].count(" AS fit_") >= 2  # more than one figure weighed in the one statement
    assert sum("catalog_gputype" in s["sql"] for s in statements.captured_queries) == 1
