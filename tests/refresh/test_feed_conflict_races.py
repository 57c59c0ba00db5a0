"""Launches and a feed that shrinks the machine they book, at once, each on its own thread and database
connection (on PostgreSQL against row locks, on SQLite against the write lock): whatever the order,
the machine never has fewer GPUs than its running bookings hold, never offers one of them, and a
record that contradicts the bookings is held back and flagged, or applies in full when none holds."""
from __future__ import annotations

import functools
import threading
import uuid
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from catalog.models import Machine, Provider
from nodelodge.launches.booking import launch
from nodelodge.launches.holding import stop
from nodelodge.launches.models import Booking
from nodelodge.launches.refusals import LaunchRefused
from nodelodge.refresh import services as refresh
from nodelodge.refresh.models import FeedConflict
from tests.factories import make_gpu_type, make_language_model
from tests.feeds import feed, record
from tests.helpers import LLAMA_8B as QUERY
from tests.helpers import race_together

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

GPUS = 4
LAUNCHERS = 6
LAUNCHES_EACH = 3
REFRESHES = 8


@pytest.fixture
def shrinking(feed_server):
    """A 4-GPU machine, all free, whose provider's feed now reports it with 1 GPU, free."""
    make_language_model()
    make_gpu_type()
    provider = Provider.objects.create(name="Fjord Compute", slug="fjord-compute", tier="secure")
    provider.feed_url = feed_server.serve_json(
        "whole", feed(provider.slug, [record("osl-4", gpu_count=GPUS, free_gpus=GPUS, price_per_gpu_hour="2.49")])
    )
    provider.save()
    assert refresh.refresh_provider(provider.pk).status == "ok"
    provider.feed_url = feed_server.serve_json(
        "shrunk", feed(provider.slug, [record("osl-4", gpu_count=1, free_gpus=1, price_per_gpu_hour="2.49")])
    )
    provider.save()
    return provider, Machine.objects.get(provider=provider)


def book(user, machine) -> str:
    try:
        launch(
            user, machines=[(machine.pk, 1)], shown_price_per_hour=Decimal("2.49"), query_string=QUERY,
            idempotency_key=uuid.uuid4().hex,
        )
        return "booked"
    except LaunchRefused as refusal:
        return refusal.code


def held(machine) -> int:
    return sum(Booking.objects.filter(machine=machine, status="running").values_list("gpus", flat=True))


def test_launches_committed_between_the_refreshs_read_and_its_write_keep_the_machine_they_booked(
    shrinking, monkeypatch
):
    provider, machine = shrinking
    users = [get_user_model().objects.create_user(f"user{index}") for index in range(2)]
    read_bookings = refresh.gpus_held
    outcomes = []

    def read_then_two_launches_commit(machines):
        """The refresh's first read of the bookings (none), then two Launches on their own connection
        commit before it writes."""
        before = read_bookings(machines)
        if not outcomes:
            def launch_twice():
                try:
                    outcomes.extend(book(user, machine) for user in users)
                finally:
                    connection.close()

            thread = threading.Thread(target=launch_twice)
            thread.start()
            thread.join(timeout=60)
        return before

    monkeypatch.setattr(refresh, "gpus_held", read_then_two_launches_commit)

    run = refresh.refresh_provider(provider.pk)

    assert outcomes == ["booked", "booked"]
    assert (run.status, run.held_back) == ("partial", 1), run.error
    machine.refresh_from_db()
    assert (machine.gpu_count, machine.free_gpus, held(machine)) == (GPUS, 0, 2)
    assert FeedConflict.objects.get(machine=machine).held_gpus == 2


def test_launches_racing_shrinking_refreshes_end_consistent(shrinking):
    provider, machine = shrinking
    users = [get_user_model().objects.create_user(f"user{index}") for index in range(LAUNCHERS)]
    outcomes: list[str] = []

    def launcher(user):
        for _ in range(LAUNCHES_EACH):
            outcomes.append(book(user, machine))

    def refresher():
        for _ in range(REFRESHES):
            outcomes.append(f"refresh {refresh.refresh_provider(provider.pk).status}")

    race_together([functools.partial(launcher, user) for user in users] + [refresher])

    # No refresh failed (a deadlock, a constraint), every Launch booked or was refused as taken.
    refreshes = [outcome for outcome in outcomes if outcome.startswith("refresh")]
    assert len(refreshes) == REFRESHES and set(refreshes) <= {"refresh ok", "refresh partial", "refresh skipped"}
    booked = outcomes.count("booked")
    assert booked + outcomes.count("taken") == LAUNCHERS * LAUNCHES_EACH, outcomes
    assert 1 <= booked == held(machine) <= GPUS

    last = refresh.refresh_provider(provider.pk)
    machine.refresh_from_db()
    if booked > 1:  # the bookings came first: the record contradicts them, held back
        assert (last.status, last.held_back) == ("partial", 1)
        assert (machine.gpu_count, machine.free_gpus) == (GPUS, 0)
        assert FeedConflict.objects.get(machine=machine).held_gpus == booked
    else:  # the shrink came first (or one booking fits the 1 GPU): applied in full
        assert (last.status, last.held_back) == ("ok", 0)
        assert (machine.gpu_count, machine.free_gpus) == (1, 0)
        assert not FeedConflict.objects.exists()

    # Once every booking has ended, the record applies in full.
    for booking in Booking.objects.filter(machine=machine, status="running"):
        stop(booking.user, booking.pk)
    assert refresh.refresh_provider(provider.pk).status == "ok"
    machine.refresh_from_db()
    assert (machine.gpu_count, machine.free_gpus) == (1, 1)
    assert not FeedConflict.objects.exists()
