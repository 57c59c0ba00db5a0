"""Dear answers (a throughput plan, a long or deep list) a few at a time across the console
(DEAR_ANSWERS_AT_ONCE): one asked for while every slot is taken is answered at once, 503 with a
Retry-After, nothing changed; plain answers never wait for a slot; and a plan counts as
PLAN_REQUEST_COST first pages toward the per-address rate."""
from __future__ import annotations

import pytest
from django.core.cache import cache
from django.http import QueryDict

from nodelodge.hardening.slots import SLOT_KEY, SlotsTaken
from nodelodge.hardening.throttling import PLAN_REQUEST_COST
from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.query import parse_query
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

PLAN = f"{LLAMA_8B}&target_tokens=20000&redundancy=1"


@pytest.fixture
def every_slot_taken(settings):
    settings.DEAR_ANSWERS_AT_ONCE = 2
    cache.delete_many([SLOT_KEY % 0, SLOT_KEY % 1])
    for number in range(2):
        assert cache.add(SLOT_KEY % number, "another request", 30)
    yield
    cache.delete_many([SLOT_KEY % 0, SLOT_KEY % 1])


def test_a_plan_asked_for_while_every_slot_is_taken_is_answered_503_at_once(client, measured_machine,
                                                                            every_slot_taken):
    response = client.get(f"/api/v1/recommendations?{PLAN}")
    assert response.status_code == 503 and response["Retry-After"] == "2"
    assert "other large answers" in response.json()["errors"]["service"]
    page = client.get(f"/?{PLAN}")
    assert page.status_code == 503 and page["Retry-After"] == "2"
    assert "other large answers" in page.content.decode()
    assert "anderen großen Antworten" in client.get(f"/de/?{PLAN}").content.decode()
    for long_list in (f"/api/v1/recommendations?{LLAMA_8B}&limit=1000", f"/?{LLAMA_8B}&limit=200",
                      f"/api/v1/recommendations?{LLAMA_8B}&limit=100&page=4"):
        assert client.get(long_list).status_code == 503


def test_plain_answers_never_wait_for_a_slot(client, measured_machine, every_slot_taken):
    for plain in (f"/api/v1/recommendations?{LLAMA_8B}", f"/?{LLAMA_8B}", f"/?{LLAMA_8B}&limit=75",
                  f"/api/v1/recommendations?{LLAMA_8B}&limit=100&page=3"):
        assert client.get(plain).status_code == 200


@pytest.fixture
def one_slot(settings):
    settings.DEAR_ANSWERS_AT_ONCE = 1
    cache.delete(SLOT_KEY % 0)
    yield
    cache.delete(SLOT_KEY % 0)


def test_a_plan_gives_its_slot_back_when_answered(client, measured_machine, settings, one_slot):
    for _ in range(3):  # each takes the one slot and gives it back
        assert client.get(f"/api/v1/recommendations?{PLAN}").status_code == 200
    assert cache.get(SLOT_KEY % 0) is None
    cache.add(SLOT_KEY % 0, "another request", 30)
    assert client.get(f"/api/v1/recommendations?{PLAN}").status_code == 503
    settings.DEAR_ANSWERS_AT_ONCE = 0  # no limit
    assert client.get(f"/api/v1/recommendations?{PLAN}").status_code == 200


def test_a_plan_counts_as_several_first_pages_toward_the_per_address_rate(client, measured_machine, settings):
    settings.API_RATE_LIMIT = f"{2 * PLAN_REQUEST_COST}/min"
    cache.clear()
    assert client.get(f"/api/v1/recommendations?{PLAN}").status_code == 200
    assert client.get(f"/api/v1/recommendations?{PLAN}").status_code == 200
    refused = client.get(f"/api/v1/recommendations?{PLAN}")
    assert refused.status_code == 429 and refused["Retry-After"]
    cache.clear()
    for _ in range(2 * PLAN_REQUEST_COST):  # a plain answer counts one
        assert client.get(f"/api/v1/recommendations?{LLAMA_8B}").status_code == 200
    cache.clear()


def test_only_a_visitors_answer_needs_a_slot_never_launch_the_watches_or_the_command(measured_machine,
                                                                                    every_slot_taken):
    query = parse_query(QueryDict(PLAN))
    with pytest.raises(SlotsTaken):
        recommendation_for(query, shed_when_busy=True)
    assert recommendation_for(query).throughput.plans  # Launch's and the command's reads
    assert recommendation_for(query, relax=False).throughput.plans  # the watches' and Launch's
