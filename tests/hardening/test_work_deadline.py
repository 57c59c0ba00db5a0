"""Every request has a deadline of its own, below gunicorn's timeout (REQUEST_WORK_SECONDS), with or
without a proxy: an answer still working at it stops at its next step and is answered 503 with a
Retry-After, JSON under /api/ and the console's page elsewhere, nothing changed."""
from __future__ import annotations

import pytest

from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

PLAN = f"{LLAMA_8B}&target_tokens=20000&redundancy=1"


def test_an_api_answer_past_its_own_deadline_is_answered_503_in_json(client, settings, measured_machine):
    settings.REQUEST_WORK_SECONDS = 0
    response = client.get(f"/api/v1/recommendations?{PLAN}")
    assert response.status_code == 503
    assert response["Retry-After"] == "10"
    assert response["Content-Type"] == "application/json"
    assert "Nothing was changed" in response.json()["errors"]["service"]


def test_a_page_past_its_own_deadline_is_answered_503_with_the_consoles_page(client, settings, measured_machine):
    settings.REQUEST_WORK_SECONDS = 0
    for path in (f"/?{PLAN}", f"/de/?{PLAN}"):
        response = client.get(path)
        assert response.status_code == 503
        assert response["Retry-After"] == "10"
        assert response["Content-Type"].startswith("text/html")
    assert "too busy to answer this request in time" in client.get(f"/?{PLAN}").content.decode()
    assert "rechtzeitig" in client.get(f"/de/?{PLAN}").content.decode()


def test_within_its_deadline_the_same_answer_is_given(client, settings, measured_machine):
    settings.REQUEST_WORK_SECONDS = 20
    response = client.get(f"/api/v1/recommendations?{PLAN}")
    assert response.status_code == 200
    assert response.json()["throughput_plan"]["plans"]
