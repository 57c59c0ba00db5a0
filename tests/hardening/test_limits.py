"""Every catalog model, workload and precision at and beyond the form's own limits, on PostgreSQL:
the page, its HTMX partial, the API and Launch answer a result or a clear refusal, never a 5xx.

Found: once the memory needed on one GPU reached 2^31 MiB, the fleet count's memory bands overflowed
PostgreSQL's integer and every surface answered 500 (the estimate alone answered). An answer no
machine can hold is an empty result that says why.
"""
from __future__ import annotations

import uuid
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from catalog import rows as catalog_rows
from sizing.limits import MAX_CONTEXT, MAX_REQUESTS

from .helpers import QUERY_FIELDS

pytestmark = pytest.mark.django_db

PRECISIONS = ("16", "8", "4")
HTMX = {"HX-Request": "true", "HX-Target": "result"}
LIMITS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def launcher(client, catalog_fleet, django_user_model):
    """A signed-in client, and the machine its Launch forms name."""
    client.force_login(django_user_model.objects.create_user("ada", password="a-long-test-passphrase"))
    return client, catalog_fleet["h100x8"]


def workload_models() -> list[tuple[str, str, str]]:
    """(workload, model slug, precision) for every active catalog model under every workload it suits,
    the precisions taken in turn: each precision meets about a third of the models (the surfaces'
    limits are the form's and the fleet count's, read alike at every precision), and a run asks each
    model once rather than three times."""
    pairs = [
        (workload, row.slug)
        for workload in ("inference", "finetune", "image")
        for row in catalog_rows.models_for_workload(workload)
    ]
    return [(workload, slug, PRECISIONS[index % len(PRECISIONS)]) for index, (workload, slug) in enumerate(pairs)]


def answers(client, machine, params: dict[str, str]) -> dict[str, object]:
    query = urlencode(params)
    launch = {
        "machine": machine.pk, "gpus": 8, "price_per_hour": "20.00", "query": query,
        "idempotency_key": uuid.uuid4().hex,
    }
    return {
        "page": client.get("/?" + query),
        "partial": client.get("/?" + query, headers=HTMX),
        "api": client.get("/api/v1/recommendations?" + query),
        "launch": client.post(reverse("launches:launch"), launch),
    }


def assert_no_server_error(responses: dict[str, object], params: dict[str, str]) -> str:
    """Checks every surface's answer; returns what the API said ("refused", "empty", "machines")."""
    allowed = {"page": {200}, "partial": {200}, "api": {200, 400, 404, 422}, "launch": {303, 400, 409}}
    for surface, response in responses.items():
        assert response.status_code in allowed[surface], (surface, response.status_code, params,
                                                          response.content[:300])
        assert b"Traceback" not in response.content
    api = responses["api"]
    assert api["Content-Type"].startswith("application/json")
    body = api.json()
    if api.status_code == 404:  # a page past the list's window, a model not in the catalog
        assert len(body["errors"]) == 1 and set(body["errors"]) <= {"page", "model"}, body
        return "refused"
    if api.status_code in (400, 422):
        assert body["errors"] and set(body["errors"]) <= set(QUERY_FIELDS), body
        return "refused"
    if not body["machines"]:
        assert body["empty_reason"], body  # an empty result always says why
        return "empty"
    return "machines"


def test_every_model_and_workload_at_the_forms_limits(launcher):
    client, machine = launcher
    outcomes = set()
    for workload, slug, precision in workload_models():
        params = {"workload": workload, "model": slug, "precision": precision,
                  "context": str(MAX_CONTEXT), "requests": str(MAX_REQUESTS)}
        outcomes.add(assert_no_server_error(answers(client, machine, params), params))
    # Contexts past a model's window are refused; most of the rest need more than any machine
    # holds (image pipelines take neither field and still list machines).
    assert {"refused", "empty"} <= outcomes


def test_every_model_and_workload_just_beyond_the_limits_is_refused_naming_the_field(launcher):
    client, machine = launcher
    for workload, slug, precision in workload_models():
        params = {"workload": workload, "model": slug, "precision": precision,
                  "context": str(MAX_CONTEXT + 1), "requests": str(MAX_REQUESTS + 1)}
        responses = answers(client, machine, params)
        assert_no_server_error(responses, params)
        assert responses["api"].status_code == 400
        assert set(responses["api"].json()["errors"]) == {"context", "requests"}


def test_the_reported_overflow_is_an_empty_result_with_its_reason(launcher):
    client, machine = launcher
    for params in (
        {"workload": "inference", "model": "llama-3-1-70b", "precision": "16", "context": "131072",
         "requests": "43688"},
        {"workload": "finetune", "model": "llama-3-2-1b", "precision": "16", "context": "131072",
         "requests": "10000"},
    ):
        responses = answers(client, machine, params)
        assert_no_server_error(responses, params)
        body = responses["api"].json()
        assert responses["api"].status_code == 200
        assert body["machines"] == [] and body["alternatives"] == []
        assert body["empty_reason"]
        assert body["memory"]["total_gib"] > 2**31 / 1024  # MiB → GiB: beyond any integer of MiB
        assert responses["launch"].status_code == 409  # refused with the reason, not a crash


def around(limit: int):
    """Values at, near and beyond a limit, and (most often) anywhere up to it."""
    within = st.integers(min_value=1, max_value=limit)
    return st.one_of(
        st.sampled_from([1, 2, limit - 1, limit, limit, limit + 1, 10**12]),
        within, within, within,
        st.integers(min_value=limit + 1, max_value=10**15),
    )


@st.composite
def limit_queries(draw) -> dict[str, str]:
    workload, slug, window = draw(st.sampled_from(MODELS))
    # Past its own window a model's context is refused; within it the memory need grows unbounded.
    context = draw(st.one_of(around(MAX_CONTEXT), st.sampled_from([window, window + 1]),
                             st.integers(min_value=1, max_value=window)))
    return {
        "workload": workload, "model": slug, "precision": draw(st.sampled_from(PRECISIONS)),
        "context": str(context), "requests": str(draw(around(MAX_REQUESTS))),
    }


# The shipped catalog's models and context windows, read from its data so the strategy needs no
# database.
def _shipped_models() -> list[tuple[str, str, int]]:
    from catalog.data.image_pipelines import IMAGE_PIPELINES
    from catalog.data.language_models import LANGUAGE_MODELS
    from catalog.data.speech_models import SPEECH_MODELS

    language = [(row["slug"], row.get("max_context") or MAX_CONTEXT) for row in LANGUAGE_MODELS]
    speech = [(row["slug"], 448) for row in SPEECH_MODELS]
    return ([("inference", slug, window) for slug, window in language + speech]
            + [("finetune", slug, window) for slug, window in language]
            + [("image", row["slug"], 77) for row in IMAGE_PIPELINES])


MODELS = _shipped_models()


@LIMITS
@given(params=limit_queries())
def test_any_model_at_any_size_up_to_and_past_the_limits_never_fails(launcher, params):
    client, machine = launcher
    event(assert_no_server_error(answers(client, machine, params), params))


@LIMITS
@given(memory=st.one_of(st.sampled_from(["0.01", "9999.99", "10000", "10000.01", "1e6"]),
                        st.decimals(min_value=0, max_value=20000, places=2).map(str)))
def test_a_notebook_at_and_past_the_memory_limit_never_fails(launcher, memory):
    client, machine = launcher
    params = {"workload": "notebook", "memory_gib": memory}
    event(assert_no_server_error(answers(client, machine, params), params))
