"""A refresh never undoes a booking: the free GPUs a feed reports are capped by the machine's GPUs
less those its running console bookings hold, whatever the feed says."""
from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from catalog.models import Machine, Provider
from nodelodge.launches.booking import launch
from nodelodge.launches.holding import stop
from nodelodge.launches.refusals import LaunchRefused
from nodelodge.refresh.services import refresh_provider
from tests.factories import make_gpu_type, make_language_model
from tests.feeds import feed, record
from tests.helpers import LLAMA_8B as QUERY

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_gpu_machine(feed_server):
    """A Secure provider whose feed reports one 2-GPU machine with both GPUs free, refreshed once."""
    make_language_model()
    make_gpu_type()
    provider = Provider.objects.create(name="Alpine Compute", slug="alpine-compute", tier="secure")
    provider.feed_url = feed_server.serve_json(
        "alpine", feed(provider.slug, [record("m-2", gpu_count=2, free_gpus=2, price_per_gpu_hour="2.49")])
    )
    provider.save()
    assert refresh_provider(provider.pk).status == "ok"
    return provider, Machine.objects.get(provider=provider, provider_machine_id="m-2")


def book(user, machine):
    return launch(
        user, machines=[(machine.pk, 1)], shown_price_per_hour=Decimal("2.49"), query_string=QUERY,
        idempotency_key=uuid.uuid4().hex,
    )


def free_gpus(machine) -> int:
    machine.refresh_from_db()
    return machine.free_gpus


def test_booking_twice_then_a_refresh_leaves_no_gpu_to_book_a_third_time(two_gpu_machine):
    provider, machine = two_gpu_machine
    user = get_user_model().objects.create_user("ada", "ada@example.com", "a-long-test-passphrase")
    book(user, machine)
    book(user, machine)
    assert free_gpus(machine) == 0

    run = refresh_provider(provider.pk)  # the feed still says both GPUs are free

    assert run.status == "ok", run.error
    assert free_gpus(machine) == 0
    with pytest.raises(LaunchRefused) as refused:
        book(user, machine)
    assert refused.value.code == LaunchRefused.TAKEN
    assert machine.bookings.filter(status="running").count() == 2


def test_after_a_stop_a_refresh_offers_exactly_the_gpu_given_back(two_gpu_machine):
    provider, machine = two_gpu_machine
    user = get_user_model().objects.create_user("ada", "ada@example.com", "a-long-test-passphrase")
    first = book(user, machine).booking
    book(user, machine)
    stop(user, first.pk)
    assert free_gpus(machine) == 1

    assert refresh_provider(provider.pk).status == "ok"

    assert free_gpus(machine) == 1
    book(user, machine)
    with pytest.raises(LaunchRefused):
        book(user, machine)
    assert machine.bookings.filter(status="running").count() == 2


def test_a_feed_reporting_fewer_free_gpus_than_the_bookings_leave_is_believed(feed_server, two_gpu_machine):
    provider, machine = two_gpu_machine
    user = get_user_model().objects.create_user("ada", "ada@example.com", "a-long-test-passphrase")
    book(user, machine)  # 1 of 2 free
    provider.feed_url = feed_server.serve_json(
        "alpine-busy", feed(provider.slug, [record("m-2", gpu_count=2, free_gpus=0, price_per_gpu_hour="2.49")])
    )
    provider.save()

    run = refresh_provider(provider.pk)

    assert run.status == "ok" and (run.updated, run.unchanged) == (1, 0)
    assert free_gpus(machine) == 0


def test_a_machine_reported_smaller_than_its_bookings_keeps_its_gpus_and_offers_nothing(feed_server, two_gpu_machine):
    provider, machine = two_gpu_machine
    user = get_user_model().objects.create_user("ada", "ada@example.com", "a-long-test-passphrase")
    book(user, machine)
    book(user, machine)
    provider.feed_url = feed_server.serve_json(
        "alpine-shrunk", feed(provider.slug, [record("m-2", gpu_count=1, free_gpus=1, price_per_gpu_hour="2.49")])
    )
    provider.save()

    run = refresh_provider(provider.pk)

    # The record contradicts the bookings: held back (tests/refresh/test_feed_conflicts.py).
    assert (run.status, run.held_back) == ("partial", 1), run.error
    machine.refresh_from_db()
    assert (machine.gpu_count, machine.free_gpus) == (2, 0)
