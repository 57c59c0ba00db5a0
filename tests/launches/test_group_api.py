"""`POST /api/v1/launches/group`: a cluster or a plan booked all or nothing by a script (API token)
or a signed-in session (with its CSRF token): 201 with the group and its bookings, 200 for the same
key again, 409 naming the machine when nothing was booked, 400 for a body the schema does not allow,
422 for one it allows that cannot be booked as asked, 401 and 403."""
from __future__ import annotations

import uuid

import pytest
from django.test import Client

from catalog.models import Machine
from nodelodge.accounts import tokens
from nodelodge.launches.models import Booking, LaunchGroup
from nodelodge.wizard.api import api
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db
PATH = "/api/v1/launches/group"
QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))


def bearer(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def body(machines, *, price=None, kind="cluster", key=None, query=None) -> dict:
    return {
        "kind": kind,
        "machines": [{"id": m.pk, "gpus": m.gpu_count} for m in machines],
        "price_per_hour": price or str(sum(m.price_per_gpu_hour * m.gpu_count for m in machines)),
        "query": QUERY if query is None else query,
        "idempotency_key": key or uuid.uuid4().hex,
    }


@pytest.fixture
def token(make_user) -> str:
    return tokens.create_token(make_user())[1]


def post(client, payload, token):
    return client.post(PATH, payload, content_type="application/json", **bearer(token))


def test_a_script_books_a_cluster_and_gets_the_group_with_its_bookings(client, cluster_catalog, token):
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    payload = body(machines)

    made = post(client, payload, token)

    assert made.status_code == 201, made.content
    group = made.json()
    assert (group["kind"], group["status"], group["price_per_hour"]) == ("cluster", "running", "39.84")
    assert group["idempotency_key"] == payload["idempotency_key"] and group["result_url"].startswith("/?")
    assert [(b["machine_id"], b["gpus"], b["status"]) for b in group["bookings"]] == [
        (m.pk, 8, "running") for m in machines
    ]
    assert {b["provider_machine_id"] for b in group["bookings"]} == {m.provider_machine_id for m in machines}
    assert group["bookings"][0]["price_per_hour"] == "19.92" and group["bookings"][0]["gpu_type"] == "H100 SXM 80GB"

    again = post(client, payload, token)  # the same key: the same group, nothing more booked
    assert again.status_code == 200 and again.json()["id"] == group["id"]
    assert Booking.objects.count() == 2


def test_one_machine_taken_answers_409_naming_it_and_books_nothing(client, cluster_catalog, token):
    machines = [cluster_catalog.cluster_machine() for _ in range(3)]
    payload = body(machines)
    Machine.objects.filter(pk=machines[2].pk).update(free_gpus=7)

    refused = post(client, payload, token)

    assert refused.status_code == 409
    answer = refused.json()
    assert answer["code"] == "taken"
    assert (answer["machine_id"], answer["provider_machine_id"]) == (machines[2].pk, machines[2].provider_machine_id)
    assert machines[2].provider_machine_id in answer["errors"]["group"]
    assert "model=llama-3-1-8b" in answer["result_url"]
    assert not Booking.objects.exists() and not LaunchGroup.objects.exists()


def test_a_refused_cluster_answers_with_the_next_cluster_without_the_machine_taken(client, h100_site, token):
    first, second, third = sorted(h100_site, key=lambda m: (m.price_per_gpu_hour, m.pk))
    Machine.objects.filter(pk=first.pk).update(free_gpus=7)
    query = {"workload": "inference", "model": "llama-3-1-405b", "precision": "16", "context": "8192",
             "requests": "1"}

    answer = post(client, body([first, second], query=query), token).json()

    assert answer["machine_id"] == first.pk
    assert answer["next_cluster"]["machine_ids"] == [second.pk, third.pk]
    assert answer["next_cluster"]["price_per_hour"] == "44.00"
    assert (answer["next_cluster"]["tensor_parallel"], answer["next_cluster"]["pipeline_parallel"]) == (8, 2)


def test_a_price_that_rose_answers_409_for_the_whole_group(client, cluster_catalog, token):
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    answer = post(client, body(machines, price="30.00"), token).json()
    assert answer["code"] == "price_changed" and answer["machine_id"] is None
    assert answer["next_cluster"] is None
    assert "$30.00/h" in answer["errors"]["group"] and "$39.84/h" in answer["errors"]["group"]
    assert not Booking.objects.exists()


@pytest.mark.parametrize(("change", "field"), [
    ({"kind": "rack"}, "kind"),
    ({"kind": ""}, "kind"),
    ({"machines": []}, "machines"),
    ({"machines": [{"id": 1, "gpus": 0}]}, "machines.0.gpus"),
    ({"machines": [{"id": -3, "gpus": 8}]}, "machines.0.id"),
    ({"machines": [{"id": 1, "gpus": "8"}]}, "machines.0.gpus"),
    ({"machines": [{"id": 1, "gpus": 8, "note": "rack 4"}]}, "machines.0.note"),
    ({"machines": [{"id": i, "gpus": 1} for i in range(1, 10_002)]}, "machines"),
    ({"price_per_hour": "cheap"}, "price_per_hour"),
    ({"price_per_hour": "NaN"}, "price_per_hour"),
    ({"price_per_hour": "-1"}, "price_per_hour"),
    ({"price_per_hour": ""}, "price_per_hour"),
    ({"idempotency_key": "x"}, "idempotency_key"),
    ({"idempotency_key": "group:1:2-with-a-colon"}, "idempotency_key"),
    ({"colour": "blue"}, "colour"),
])
def test_a_body_the_schema_does_not_allow_answers_400_naming_the_field_and_books_nothing(
    client, cluster_catalog, token, change, field
):
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    answer = post(client, body(machines) | change, token)
    assert answer.status_code == 400, answer.content
    assert field in answer.json()["errors"]
    assert not Booking.objects.exists()


@pytest.mark.parametrize(("change", "field"), [
    ({"machines": [{"id": 1, "gpus": 8}, {"id": 1, "gpus": 8}]}, "machines"),
    ({"machines": [{"id": 1, "gpus": 8}, {"id": 1, "gpus": 4}]}, "machines"),
    ({"query": {**QUERY, "context": "abc"}}, "context"),
    ({"query": {**QUERY, "model": "no-such-model"}}, "query"),
])
def test_a_body_the_schema_allows_that_cannot_be_booked_as_asked_answers_422_naming_the_field(
    client, cluster_catalog, token, change, field
):
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    answer = post(client, body(machines) | change, token)
    assert answer.status_code == 422, answer.content
    assert field in answer.json()["errors"]
    assert not Booking.objects.exists()


@pytest.mark.parametrize("payload", [
    "not json", {"kind": "cluster"}, {"machines": "1:8"}, [],
])
def test_a_body_that_is_not_the_schema_answers_400(client, cluster_catalog, token, payload):
    answer = client.post(PATH, payload, content_type="application/json", **bearer(token))
    assert answer.status_code == 400
    assert answer.json()["errors"]


def test_values_that_do_not_go_together_answer_422(client, cluster_catalog, token):
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    answer = post(client, body(machines, query={**QUERY, "context": "200000"}), token)
    assert answer.status_code == 422, answer.content
    assert not Booking.objects.exists()


def test_without_a_token_or_session_401_and_a_session_needs_its_csrf_token(cluster_catalog, make_user):
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    anonymous = Client()
    assert anonymous.post(PATH, body(machines), content_type="application/json").status_code == 401
    assert anonymous.post(PATH, body(machines), content_type="application/json",
                          **bearer("nlt_guessed")).status_code == 401
    session = Client(enforce_csrf_checks=True)
    session.force_login(make_user())
    assert session.post(PATH, body(machines), content_type="application/json").status_code == 403
    assert not Booking.objects.exists()
    session.get("/")  # the page sets the CSRF cookie
    made = session.post(PATH, body(machines), content_type="application/json",
                        HTTP_X_CSRFTOKEN=session.cookies["csrftoken"].value)
    assert made.status_code == 201


def test_the_operation_is_in_the_openapi_schema_with_its_answers():
    operation = api.get_openapi_schema()["paths"][PATH]["post"]
    assert {str(status) for status in operation["responses"]} >= {
        "200", "201", "400", "401", "403", "409", "422", "429"}
    request = operation["requestBody"]["content"]["application/json"]["schema"]
    assert operation["tags"] == ["launches"] and request


def test_a_cluster_too_small_for_the_workload_is_refused_on_the_server_whatever_the_client_sent(
    client, h100_site, token
):
    first, second, third = sorted(h100_site, key=lambda m: (m.price_per_gpu_hour, m.pk))
    deepseek_16 = {"workload": "inference", "model": "deepseek-v3", "precision": "16", "context": "8192",
                   "requests": "1"}

    refused = post(client, body([first, second], query=deepseek_16), token)  # it needs three

    assert refused.status_code == 409
    answer = refused.json()
    assert answer["code"] == "no_longer_fits" and answer["machine_id"] is None
    assert answer["errors"]["group"].startswith("2 machines of 8 × H100 SXM 80GB need ")
    assert "more than vLLM's budget of 72.85 GiB" in answer["errors"]["group"]
    assert not Booking.objects.exists()
    made = post(client, body([first, second, third], query=deepseek_16), token)
    assert made.status_code == 201, made.content


def test_the_schema_states_what_a_group_body_takes():
    schemas = api.get_openapi_schema()["components"]["schemas"]
    group, machine = schemas["LaunchGroupIn"], schemas["GroupMachineIn"]
    assert group["additionalProperties"] is False and machine["additionalProperties"] is False
    assert group["properties"]["kind"]["enum"] == ["cluster", "plan"]
    assert group["properties"]["idempotency_key"]["pattern"] == "^[A-Za-z0-9_-]{8,64}$"
    assert (group["properties"]["machines"]["minItems"], group["properties"]["machines"]["maxItems"]) == (1, 10_000)
    assert (machine["properties"]["gpus"]["minimum"], machine["properties"]["gpus"]["maximum"]) == (1, 16)
    assert group["properties"]["price_per_hour"]["pattern"]
