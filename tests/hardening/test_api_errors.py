"""The API answers JSON whatever goes wrong, never Django's HTML error page or a traceback."""
from __future__ import annotations

import logging

import pytest
from django.test import Client, RequestFactory

from catalog.models import LanguageModel
from nodelodge.hardening import errors
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db



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
