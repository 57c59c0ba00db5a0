"""Overlapping clusters booked at once: on threads against the service, and by 200 clients over HTTP
against the console as production runs it (gunicorn, deploy/gunicorn.conf.py). Whatever the order,
every group is booked whole or not at all, no machine is booked twice, and no two groups that share
machines deadlock (each locks its machines in the order of their ids)."""
from __future__ import annotations

import http.client
import json
import shutil
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from django.db import connection

from catalog.models import Machine
from nodelodge.accounts import tokens
from nodelodge.launches.booking import LaunchOutcome, launch
from nodelodge.launches.holding import StopOutcome, end_expired_bookings, stop
from nodelodge.launches.models import Booking, LaunchGroup
from nodelodge.launches.refusals import GroupRefused
from tests.hardening.helpers import production_env
from tests.hardening.servers import Gunicorn, temporary_folder
from tests.helpers import LLAMA_8B as QUERY
from tests.helpers import race_outcomes

pytestmark = pytest.mark.django_db(transaction=True)

MACHINE_PRICE = Decimal("19.92")  # 8 × $2.49


def window(machines, start: int, size: int, reverse: bool) -> list:
    """`size` machines from `start` on, wrapping around; in the client's own order."""
    chosen = [machines[(start + offset) % len(machines)] for offset in range(size)]
    return list(reversed(chosen)) if reverse else chosen


def assert_every_group_whole_and_no_machine_booked_twice(machines, asked: dict[int, list[int]]) -> int:
    """`asked`: each group's machine ids as its client asked for them. Returns how many were booked."""
    groups = list(LaunchGroup.objects.all())
    for group in groups:
        booked = sorted(group.bookings.values_list("machine_id", flat=True))
        assert booked == sorted(asked[group.pk]), (group.pk, booked)  # whole: every machine asked, no other
    assert not Booking.objects.filter(group__isnull=True).exists()
    for machine in Machine.objects.filter(pk__in=[m.pk for m in machines]):
        running = list(Booking.objects.filter(machine=machine, status="running").values_list("gpus", flat=True))
        assert len(running) <= 1, machine.provider_machine_id  # a cluster takes a machine whole: once
        assert machine.free_gpus == machine.gpu_count - sum(running), machine.provider_machine_id
    return len(groups)


@pytest.mark.parametrize("round_number", range(3))
def test_threads_booking_overlapping_clusters_in_opposite_orders_never_leave_a_partial_one(
    cluster_catalog, make_user, round_number
):
    machines = [cluster_catalog.cluster_machine() for _ in range(6)]
    users = [make_user() for _ in range(12)]
    # Windows of three that overlap by two, half asked for in the opposite order.
    asks = [window(machines, index % 6, 3, reverse=index % 2 == 1) for index in range(12)]
    def book(user, ask):
        return lambda: launch(
            user, machines=[(m.pk, 8) for m in ask], shown_price_per_hour=3 * MACHINE_PRICE,
            query_string=QUERY, idempotency_key=uuid.uuid4().hex, kind="cluster",
        )

    results = race_outcomes([book(user, ask) for user, ask in zip(users, asks, strict=True)])

    booked = [r for r in results if isinstance(r, LaunchOutcome)]
    refused = [r for r in results if isinstance(r, GroupRefused)]
    assert len(booked) + len(refused) == len(asks), results  # no deadlock, no other error
    assert {r.code for r in refused} <= {"taken", "not_whole"}
    assert 1 <= len(booked) <= 2  # two windows of three at most fit six machines
    asked = {outcome.group.pk: [m.pk for m in ask] for outcome, ask in zip(results, asks, strict=True)
             if isinstance(outcome, LaunchOutcome)}
    assert assert_every_group_whole_and_no_machine_booked_twice(machines, asked) == len(booked)


def _database_url() -> str:
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    return f"postgres://{settings['USER']}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}/{settings['NAME']}"


@pytest.fixture
def console():
    """The console as production runs it (gunicorn's sync workers, DEBUG off) on the test database."""
    folder = temporary_folder()
    env = production_env(DATABASE_URL=_database_url(), ALLOWED_HOSTS="127.0.0.1", TRUSTED_PROXY_COUNT="1",
                         API_RATE_LIMIT="off", LOG_LEVEL="CRITICAL")
    # Only the API is asked, whose answers name no static file: no collectstatic before the start.
    server = Gunicorn(folder, env, workers=4, collect_static=False)
    yield server
    server.stop()
    shutil.rmtree(folder, ignore_errors=True)


CLIENTS = 200


def test_200_clients_booking_overlapping_clusters_over_http_never_leave_a_partial_cluster(
    cluster_catalog, make_user, console
):
    machines = [cluster_catalog.cluster_machine() for _ in range(24)]
    users = [make_user() for _ in range(CLIENTS)]
    keys = [tokens.create_token(user)[1] for user in users]
    # Clusters of two to four machines starting every five machines: each overlaps others.
    asks = [window(machines, (index * 5) % 24, 2 + index % 3, reverse=index % 2 == 1) for index in range(CLIENTS)]
    bodies = [
        json.dumps({
            "kind": "cluster", "machines": [{"id": m.pk, "gpus": 8} for m in ask],
            "price_per_hour": str(len(ask) * MACHINE_PRICE), "query": dict(p.split("=") for p in QUERY.split("&")),
            "idempotency_key": uuid.uuid4().hex,
        })
        for ask in asks
    ]
    # Every client connects first, then all send at once.
    conns = [http.client.HTTPConnection("127.0.0.1", console.port, timeout=120) for _ in range(CLIENTS)]
    for conn in conns:
        conn.connect()
    barrier = threading.Barrier(CLIENTS)

    def client(index: int) -> tuple[int, dict]:
        conn = conns[index]
        try:
            barrier.wait(timeout=60)
            conn.request("POST", "/api/v1/launches/group", body=bodies[index], headers={
                "Host": "127.0.0.1", "Content-Type": "application/json", "X-Forwarded-Proto": "https",
                "Authorization": f"Bearer {keys[index]}",
            })
            response = conn.getresponse()
            return response.status, json.loads(response.read())
        finally:
            conn.close()

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        answers = list(pool.map(client, range(CLIENTS)))

    statuses = [status for status, _ in answers]
    assert set(statuses) <= {201, 409}, [a for a in answers if a[0] not in (201, 409)][:3]
    booked = {answer["id"]: [m.pk for m in ask] for (status, answer), ask in zip(answers, asks, strict=True)
              if status == 201}
    assert booked  # someone got a cluster
    for (status, answer), ask in zip(answers, asks, strict=True):
        if status == 409:  # refused naming one of its own machines, already taken
            assert answer["code"] in {"taken", "not_whole"}, answer
            assert answer["machine_id"] in {m.pk for m in ask}
            assert answer["provider_machine_id"] in answer["errors"]["group"]
        else:
            assert sorted(b["machine_id"] for b in answer["bookings"]) == sorted(m.pk for m in ask)
    assert assert_every_group_whole_and_no_machine_booked_twice(machines, booked) == len(booked)
    assert Booking.objects.count() == sum(len(ask) for ask in booked.values())


@pytest.mark.parametrize("round_number", range(3))
def test_stop_racing_the_booking_limit_ends_the_group_once_without_deadlock(cluster_catalog, make_user, round_number):
    from datetime import timedelta

    from django.utils import timezone

    user = make_user()
    machines = [cluster_catalog.cluster_machine(booking_limit_hours=5) for _ in range(4)]
    now = timezone.now()
    group = launch(
        user, machines=[(m.pk, 8) for m in machines], shown_price_per_hour=4 * MACHINE_PRICE,
        query_string=QUERY, idempotency_key=uuid.uuid4().hex, kind="cluster", now=now - timedelta(hours=6),
    ).group
    calls = [lambda: end_expired_bookings(now=now), lambda: stop(user, group_id=group.pk)] * 4
    results = race_outcomes(calls)

    assert not [r for r in results if isinstance(r, Exception)], results
    ended = sum(r for r in results if isinstance(r, int)) + sum(
        len(r.bookings) for r in results if isinstance(r, StopOutcome) and r.stopped)
    assert ended == 4  # each booking ended once, by whichever came first
    assert set(group.bookings.values_list("status", flat=True)) == {"ended"}
    assert [m.free_gpus for m in Machine.objects.filter(pk__in=[m.pk for m in machines])] == [8, 8, 8, 8]


def test_the_same_key_submitted_at_once_books_the_group_once(cluster_catalog, make_user):
    user = make_user()
    machines = [cluster_catalog.cluster_machine() for _ in range(3)]
    key = uuid.uuid4().hex
    barrier = threading.Barrier(12)

    def book(_index):
        try:
            barrier.wait(timeout=30)
            return launch(
                user, machines=[(m.pk, 8) for m in machines], shown_price_per_hour=3 * MACHINE_PRICE,
                query_string=QUERY, idempotency_key=key, kind="cluster",
            )
        except Exception as error:  # the outcome under test
            return error
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(book, range(12)))

    assert all(isinstance(r, LaunchOutcome) for r in results), results
    assert sum(r.created for r in results) == 1 and len({r.group.pk for r in results}) == 1
    assert LaunchGroup.objects.count() == 1 and Booking.objects.count() == 3
    assert [m.free_gpus for m in Machine.objects.filter(pk__in=[m.pk for m in machines])] == [0, 0, 0]
