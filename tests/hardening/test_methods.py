"""HEAD answers like GET without a body; the API's 405 is JSON like its other errors."""
from __future__ import annotations

import pytest

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
