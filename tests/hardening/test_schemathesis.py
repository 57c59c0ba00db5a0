"""Schemathesis generates requests from the published OpenAPI schema and checks every answer:
never a server error, and the body always matches what the schema promises for its status."""
from __future__ import annotations

import json

import pytest
import schemathesis
from django.core.serializers.json import DjangoJSONEncoder
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from nodelodge.wizard.api import api
from nodelodge.wsgi import application
from tests.factories import load_shipped_models_and_gpus

from .helpers import add_fleet, api_token, schemathesis_run

# The schema the API publishes, built without a request at import; the calls go to the WSGI app.
# (test_the_served_schema_is_the_one_tested checks that /api/v1/openapi.json serves the same.)
schema = schemathesis.openapi.from_dict(json.loads(json.dumps(api.get_openapi_schema(), cls=DjangoJSONEncoder)))
schema.app = application


@pytest.fixture
def wsgi_on_test_connection(catalog_fleet):
    """The WSGI app runs in the test's thread, on the test's connection (inside its transaction);
    Django's own test client keeps that connection open between requests the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_answers_within_its_schema(case, wsgi_on_test_connection):
    # The WSGI transport does not undo gzip (which the console applies whenever a client accepts it).
    case.call_and_validate(
        headers={"Accept-Encoding": "identity"},
        checks=[not_a_server_error, response_schema_conformance, status_code_conformance],
    )


def test_the_served_schema_is_the_one_tested(client):
    served = client.get("/api/v1/openapi.json")
    assert served.status_code == 200
    assert served.json() == schema.raw_schema
    paths = set(schema.raw_schema["paths"])
    assert {"/api/v1/estimate", "/api/v1/recommendations", "/api/v1/models"} <= paths


@pytest.mark.repeated_on_postgresql(
    reason="test_production_layout.py runs the same `schemathesis run --checks all` with a token on PostgreSQL, "
    "through nginx and gunicorn"
)
@pytest.mark.django_db(transaction=True)
def test_schemathesis_run_with_every_check_passes_against_a_live_server(live_server, tmp_path):
    """What the issue ran: `schemathesis run <server>/api/v1/openapi.json --checks all`, here against
    the live server on this database, with an API token so the operations behind sign-in (watches,
    group launches) are run too: the schema states what the API enforces (each parameter's type,
    choices and range; each body field's type, choices, format and range, and no fields besides),
    so schema-invalid requests are refused with 400 and schema-valid ones accepted, or answered with
    the documented 404 (names nothing), 409 (the state refuses) or 422 (values that do not go
    together, that the console cannot answer), as schemathesis.toml lets them; every error in the
    API's shape, every undeclared method 405 with Allow. Bounded: 40 examples an operation."""
    load_shipped_models_and_gpus()
    add_fleet()
    run = schemathesis_run(f"{live_server.url}/api/v1/openapi.json", tmp_path,
                           headers={"Authorization": f"Bearer {api_token()}"})
    assert run.returncode == 0, run.stdout[-8000:] + run.stderr[-2000:]
