"""Launch and the proxy's deadline (nodelodge/hardening/deadline.py): a Launch whose client nginx has
already answered 504 books nothing, checked before the view and again right before the commit."""
from __future__ import annotations

import time
import uuid
from decimal import Decimal

import pytest
from django.urls import reverse

from catalog.models import Machine
from nodelodge.hardening import deadline
from nodelodge.launches.booking import launch
from nodelodge.launches.models import Booking
from tests.helpers import LLAMA_8B as QUERY
from tests.helpers import started


def test_a_launch_whose_deadline_passes_while_it_works_books_nothing(
    client, behind_nginx, small_catalog, make_user, monkeypatch
):
    client.force_login(make_user())
    machine = small_catalog.machine(free_gpus=2)
    start = time.time()
    # The middleware reads the clock once and finds the request in time; by the time the booking
    # is about to commit (a wait in the server's queue, on the machine's lock) the deadline passed.
    clock = iter([start + 1])
    monkeypatch.setattr(deadline.time, "time", lambda: next(clock, start + 100))
    data = {"machine": machine.pk, "gpus": 1, "price_per_hour": "2.49", "query": QUERY,
            "idempotency_key": uuid.uuid4().hex}

    response = client.post(reverse("launches:launch"), data, headers={"X-Request-Start": f"t={start:.3f}"})

    assert response.status_code == 503 and response["Retry-After"] == "10"
    assert not Booking.objects.exists()
    assert Machine.objects.get(pk=machine.pk).free_gpus == 2


def test_a_launch_past_its_deadline_books_nothing_and_one_in_time_books(small_catalog, make_user):
    user = make_user()
    machine = small_catalog.machine(free_gpus=2)

    with deadline.request_deadline(time.time() - 1), pytest.raises(deadline.DeadlinePassed):
        launch(
            user, machines=[(machine.pk, 1)], shown_price_per_hour=Decimal("2.49"), query_string=QUERY,
            idempotency_key=uuid.uuid4().hex,
        )
    assert not Booking.objects.exists()
    assert Machine.objects.get(pk=machine.pk).free_gpus == 2

    with deadline.request_deadline(time.time() + 60):
        launch(
            user, machines=[(machine.pk, 1)], shown_price_per_hour=Decimal("2.49"), query_string=QUERY,
            idempotency_key=uuid.uuid4().hex,
        )
    assert Booking.objects.count() == 1
    assert Machine.objects.get(pk=machine.pk).free_gpus == 1


def test_a_launch_posted_past_the_deadline_is_dropped_before_it_books(
    client, behind_nginx, small_catalog, make_user
):
    client.force_login(make_user())
    machine = small_catalog.machine(free_gpus=2)
    data = {"machine": machine.pk, "gpus": 1, "price_per_hour": "2.49", "query": QUERY,
            "idempotency_key": uuid.uuid4().hex}
    response = client.post(reverse("launches:launch"), data, headers=started(90))
    assert response.status_code == 503
    assert not Booking.objects.exists()


def test_a_launch_past_its_own_deadline_books_nothing_without_any_proxy(
    client, settings, small_catalog, make_user
):
    client.force_login(make_user())
    machine = small_catalog.machine(free_gpus=2)
    data = {"machine": machine.pk, "gpus": 1, "price_per_hour": "2.49", "query": QUERY,
            "idempotency_key": uuid.uuid4().hex}
    settings.REQUEST_WORK_SECONDS = 0
    response = client.post(reverse("launches:launch"), data)
    assert response.status_code == 503 and response["Retry-After"] == "10"
    assert not Booking.objects.exists()
    assert Machine.objects.get(pk=machine.pk).free_gpus == 2
    settings.REQUEST_WORK_SECONDS = 20
    assert client.post(reverse("launches:launch"), data).status_code == 303
    assert Booking.objects.count() == 1
