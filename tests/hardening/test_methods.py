"""HEAD answers like GET without a body; OPTIONS answers with Allow without running the view; a
method a path does not take is 405 with Allow before its view runs; the API's 405 is JSON like its
other errors."""
from __future__ import annotations

import pytest
from django.test.signals import template_rendered
from django.urls import URLResolver, get_resolver

from nodelodge.hardening.methods import _stated_methods
from tests.helpers import LLAMA_8B


@pytest.mark.parametrize(
    "path",
    ["/", f"/?{LLAMA_8B}", "/de/", "/calculators/", "/secure-and-community/",
     "/api/v1/models", f"/api/v1/estimate?{LLAMA_8B}", f"/api/v1/recommendations?{LLAMA_8B}"],
)
def test_head_answers_like_get_without_a_body(client, catalog_fleet, path):
    got = client.get(path)
    head = client.head(path)

    assert got.status_code == 200
    assert head.status_code == 200
    assert head["Content-Type"] == got["Content-Type"]
    assert head.content == b""
    assert int(head["Content-Length"]) > 0


def test_head_on_an_api_error_keeps_the_status_of_get(client, catalog_fleet):
    assert client.head("/api/v1/estimate?workload=nonsense").status_code == 400
    assert client.head("/no-such-page/").status_code == 404


@pytest.mark.parametrize("method, path", [("post", "/api/v1/models"), ("delete", "/api/v1/estimate"),
                                           ("put", "/api/v1/recommendations")])
def test_a_method_an_api_operation_does_not_take_is_a_json_405(client, db, method, path):
    response = getattr(client, method)(path)

    assert response.status_code == 405
    assert response["Content-Type"].startswith("application/json")
    assert "GET" in response["Allow"]
    message = response.json()["errors"]["method"]
    assert method.upper() in message and "GET" in message


def test_a_method_a_page_does_not_take_stays_an_html_405(client, db):
    response = client.put("/calculators/")
    assert response.status_code == 405
    assert not response["Content-Type"].startswith("application/json")


class Rendered:
    """The templates rendered while it is open."""

    def __enter__(self):
        self.names = []
        template_rendered.connect(self._rendered)
        return self

    def _rendered(self, sender, template, **kwargs):
        self.names.append(template.name)

    def __exit__(self, *exc):
        template_rendered.disconnect(self._rendered)


@pytest.mark.parametrize(("path", "allow"), [
    (f"/?{LLAMA_8B}", "GET, HEAD, OPTIONS"),
    ("/de/", "GET, HEAD, OPTIONS"),
    ("/secure-and-community/", "GET, HEAD, OPTIONS"),
    ("/calculators/", "GET, HEAD, OPTIONS"),
    ("/launches/", "GET, HEAD, OPTIONS"),
    ("/launch/", "POST, OPTIONS"),
    ("/accounts/signup/", "GET, POST, HEAD, OPTIONS"),
    ("/accounts/logout/", "POST, OPTIONS"),
])
def test_options_on_a_page_answers_with_allow_without_rendering_it(client, catalog_fleet, path, allow):
    with Rendered() as rendered:
        response = client.options(path)

    assert response.status_code == 204
    assert response["Allow"] == allow
    assert response.content == b""
    assert rendered.names == []


@pytest.mark.parametrize(("path", "allow"), [
    ("/api/v1/models", "GET, HEAD, OPTIONS"),
    (f"/api/v1/recommendations?{LLAMA_8B}", "GET, HEAD, OPTIONS"),
    ("/api/v1/watches", "GET, POST, HEAD, OPTIONS"),
    ("/api/v1/watches/7", "DELETE, OPTIONS"),
    ("/api/v1/launches/group", "POST, OPTIONS"),
    ("/api/v1/launches", "POST, OPTIONS"),
])
def test_options_on_an_api_path_answers_its_operations_methods_without_running_them(client, db, path, allow):
    response = client.options(path)  # not signed in: the operations would answer 401

    assert response.status_code == 204
    assert response["Allow"] == allow
    assert response.content == b""


def test_options_on_an_address_that_is_not_there_is_its_404(client, db):
    assert client.options("/no-such-page/").status_code == 404
    response = client.options("/api/v1/no-such-thing")
    assert response.status_code == 404 and response.json()["errors"]["path"]


@pytest.mark.parametrize("path", ["/secure-and-community/", "/launches/", "/calculators/"])
def test_trace_on_a_page_is_405_with_allow_before_the_view_runs(client, catalog_fleet, path):
    with Rendered() as rendered:
        response = client.generic("TRACE", path)

    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD, OPTIONS"
    assert rendered.names == []


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("TRACE", "/api/v1/models", "GET, HEAD, OPTIONS"),
    ("PATCH", "/api/v1/watches", "GET, POST, HEAD, OPTIONS"),
    ("GET", "/api/v1/watches/7", "DELETE, OPTIONS"),
    ("PUT", "/api/v1/launches/group", "POST, OPTIONS"),
])
def test_a_method_an_api_path_does_not_take_is_a_json_405_naming_the_ones_it_does(
    client, db, method, path, allow
):
    response = client.generic(method, path)

    assert response.status_code == 405
    assert response["Allow"] == allow
    assert response.json() == {"errors": {"method": f"{method} is not allowed here; use {allow}."}}


def _routes(patterns=None, prefix=""):
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace != "admin":
                yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern.callback


def test_every_console_view_states_the_methods_it_takes():
    """So OPTIONS and 405 name them exactly: `require_GET` and the like on a function view, the
    handlers of a class-based view, the operations of an API path. (The admin's views and the API's
    own schema and docs pages state none; they are taken as GET and POST, and GET.)"""
    unstated = sorted(route for route, view in _routes() if _stated_methods(view) is None)
    assert unstated == ["api/v1/", "api/v1/docs", "api/v1/openapi.json"]
