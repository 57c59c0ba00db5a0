"""Launches and refreshes at once, each on its own thread and database connection (on PostgreSQL
against row locks, on SQLite against the write lock): whatever the order, a machine never holds
more booked GPUs than it has, and after the last refresh it offers exactly those left."""
from __future__ import annotations

import functools
import uuid
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from catalog.models import Machine, Provider
from nodelodge.launches.booking import launch
from nodelodge.launches.models import Booking
from nodelodge.launches.refusals import LaunchRefused
from nodelodge.refresh.services import refresh_provider
from tests.factories import make_gpu_type, make_language_model
from tests.feeds import feed, record
from tests.helpers import LLAMA_8B as QUERY
from tests.helpers import race_together

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

GPUS = 4
LAUNCHERS = 6
LAUNCHES_EACH = 3
REFRESHES = 8


def test_launches_racing_refreshes_never_book_more_gpus_than_the_machine_has(feed_server):
    make_language_model()
    make_gpu_type()
    provider = Provider.objects.create(name="Alpine Compute", slug="alpine-compute", tier="secure")
    # The feed never sees the console's bookings: every GPU free, every time.
    provider.feed_url = feed_server.serve_json(
        "alpine", feed(provider.slug, [record("m-4", gpu_count=GPUS, free_gpus=GPUS, price_per_gpu_hour="2.49")])
    )
    provider.save()
    assert refresh_provider(provider.pk).status == "ok"
    machine = Machine.objects.get(provider=provider)
    users = [get_user_model().objects.create_user(f"user{index}") for index in range(LAUNCHERS)]
    outcomes: list[str] = []

    def launcher(user):
        for _ in range(LAUNCHES_EACH):
            try:
                launch(
                    user, machines=[(machine.pk, 1)], shown_price_per_hour=Decimal("2.49"),
                    query_string=QUERY, idempotency_key=uuid.uuid4().hex,
                )
                outcomes.append("booked")
            except LaunchRefused as refusal:
                outcomes.append(refusal.code)

    def refresher():
        for _ in range(REFRESHES):
            outcomes.append(f"refresh {refresh_provider(provider.pk).status}")

    race_together([functools.partial(launcher, user) for user in users] + [refresher])

    booked = Booking.objects.filter(machine=machine, status="running")
    assert booked.count() == outcomes.count("booked") == GPUS
    assert outcomes.count("taken") == LAUNCHERS * LAUNCHES_EACH - GPUS
    assert outcomes.count("refresh ok") + outcomes.count("refresh skipped") == REFRESHES
    assert refresh_provider(provider.pk).status == "ok"
    machine.refresh_from_db()
    assert machine.free_gpus == 0
