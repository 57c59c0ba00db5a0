"""Faults from outside: the database unreachable, a booking's connection killed midway."""
from __future__ import annotations

import json
import threading
import uuid
from decimal import Decimal

import psycopg
import pytest
from django.db import connection
from django.urls import reverse

from catalog.models import Machine
from nodelodge.launches.models import Booking
from tests.helpers import LLAMA_8B

from .helpers import production_env, run_python

# A production process whose DATABASE_URL points at a port where nothing listens.
REQUESTS_WITHOUT_A_DATABASE = """
import json, django
django.setup()
from django.test import Client
client = Client(raise_request_exception=False)
answers = {}
for name, path, headers in [
    ("page", "/?%(query)s", {}),
    ("htmx", "/?%(query)s", {"HX-Request": "true", "HX-Target": "result"}),
    ("api", "/api/v1/recommendations?%(query)s", {}),
    ("models", "/api/v1/models", {}),
    ("launches", "/launches/", {}),  # signed in: the session is read from the database
]:
    if name == "launches":
        client.cookies["sessionid"] = "a" * 32
    response = client.get(path, headers=headers, secure=True, HTTP_HOST="example.com")
    answers[name] = {
        "status": response.status_code,
        "type": response["Content-Type"],
        "retry_after": response.get("Retry-After"),
        "body": response.content.decode(),
    }
print(json.dumps(answers))
"""


@pytest.fixture(scope="module")
def answers_without_a_database():
    env = production_env(DATABASE_URL="postgres://postgres@127.0.0.1:1/nowhere", LOG_LEVEL="CRITICAL")
    done = run_python(REQUESTS_WITHOUT_A_DATABASE % {"query": LLAMA_8B}, env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["page", "htmx", "launches"])
def test_without_a_database_pages_answer_503_with_a_clear_page(answers_without_a_database, name):
    answer = answers_without_a_database[name]
    assert answer["status"] == 503
    assert answer["type"].startswith("text/html")
    assert "Temporarily unavailable" in answer["body"]
    assert "database is not answering right now" in answer["body"]
    assert "Traceback" not in answer["body"] and "OperationalError" not in answer["body"]
    assert answer["retry_after"] == "30"


@pytest.mark.parametrize("name", ["api", "models"])
def test_without_a_database_the_api_answers_503_in_its_error_shape(answers_without_a_database, name):
    answer = answers_without_a_database[name]
    assert answer["status"] == 503
    assert answer["type"] == "application/json"
    assert json.loads(answer["body"]) == {
        "errors": {"service": "The console's database is not answering right now. "
                              "Nothing was changed; try again in a minute."}
    }


def _kill_own_connection_before(sql_prefix: str):
    """An execute wrapper (Django's hook for database instrumentation) that, when the statement
    starting with `sql_prefix` is about to run, has another connection terminate this one's backend
    with pg_terminate_backend, as a crashed link or a DBA would."""
    settings_dict = connection.settings_dict
    killed = threading.Event()

    def wrapper(execute, sql, params, many, context):
        if not killed.is_set() and sql.lstrip().upper().startswith(sql_prefix):
            backend_pid = context["connection"].connection.info.backend_pid
            with psycopg.connect(
                host=settings_dict["HOST"], port=settings_dict["PORT"] or 5432,
                user=settings_dict["USER"], dbname=settings_dict["NAME"], autocommit=True,
            ) as killer:
                terminated = killer.execute("SELECT pg_terminate_backend(%s)", [backend_pid]).fetchone()[0]
            assert terminated
            killed.set()
        return execute(sql, params, many, context)

    return wrapper, killed


@pytest.mark.postgresql(reason="a connection killed midway is killed with PostgreSQL's pg_terminate_backend; SQLite has no server connection to kill")
@pytest.mark.django_db(transaction=True)
def test_a_booking_whose_connection_is_killed_midway_leaves_free_gpu_counts_right(client, make_user_and_machine):
    user, machine = make_user_and_machine
    client.force_login(user)
    data = {
        "machine": machine.pk, "gpus": 1, "price_per_hour": "0.40", "query": LLAMA_8B,
        "idempotency_key": uuid.uuid4().hex,
    }
    # Killed after free_gpus was lowered in the booking's transaction, before the booking is written.
    wrapper, killed = _kill_own_connection_before('INSERT INTO "LAUNCHES_BOOKING"')
    with connection.execute_wrapper(wrapper):
        response = client.post(reverse("launches:launch"), data)

    assert killed.is_set()
    assert response.status_code == 503
    assert b"database is not answering right now" in response.content
    connection.close()  # the next query opens a fresh connection
    machine.refresh_from_db()
    assert machine.free_gpus == 2
    assert not Booking.objects.exists()

    # The same form again, once the database is back: it books, once.
    retry = client.post(reverse("launches:launch"), data)
    assert retry.status_code == 303
    machine.refresh_from_db()
    assert machine.free_gpus == 1
    assert Booking.objects.filter(user=user).count() == 1


@pytest.mark.postgresql(reason="a connection killed midway is killed with PostgreSQL's pg_terminate_backend; SQLite has no server connection to kill")
@pytest.mark.django_db(transaction=True)
def test_a_stop_whose_connection_is_killed_midway_keeps_the_booking_running(client, make_user_and_machine):
    from nodelodge.launches.booking import launch

    user, machine = make_user_and_machine
    booking = launch(
        user, machines=[(machine.pk, 1)], shown_price_per_hour=Decimal("0.40"), query_string=LLAMA_8B,
        idempotency_key=uuid.uuid4().hex,
    ).booking
    client.force_login(user)
    # Killed after the booking was marked ended, before its GPUs are given back.
    wrapper, killed = _kill_own_connection_before('UPDATE "CATALOG_MACHINE"')
    with connection.execute_wrapper(wrapper):
        response = client.post(reverse("launches:stop", args=[booking.pk]))

    assert killed.is_set()
    assert response.status_code == 503
    connection.close()
    booking.refresh_from_db()
    machine.refresh_from_db()
    assert booking.is_running
    assert machine.free_gpus == 1


@pytest.fixture
def make_user_and_machine(transactional_db, django_user_model):
    from catalog.services import load_catalog

    from .helpers import add_fleet

    load_catalog(fleet=False)
    fleet = add_fleet()
    machine = fleet["rtx4090"]
    Machine.objects.filter(pk=machine.pk).update(gpu_count=2, free_gpus=2)
    machine.refresh_from_db()
    user = django_user_model.objects.create_user("ada", password="a-long-test-passphrase")
    return user, machine
