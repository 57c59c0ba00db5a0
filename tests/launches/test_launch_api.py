"""`POST /api/v1/launches`: one machine booked by a script (API token) or a signed-in session, as the
review's Confirm books it: 201 with the booking, 200 for the same key again, 409 when it cannot be
booked now, 400 for a body the schema does not allow, 422 for one it allows that cannot be booked as
asked; with `bid_per_gpu_hour`, at the bid where the machine is booked interruptible."""
from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from catalog.models import Machine
from nodelodge.accounts import tokens
from nodelodge.launches.models import Booking
from nodelodge.wizard.api import api
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db
PATH = "/api/v1/launches"
QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))
FLOOR = Decimal("0.6149")


def body(machine, *, price="0.6149", key=None, query=None, **extra) -> dict:
    return {"machine": machine.pk, "gpus": 1, "price_per_hour": price, "query": QUERY if query is None else query,
            "idempotency_key": key or uuid.uuid4().hex, **extra}


@pytest.fixture
def token(make_user) -> str:
    return tokens.create_token(make_user())[1]


def post(client, payload, token):
    return client.post(PATH, payload, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.fixture
def dual(small_catalog) -> Machine:
    """On demand at $2.00, interruptible from $0.6149."""
    return small_catalog.machine(price_per_gpu_hour=Decimal("2.00"), interruptible_price_per_gpu_hour=FLOOR)


INTERRUPTIBLE = {**QUERY, "market": "interruptible"}


def test_a_script_books_an_interruptible_machine_at_its_bid_and_the_same_key_answers_the_same(client, dual, token):
    payload = body(dual, query=INTERRUPTIBLE, market="interruptible", bid_per_gpu_hour="0.75")

    made = post(client, payload, token)

    assert made.status_code == 201, made.content
    booking = made.json()
    assert (booking["market"], booking["bid_per_gpu_hour"], booking["price_per_gpu_hour"],
            booking["price_per_hour"]) == ("interruptible", "0.75", "0.75", "0.75")
    assert (booking["machine_id"], booking["gpus"], booking["status"]) == (dual.pk, 1, "running")
    assert booking["idempotency_key"] == payload["idempotency_key"] and booking["result_url"].startswith("/?")
    again = post(client, payload, token)
    assert again.status_code == 200 and again.json()["id"] == booking["id"]
    assert Booking.objects.count() == 1


def test_without_a_bid_a_machine_is_booked_at_the_price_shown(client, small_catalog, token):
    machine = small_catalog.machine()
    made = post(client, body(machine, price="2.49"), token)
    assert made.status_code == 201, made.content
    assert (made.json()["market"], made.json()["bid_per_gpu_hour"], made.json()["price_per_hour"]) == (
        "on_demand", None, "2.49")


@pytest.mark.parametrize(("extra", "message"), [
    ({"query": INTERRUPTIBLE, "market": "interruptible", "bid_per_gpu_hour": "0.6"},
     "Bid at least $0.6149 per GPU-hour, this machine's floor."),
    ({"query": INTERRUPTIBLE, "market": "interruptible", "bid_per_gpu_hour": "2.01"},
     "Bid at most $2.00 per GPU-hour, this machine's on-demand price, at which nobody takes it back."),
    ({"market": "on_demand", "price": "2.00", "bid_per_gpu_hour": "2.00"},
     "Only an interruptible machine takes a bid; this one is booked on demand, at its price. Leave the bid out."),
    ({"price": "2.00", "bid_per_gpu_hour": "0.75"},  # no market named: the machine's now, on demand
     "Only an interruptible machine takes a bid; this one is booked on demand, at its price. Leave the bid out."),
])
def test_a_bid_that_conflicts_with_the_machine_is_422_naming_the_bid_and_books_nothing(
    client, dual, token, extra, message
):
    answer = post(client, body(dual, **extra), token)

    assert answer.status_code == 422, answer.content
    assert answer.json() == {"errors": {"bid_per_gpu_hour": message}}
    assert not Booking.objects.exists() and Machine.objects.get(pk=dual.pk).free_gpus == 2


def test_a_conflict_is_said_in_the_requests_language(client, dual, token):
    answer = client.post(PATH, body(dual, query=INTERRUPTIBLE, bid_per_gpu_hour="0.5"),
                         content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}",
                         HTTP_ACCEPT_LANGUAGE="de")
    assert answer.json()["errors"]["bid_per_gpu_hour"] == (
        "Bieten Sie mindestens 0,6149 $ pro GPU-Stunde, das Mindestgebot dieser Maschine.")


@pytest.mark.parametrize("bid", ["0.12345", "-1", "cheap", "", "1e3", "10000.01", "0,75", 0.75, None])
def test_a_bid_the_schema_does_not_allow_is_400_naming_it(client, dual, token, bid):
    payload = body(dual, query=INTERRUPTIBLE, bid_per_gpu_hour=bid)
    if bid is None:
        payload["bid_per_gpu_hour"] = None  # null is "no bid": allowed, booked at the price shown
        assert post(client, payload, token).status_code == 201
        return
    answer = post(client, payload, token)
    assert answer.status_code == 400, answer.content
    assert answer.json()["errors"] == {"bid_per_gpu_hour": (
        "Send the bid as a decimal string of USD per GPU-hour from 0 to 10000 with at most 4 places, e.g. \"0.75\".")}
    assert not Booking.objects.exists()


@pytest.mark.parametrize(("change", "field"), [
    ({"machine": 0}, "machine"),
    ({"gpus": 99}, "gpus"),
    ({"market": "spot"}, "market"),
    ({"price_per_hour": "cheap"}, "price_per_hour"),
    ({"idempotency_key": "x"}, "idempotency_key"),
    ({"colour": "blue"}, "colour"),
])
def test_a_body_the_schema_does_not_allow_is_400_naming_the_field(client, dual, token, change, field):
    answer = post(client, body(dual) | change, token)
    assert answer.status_code == 400 and field in answer.json()["errors"], answer.content
    assert not Booking.objects.exists()


def test_a_query_it_cannot_answer_is_422_naming_its_field(client, dual, token):
    answer = post(client, body(dual, query={**QUERY, "context": "abc"}), token)
    assert answer.status_code == 422 and "context" in answer.json()["errors"]


def test_a_machine_taken_is_409_with_the_refusals_code(client, small_catalog, token):
    machine = small_catalog.machine(free_gpus=0)
    answer = post(client, body(machine, price="2.49"), token)
    assert answer.status_code == 409
    assert answer.json()["code"] == "taken"
    assert set(answer.json()) == {"errors", "code", "result_url"} and "machine" in answer.json()["errors"]
    assert not Booking.objects.exists()


def test_a_market_changed_since_is_409(client, small_catalog, token):
    machine = small_catalog.machine()
    answer = post(client, body(machine, price="2.49", market="interruptible"), token)
    assert (answer.status_code, answer.json()["code"]) == (409, "market_changed")


def test_without_a_session_or_token_it_is_401(client, dual):
    answer = client.post(PATH, body(dual), content_type="application/json")
    assert answer.status_code == 401 and "auth" in answer.json()["errors"]


def test_the_schema_states_the_bid_and_its_answers():
    operation = api.get_openapi_schema()["paths"][PATH]["post"]
    assert set(operation["responses"]) >= {200, 201, 400, 409, 422, 401, 403, 429}
    schema = api.get_openapi_schema()["components"]["schemas"]
    bid = schema["LaunchIn"]["properties"]["bid_per_gpu_hour"]
    assert "floor" in str(bid) and "pattern" in str(bid)
    assert "bid_per_gpu_hour" in schema["LaunchOut"]["properties"]
