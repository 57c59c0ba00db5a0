"""Random and hostile input to the wizard page, its HTMX partial and the JSON API: never a 500,
always either a result or a message that names the field at fault."""
from __future__ import annotations

import html
import re
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.helpers import LLAMA_8B

from .helpers import QUERY_FIELDS

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

VALID_VALUES = {
    "workload": ["inference", "finetune", "image", "notebook"],
    "model": ["llama-3-1-8b", "llama-3-1-70b", "stable-diffusion-xl", "whisper-large-v3", "mistral-7b"],
    "precision": ["16", "8", "4"],
    "context": ["1", "4096", "131072"],
    "requests": ["1", "4", "64"],
    "memory_gib": ["0.5", "24", "80"],
    "budget": ["1", "100", "5000"],
    "max_price": ["0.5", "2", "20"],
    "tier": ["both", "secure", "community"],
    "countries": ["EU", "DE,FR", "US", "CH,EU"],
    "limit": ["1", "5", "1000"],
    "kv_cache": ["16", "8"],
    "sort": ["price", "price_per_gpu", "memory", "price_per_million_tokens"],
    "gpu": ["H100 SXM 80GB", "RTX 4090"],
    "min_memory_gib": ["24", "80"],
    "confidence": ["", "medium", "high"],
    "group": ["", "gpu"],
    "page": ["1", "2"],
    "target_tokens": ["1000", "20000", "180000"],
    "efficiency": ["75", "50", "100"],
    "redundancy": ["0", "1", "3"],
    "engine": ["transformers", "vllm", "sglang", "llamacpp", "ollama"],
    "quantization": ["", "Q4_K_M", "Q8_0", "IQ4_XS", "F16"],
    "engine_version": ["", "0.19", "0.9.2", "0.21", "0.26", "b6500", "10240", "0.30.1", "v0.32.15", "0.24.0"],
    "cudagraph_estimate": ["", "on", "off"],
    "skip_vision_tower": ["", "on", "off"],
    "interconnect": ["", "nvswitch", "pcie_p2p", "pcie"],
    "model_runner": ["", "v1", "v2"],
    "flash_attention": ["", "on", "off"],
    "kv_unified": ["", "on", "off"],
    "gpu_layers": ["", "0", "20", "81", "999"],
    "gradient_checkpointing": ["on", "off", "offload"],
    "loss": ["full", "fused", "chunked"],
    "lora_rank": ["8", "64", "1024"],
    "lora_targets": ["attention", "qv", "mlp", "all"],
    "adapter": ["lora", "dora"],
    "optimizer": ["adamw", "adamw8bit"],
    "base_format": ["nf4", "gptq"],
    "market": ["on_demand", "interruptible", "any"],
    "min_reliability": ["0", "0.9", "1"],
    "gpu_plans": ["", "on"],
    "clusters": ["auto", "show"],
}
HOSTILE = [
    "", " ", "0", "-1", "-0", "+5", "1e309", "-1e309", "1e-400", "NaN", "nan", "inf", "-inf",
    "Infinity", "-Infinity", "sNaN", "0x10", "1_000", "١٢٣", "½", "9" * 400, "-" + "9" * 400,
    "99999999999999999999999999", "0.000000001", "1.5", "3.", ".", "1,5", "' OR 1=1 --",
    "<script>alert(1)</script>", "\x00", "a\x00b", "null", "None", "true", "[]", "{}", "%00",
    "../../etc/passwd", "é" * 300, "🦙" * 50, "x" * 5000, "EU," * 10, "ZZ", "XK", "eu", "de, fr",
    "unknown-model", "llama-3-1-8b\x00", "LLAMA-3-1-8B", "😀,EU",
]
COUNTRY_CODES = ["DE", "FR", "US", "CH", "PL", "NL", "JP", "BR", "ZA", "EU", "zz", "??", ""]


def test_the_fuzzers_draw_every_declared_input():
    assert set(VALID_VALUES) == set(QUERY_FIELDS)


def values_for(field: str):
    return st.one_of(
        st.sampled_from(VALID_VALUES[field]),
        st.sampled_from(HOSTILE),
        st.integers(min_value=-(10**30), max_value=10**30).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.text(max_size=60),
    )


many_countries = st.lists(st.sampled_from(COUNTRY_CODES), min_size=200, max_size=600).map(",".join)


@st.composite
def queries(draw) -> list[tuple[str, str]]:
    """A query string as pairs: any subset of the fields, some repeated, sometimes unknown ones."""
    pairs = []
    for field in draw(st.lists(st.sampled_from(QUERY_FIELDS), unique=True)):
        repeats = draw(st.integers(min_value=1, max_value=3))
        for _ in range(repeats):
            if field == "countries" and draw(st.booleans()):
                pairs.append((field, draw(many_countries)))
            else:
                pairs.append((field, draw(values_for(field))))
    if draw(st.booleans()):
        pairs.append((draw(st.text(min_size=1, max_size=20)), draw(st.text(max_size=20))))
    draw(st.randoms()).shuffle(pairs)
    return pairs


@st.composite
def workload_queries(draw) -> list[tuple[str, str]]:
    """Mostly plausible queries with one or two hostile values: these reach the sizing and matching
    code rather than stopping at the first field."""
    workload = draw(st.sampled_from(VALID_VALUES["workload"]))
    pairs = [("workload", workload)]
    for field in QUERY_FIELDS[1:]:
        if draw(st.integers(min_value=0, max_value=9)) == 0:
            continue  # left out
        pairs.append((field, draw(st.sampled_from(VALID_VALUES[field]))))
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        field = draw(st.sampled_from(QUERY_FIELDS))
        pairs.append((field, draw(values_for(field))))
    return pairs


any_query = st.one_of(queries(), workload_queries())
# The summary of what to fix: the field's name, its label (a link to the field) and the message.
ERROR_ITEM = re.compile(r'<li data-field="([^"]*)">(?:<a href="#[^"]*">)?[^<]*(?:</a>)?: ([^<]*)</li>')


def assert_api_answer(response):
    # 404: names nothing (a model not in the catalog, a page past the window); 422: values that do not
    # go together (docs/api.md).
    assert response.status_code in (200, 400, 404, 422), (response.status_code, response.content[:500])
    event(f"status {response.status_code}")
    body = response.json()
    if response.status_code == 404:  # a page past the list's window, a model not in the catalog
        assert set(body) == {"errors"} and len(body["errors"]) == 1 and set(body["errors"]) <= {"page", "model"}, body
    if response.status_code in (400, 404, 422):
        assert set(body) == {"errors"}, body
        assert body["errors"], body
        for field, message in body["errors"].items():
            assert field in QUERY_FIELDS, body
            assert isinstance(message, str) and message.strip(), body


def assert_wizard_answer(response, pairs):
    assert response.status_code == 200, (response.status_code, response.content[:500])
    page = response.content.decode()
    assert "Traceback" not in page
    if not any(name == "workload" for name, _ in pairs):
        return  # no query yet: the empty wizard
    event("error shown" if 'role="alert"' in page else "result shown")
    if 'role="alert"' in page:
        items = ERROR_ITEM.findall(page)
        assert items, page[:2000]
        for field, message in items:
            assert field in QUERY_FIELDS, items
            assert html.unescape(message).strip(), items
    else:
        assert "GPU memory needed" in page, page[:2000]


@FUZZ
@given(pairs=any_query)
def test_api_estimate_answers_a_result_or_names_the_field(client, catalog_fleet, pairs):
    assert_api_answer(client.get("/api/v1/estimate?" + urlencode(pairs)))


@FUZZ
@given(pairs=any_query)
def test_api_recommendations_answer_a_result_or_name_the_field(client, catalog_fleet, pairs):
    response = client.get("/api/v1/recommendations?" + urlencode(pairs))
    assert_api_answer(response)
    if response.status_code == 200:
        machines = response.json()["machines"]
        assert len(machines) <= 1000


@FUZZ
@given(pairs=queries())
def test_api_models_answer_a_list_or_name_the_field(client, catalog_fleet, pairs):
    response = client.get("/api/v1/models?" + urlencode(pairs))
    assert_api_answer(response)
    if response.status_code == 200:
        assert isinstance(response.json(), list)


@FUZZ
@given(pairs=any_query)
def test_wizard_page_answers_a_result_or_names_the_field(client, catalog_fleet, pairs):
    assert_wizard_answer(client.get("/?" + urlencode(pairs)), pairs)


@FUZZ
@given(pairs=any_query, shown=st.sampled_from(["inference:language", "image:image", "", "x" * 300]))
def test_wizard_htmx_partial_answers_a_result_or_names_the_field(client, catalog_fleet, pairs, shown):
    response = client.get(
        "/?" + urlencode([*pairs, ("shown", shown)]), headers={"HX-Request": "true", "HX-Target": "result"}
    )
    assert_wizard_answer(response, pairs)
    assert "<html" not in response.content.decode()  # a partial, never the whole page


def test_five_hundred_countries_are_refused_naming_the_field(client, catalog_fleet):
    countries = ",".join(["DE", "FR", "US", "PL", "NL"] * 100)
    query = f"{LLAMA_8B}&countries={countries}"
    response = client.get("/api/v1/recommendations?" + query)
    assert response.status_code == 400
    assert "countries" in response.json()["errors"]
    page = client.get("/?" + query)
    assert page.status_code == 200 and b'<li data-field="countries"><a href="#id_countries">Countries</a>:' in page.content


def test_nan_and_infinity_are_refused_naming_the_field(client, catalog_fleet):
    for value in ("NaN", "inf", "-Infinity"):
        query = f"workload=notebook&memory_gib={value}"
        response = client.get("/api/v1/estimate?" + query)
        assert response.status_code == 400 and "memory_gib" in response.json()["errors"], value
        budget = client.get(f"/api/v1/recommendations?workload=notebook&memory_gib=24&budget={value}")
        assert budget.status_code == 400 and "budget" in budget.json()["errors"], value


def test_a_nul_byte_in_the_model_is_an_error_not_a_crash(client, catalog_fleet):
    """Found by the fuzzing above: the page looked the typed slug up before the form refused it,
    and PostgreSQL refuses NUL bytes outright."""
    for headers in ({}, {"HX-Request": "true", "HX-Target": "result"}):
        response = client.get("/?" + urlencode({"workload": "inference", "model": "llama\x00"}), headers=headers)
        assert response.status_code == 200
        assert b'<li data-field="model"><a href="#id_q">Model</a>: Null characters are not allowed.' in response.content
    api = client.get("/api/v1/estimate?" + urlencode({"workload": "inference", "model": "\x00"}))
    assert api.status_code == 400 and "model" in api.json()["errors"]
