"""A request nginx has already given up on (its X-Request-Start older than PROXY_READ_TIMEOUT_SECONDS
less the margin) is answered 503 with a Retry-After before any view runs, and a Launch that passes
its deadline while it works books nothing (tests/launches/test_launch_deadline.py). The header
counts only through a trusted proxy."""
from __future__ import annotations

import json

import pytest

from tests.helpers import started

PAGE = "/calculators/"
API = "/api/v1/models"


def test_a_page_past_the_proxys_deadline_is_answered_503_with_retry_after(client, behind_nginx, db):
    response = client.get(PAGE, headers=started(56))
    assert response.status_code == 503
    assert response["Retry-After"] == "10"
    assert "too busy to answer this request in time" in response.content.decode()


def test_an_api_call_past_the_proxys_deadline_is_answered_503_in_json(client, behind_nginx, db):
    response = client.get(API, headers=started(120))
    assert response.status_code == 503
    assert response["Retry-After"] == "10"
    assert response["Content-Type"] == "application/json"
    assert "too busy" in json.loads(response.content)["errors"]["service"]


def test_a_request_within_the_deadline_is_answered(client, behind_nginx, db):
    assert client.get(PAGE, headers=started(54)).status_code == 200
    assert client.get(API, headers=started(1)).status_code == 200


def test_the_german_page_says_it_in_german(client, behind_nginx, db):
    response = client.get("/de" + PAGE, headers=started(120))
    assert response.status_code == 503
    assert "rechtzeitig" in response.content.decode()


def test_a_forged_start_from_an_untrusted_client_is_ignored(client, settings, db):
    settings.TRUSTED_PROXY_COUNT = 0
    assert client.get(PAGE, headers=started(3600)).status_code == 200
    assert client.get(API, headers={"X-Request-Start": "t=1"}).status_code == 200


@pytest.mark.parametrize("value", ["", "t=", "t=soon", "t=nan", "t=inf", "1e999999"])
def test_an_unreadable_start_sets_no_deadline(client, behind_nginx, db, value):
    assert client.get(PAGE, headers={"X-Request-Start": value}).status_code == 200


def test_the_deadline_follows_the_proxy_read_timeout_setting(client, behind_nginx, db):
    behind_nginx.PROXY_READ_TIMEOUT_SECONDS = 300
    assert client.get(PAGE, headers=started(120)).status_code == 200
    behind_nginx.PROXY_READ_TIMEOUT_SECONDS = 10
    assert client.get(PAGE, headers=started(6)).status_code == 503
