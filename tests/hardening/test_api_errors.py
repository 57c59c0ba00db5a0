"""The API answers JSON whatever goes wrong, never Django's HTML error page or a traceback, and every
error in one shape: `{"errors": {field or topic: message}}`, in the request's language."""
from __future__ import annotations

import logging

import pytest
from django.test import Client, RequestFactory

from catalog.models import LanguageModel
from nodelodge.accounts import tokens
from nodelodge.hardening import errors
from nodelodge.wizard.api import api
from tests.factories import make_user
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

SCHEMA = api.get_openapi_schema()
# Every operation that reads a body, as the schema lists them (a new one is covered as it comes).
BODY_OPERATIONS = sorted(
    (method.upper(), path)
    for path, operations in SCHEMA["paths"].items()
    for method, operation in operations.items()
    if method in ("post", "put", "patch") and "requestBody" in operation
)


def test_an_unexpected_error_inside_the_api_is_json_and_logged(catalog_fleet, caplog):
    # A real fault the handlers do not expect, on every database: a stored row the code cannot read
    # (the model's architecture is a bare string where an object belongs). Undone with the test's
    # transaction.
    LanguageModel.objects.filter(slug="llama-3-1-8b").update(architecture="written by hand")
    client = Client(raise_request_exception=False)
    with caplog.at_level(logging.ERROR, logger="nodelodge.errors"):
        response = client.get("/api/v1/recommendations?" + LLAMA_8B)

    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"errors": {"server": errors.SERVER_ERROR_MESSAGE}}
    assert b"Traceback" not in response.content and b"written by hand" not in response.content
    assert any(record.exc_info for record in caplog.records if record.name == "nodelodge.errors")
    assert "unexpected error on GET /api/v1/recommendations" in caplog.text


def test_an_unknown_api_path_is_a_json_404(client):
    response = client.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"errors": {"path": errors.NOT_FOUND_MESSAGE}}


def test_an_unknown_page_is_still_an_html_404(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_an_error_before_the_api_is_reached_is_json_under_api_and_html_elsewhere():
    # Django calls handler500 for an exception raised outside the API (in a middleware, say).
    factory = RequestFactory()
    api = errors.server_error(factory.get("/api/v1/estimate"))
    assert api.status_code == 500 and api["Content-Type"] == "application/json"
    page = errors.server_error(factory.get("/"))
    assert page.status_code == 500 and page["Content-Type"].startswith("text/html")


def assert_api_error(response, status: int, field: str) -> str:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert list(body) == ["errors"] and field in body["errors"], body
    assert all(isinstance(message, str) and message for message in body["errors"].values())
    return body["errors"][field]


def test_there_are_body_operations_to_check():
    assert ("POST", "/api/v1/watches") in BODY_OPERATIONS and ("POST", "/api/v1/launches/group") in BODY_OPERATIONS


@pytest.mark.parametrize(("method", "path"), BODY_OPERATIONS)
def test_a_sessions_request_without_its_csrf_token_is_a_403_in_the_api_shape(method, path):
    session = Client(enforce_csrf_checks=True)
    session.force_login(make_user())

    response = session.generic(method, path, "{}", content_type="application/json")

    assert assert_api_error(response, 403, "csrf") == errors.CSRF_MESSAGE
    german = session.generic(method, path, "{}", content_type="application/json", HTTP_ACCEPT_LANGUAGE="de")
    assert "CSRF-Token" in assert_api_error(german, 403, "csrf")


def test_without_a_session_or_a_token_the_api_answers_401_in_the_api_shape(client):
    assert assert_api_error(client.get("/api/v1/watches"), 401, "auth") == errors.NOT_SIGNED_IN_MESSAGE
    guessed = client.get("/api/v1/watches", HTTP_AUTHORIZATION="Bearer nlt_guessed")
    assert assert_api_error(guessed, 401, "auth") == errors.NOT_SIGNED_IN_MESSAGE


@pytest.mark.parametrize(("method", "path"), BODY_OPERATIONS)
@pytest.mark.parametrize("body", ["not json", "{", "\x00", '{"query": {}', "query=x"])
def test_a_body_that_is_not_json_is_a_400_naming_the_body_on_every_operation_that_reads_one(
    client, method, path, body
):
    _row, token = tokens.create_token(make_user())

    response = client.generic(method, path, body.encode(), content_type="application/json",
                              HTTP_AUTHORIZATION=f"Bearer {token}")

    assert assert_api_error(response, 400, "body") == errors.BODY_NOT_JSON_MESSAGE


@pytest.mark.parametrize(("method", "path"), BODY_OPERATIONS)
@pytest.mark.parametrize("body", ["", "null", "[]", '"text"', "5"])
def test_a_body_that_is_missing_or_not_an_object_is_a_400_naming_the_body(client, method, path, body):
    _row, token = tokens.create_token(make_user())

    response = client.generic(method, path, body.encode(), content_type="application/json",
                              HTTP_AUTHORIZATION=f"Bearer {token}")

    assert assert_api_error(response, 400, "body")


def test_a_body_error_is_in_the_requests_language(client):
    _row, token = tokens.create_token(make_user())

    response = client.post("/api/v1/watches", "nicht json", content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_ACCEPT_LANGUAGE="de")

    assert assert_api_error(response, 400, "body").startswith("Der Inhalt ist kein JSON.")


def test_every_error_the_schema_documents_is_in_the_api_shape():
    components = SCHEMA["components"]["schemas"]
    documented = 0
    for path, operations in SCHEMA["paths"].items():
        for method, operation in operations.items():
            for status, answer in operation["responses"].items():
                if int(status) < 400:
                    continue
                documented += 1
                reference = answer["content"]["application/json"]["schema"]["$ref"]
                shape = components[reference.rsplit("/", 1)[1]]
                assert "errors" in shape["required"], (method, path, status, reference)
                assert shape["properties"]["errors"]["additionalProperties"] == {"type": "string"}
    assert documented > 20
