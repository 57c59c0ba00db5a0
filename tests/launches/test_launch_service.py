"""Launch and Stop as services: what a booking records, every re-check refusal, idempotency, and
free-GPU counts that stay right when something fails midway."""
from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db.models.signals import post_save
from django.utils import timezone

from catalog import services as catalog_services
from catalog.models import Machine
from nodelodge.launches.booking import launch
from nodelodge.launches.holding import BookingNotFound, stop
from nodelodge.launches.models import Booking
from nodelodge.launches.refusals import LaunchRefused
from tests.helpers import LLAMA_8B as QUERY


def key() -> str:
    return uuid.uuid4().hex


def book(user, machine, gpus=1, price="2.49", query=QUERY, idempotency_key=None):
    return launch(
        user, machines=[(machine.pk, gpus)], shown_price_per_hour=Decimal(price), query_string=query,
        idempotency_key=idempotency_key or key(),
    )


def refusal_of(user, machine, **kwargs) -> LaunchRefused:
    with pytest.raises(LaunchRefused) as caught:
        book(user, machine, **kwargs)
    return caught.value


def test_launch_books_the_gpus_and_records_what_was_shown(small_catalog, make_user):
    user = make_user()
    machine = small_catalog.machine(free_gpus=2, price_per_gpu_hour=Decimal("2.4900"))
    before = timezone.now()

    outcome = book(user, machine, query=QUERY + "&budget=100")

    booking = outcome.booking
    assert outcome.created
    assert booking.user == user and booking.machine_id == machine.pk and booking.gpus == 1
    assert booking.price_per_gpu_hour == Decimal("2.49") and booking.price_per_hour == Decimal("2.49")
    assert booking.status == Booking.Status.RUNNING and booking.ended_at is None
    assert booking.started_at >= before
    assert booking.workload["model"] == "llama-3-1-8b" and booking.workload["budget"] == "100"
    assert booking.result_url.startswith("/?") and "model=llama-3-1-8b" in booking.result_url
    # $100 at $2.49/h lasts 40.16 h (rounded down).
    assert booking.hours_covered == Decimal("40.16")
    machine.refresh_from_db()
    assert machine.free_gpus == 1


def test_hours_covered_are_capped_by_the_booking_limit(small_catalog, make_user):
    machine = small_catalog.machine(booking_limit_hours=24)
    booking = book(make_user(), machine, query=QUERY + "&budget=100").booking
    assert booking.hours_covered == Decimal("24")
    assert booking.booking_limit_hours == 24


def test_without_a_budget_hours_covered_stay_empty(small_catalog, make_user):
    booking = book(make_user(), small_catalog.machine()).booking
    assert booking.hours_covered is None


def test_the_same_key_twice_books_once(small_catalog, make_user):
    user = make_user()
    machine = small_catalog.machine(free_gpus=2)
    same_key = key()

    first = book(user, machine, idempotency_key=same_key)
    second = book(user, machine, idempotency_key=same_key)

    assert first.created and not second.created
    assert second.booking.pk == first.booking.pk
    assert Booking.objects.count() == 1
    machine.refresh_from_db()
    assert machine.free_gpus == 1


def test_two_users_may_use_the_same_key(small_catalog, make_user):
    machine = small_catalog.machine(free_gpus=2)
    shared = key()
    book(make_user(), machine, idempotency_key=shared)
    book(make_user(), machine, idempotency_key=shared)
    assert Booking.objects.count() == 2


def test_a_machine_that_went_offline_is_refused(small_catalog, make_user):
    machine = small_catalog.machine(is_available=False)
    refusal = refusal_of(make_user(), machine)
    assert refusal.code == LaunchRefused.OFFLINE
    assert "went offline or out of stock" in refusal.message


def test_a_machine_gone_from_the_feed_is_refused(small_catalog, make_user):
    machine = small_catalog.machine(gone_at=timezone.now())
    refusal = refusal_of(make_user(), machine)
    assert refusal.code == LaunchRefused.GONE
    assert refusal.message == "This machine is no longer offered by its provider."


def test_a_machine_not_heard_from_recently_is_refused(small_catalog, make_user, settings):
    settings.MACHINE_STALE_AFTER_SECONDS = 15 * 60
    machine = small_catalog.machine(last_seen_at=timezone.now() - timedelta(minutes=16))
    refusal = refusal_of(make_user(), machine)
    assert refusal.code == LaunchRefused.STALE
    assert "not been heard from for over 15 minutes" in refusal.message


def test_a_machine_whose_gpus_were_taken_is_refused_at_once_back_to_the_result(small_catalog, make_user):
    taken = small_catalog.machine(free_gpus=0, price_per_gpu_hour=Decimal("2.49"))
    small_catalog.machine(free_gpus=1, price_per_gpu_hour=Decimal("3.10"))

    refusal = refusal_of(make_user(), taken)

    assert refusal.code == LaunchRefused.TAKEN
    assert "no longer has 1 free GPU" in refusal.message
    # No booking holds its GPU: the provider's feed took it, and the refusal says so.
    assert "its provider's feed reports fewer free GPUs" in refusal.message
    assert "someone else" not in refusal.message
    # Refused on one cheap read: no recommendation is computed for the loser of a race; the result
    # it leads back to lists the next-cheapest machine.
    assert refusal.alternative is None
    assert refusal.result_url.startswith("/?")


def test_a_workload_that_no_longer_fits_is_refused_with_the_next_cheapest(small_catalog, make_user):
    machine = small_catalog.machine(free_gpus=2, price_per_gpu_hour=Decimal("2.49"))
    dearer = small_catalog.machine(free_gpus=1, price_per_gpu_hour=Decimal("3.10"))
    small_catalog.machine(free_gpus=1, price_per_gpu_hour=Decimal("4.00"))

    # The page offered 2 GPUs; the workload takes 1 now: the machine could be booked, so the
    # refusal under the lock offers the next-cheapest machine that fits.
    refusal = refusal_of(make_user(), machine, gpus=2, price="4.98")

    assert refusal.code == LaunchRefused.NO_LONGER_FITS
    assert refusal.alternative is not None
    assert refusal.alternative.offer.id == dearer.pk
    assert refusal.alternative.hourly_price == Decimal("3.10")


def test_a_changed_price_is_refused_with_both_prices(small_catalog, make_user):
    machine = small_catalog.machine(price_per_gpu_hour=Decimal("2.7500"))
    refusal = refusal_of(make_user(), machine, price="2.49")
    assert refusal.code == LaunchRefused.PRICE_CHANGED
    assert refusal.message == "The price changed from $2.49/h to $2.75/h; check and launch again."
    assert refusal.new_price_per_hour == Decimal("2.75")
    assert not Booking.objects.exists()
    machine.refresh_from_db()
    assert machine.free_gpus == 2


def test_the_exact_price_shown_books_and_a_rounded_one_is_a_different_price(small_catalog, make_user):
    machine = small_catalog.machine(price_per_gpu_hour=Decimal("1.8950"))
    refusal = refusal_of(make_user(), machine, gpus=1, price="1.90")
    assert refusal.code == LaunchRefused.PRICE_CHANGED and "$1.895/h" in refusal.message
    outcome = book(make_user(), machine, gpus=1, price="1.895")
    assert outcome.created and outcome.booking.price_per_hour == Decimal("1.895")


def test_a_machine_whose_memory_was_lowered_no_longer_fits(small_catalog, make_user):
    # 16,000 MiB per GPU cannot hold the 8B model's ~19.8 GiB on one GPU.
    machine = small_catalog.machine(memory_per_gpu_mib=16_000, free_gpus=1, gpu_count=1)
    refusal = refusal_of(make_user(), machine)
    assert refusal.code == LaunchRefused.NO_LONGER_FITS
    assert "no longer fits" in refusal.message


def test_a_fit_that_now_needs_more_gpus_is_refused(small_catalog, make_user):
    # Two 16,000 MiB GPUs hold it split in two, but the page offered one GPU.
    machine = small_catalog.machine(memory_per_gpu_mib=16_000, free_gpus=2)
    refusal = refusal_of(make_user(), machine, gpus=1)
    assert refusal.code == LaunchRefused.NO_LONGER_FITS
    assert "now takes 2 GPUs, not 1" in refusal.message


def test_a_machine_outside_the_chosen_countries_is_refused(small_catalog, make_user):
    machine = small_catalog.machine(country="US")
    refusal = refusal_of(make_user(), machine, query=QUERY + "&countries=DE,FR")
    assert refusal.code == LaunchRefused.OUTSIDE_COUNTRIES


def test_an_invalid_query_is_refused(small_catalog, make_user):
    machine = small_catalog.machine()
    refusal = refusal_of(make_user(), machine, query="workload=inference&model=llama-3-1-8b&precision=3")
    assert refusal.code == LaunchRefused.INVALID_QUERY
    assert "precision" in refusal.message


def test_a_booking_interrupted_midway_leaves_free_gpu_counts_right(small_catalog, make_user):
    machine = small_catalog.machine(free_gpus=2)

    def fail_after_the_decrement(sender, instance, created, **kwargs):
        raise RuntimeError("storage failed")

    post_save.connect(fail_after_the_decrement, sender=Booking, dispatch_uid="interrupt-booking")
    try:
        with pytest.raises(RuntimeError, match="storage failed"):
            book(make_user(), machine)
    finally:
        post_save.disconnect(sender=Booking, dispatch_uid="interrupt-booking")

    machine.refresh_from_db()
    assert machine.free_gpus == 2
    assert not Booking.objects.exists()


def test_stop_ends_the_booking_and_frees_its_gpus(small_catalog, make_user):
    user = make_user()
    machine = small_catalog.machine(free_gpus=2)
    booking = book(user, machine).booking

    outcome = stop(user, booking.pk)

    assert outcome.stopped
    booking.refresh_from_db()
    assert booking.status == Booking.Status.ENDED and booking.ended_at is not None
    machine.refresh_from_db()
    assert machine.free_gpus == 2


def test_stop_twice_frees_the_gpus_once(small_catalog, make_user):
    user = make_user()
    machine = small_catalog.machine(free_gpus=2)
    booking = book(user, machine).booking
    book(make_user(), machine)  # another user holds the other GPU

    stop(user, booking.pk)
    again = stop(user, booking.pk)

    assert not again.stopped
    machine.refresh_from_db()
    assert machine.free_gpus == 1


def test_stop_never_frees_more_gpus_than_the_machine_has(small_catalog, make_user):
    user = make_user()
    machine = small_catalog.machine(gpu_count=2, free_gpus=2)
    booking = book(user, machine).booking
    # A provider refresh already reported every GPU free again.
    Machine.objects.filter(pk=machine.pk).update(free_gpus=2)

    stop(user, booking.pk)

    machine.refresh_from_db()
    assert machine.free_gpus == 2


def test_another_users_booking_cannot_be_stopped(small_catalog, make_user):
    owner, other = make_user(), make_user()
    machine = small_catalog.machine(free_gpus=2)
    booking = book(owner, machine).booking

    with pytest.raises(BookingNotFound):
        stop(other, booking.pk)

    booking.refresh_from_db()
    assert booking.is_running
    machine.refresh_from_db()
    assert machine.free_gpus == 1


def test_cost_so_far_is_hours_elapsed_times_price(small_catalog, make_user):
    booking = book(make_user(), small_catalog.machine(), price="2.49").booking
    later = booking.started_at + timedelta(minutes=90)
    assert booking.cost_so_far(later) == Decimal("3.735")  # 1.5 h × $2.49, shown as $3.735


def test_cost_so_far_stops_at_the_booking_limit(small_catalog, make_user):
    booking = book(make_user(), small_catalog.machine(booking_limit_hours=2)).booking
    later = booking.started_at + timedelta(hours=5)
    assert booking.cost_so_far(later) == Decimal("4.98")


def test_a_machine_of_unknown_location_is_refused_even_with_no_country_chosen(small_catalog, make_user):
    machine = small_catalog.machine(country="")
    refusal = refusal_of(make_user(), machine)
    assert refusal.code == LaunchRefused.OUTSIDE_COUNTRIES and "unknown location" in refusal.message


def test_a_machine_of_a_deactivated_provider_is_refused_as_offline(small_catalog, make_user):
    machine = small_catalog.machine()
    small_catalog.provider.is_active = False
    catalog_services.save_provider(small_catalog.provider)
    assert refusal_of(make_user(), machine).code == LaunchRefused.OFFLINE


def test_beat_ends_bookings_that_reached_their_limit_and_only_those(small_catalog, make_user):
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from nodelodge.launches.tasks import END_EXPIRED_BOOKINGS, end_expired_bookings

    user = make_user("ada")
    limited = small_catalog.machine(booking_limit_hours=5, gpu_count=4, free_gpus=4)
    unlimited = small_catalog.machine(booking_limit_hours=None)
    now = timezone.now()
    due = launch(
        user, machines=[(limited.pk, 1)], shown_price_per_hour=limited.price_per_gpu_hour, query_string=QUERY,
        idempotency_key="key-due-0001", now=now - timedelta(hours=6),
    ).booking
    running = launch(
        user, machines=[(limited.pk, 1)], shown_price_per_hour=limited.price_per_gpu_hour, query_string=QUERY,
        idempotency_key="key-running-01", now=now - timedelta(hours=4),
    ).booking
    endless = launch(
        user, machines=[(unlimited.pk, 1)], shown_price_per_hour=unlimited.price_per_gpu_hour,
        query_string=QUERY, idempotency_key="key-endless-1", now=now - timedelta(hours=600),
    ).booking
    assert END_EXPIRED_BOOKINGS in {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert end_expired_bookings.apply().get() == 1
    for booking in (due, running, endless):
        booking.refresh_from_db()
    assert due.status == "ended" and due.ended_at == due.started_at + timedelta(hours=5)
    assert running.is_running and endless.is_running
    assert Machine.objects.get(pk=limited.pk).free_gpus == 3
    assert end_expired_bookings() == 0  # a second run changes nothing


def test_a_refused_launch_costs_three_statements_and_computes_no_recommendation(
    small_catalog, make_user, django_assert_max_num_queries, monkeypatch
):
    from nodelodge.launches import alternatives, refusals

    user = make_user()
    taken = small_catalog.machine(free_gpus=0)
    small_catalog.machine(price_per_gpu_hour=Decimal("3.10"))
    computed = []
    for module, name in ((refusals, "estimate_for"), (alternatives, "recommendation_for")):
        real = getattr(module, name)
        monkeypatch.setattr(
            module, name, lambda *a, real=real, name=name, **k: computed.append(name) or real(*a, **k)
        )

    # The idempotency key, the query's model, the machine: the loser of a race is refused on these
    # three reads (12 statements and a whole recommendation before).
    with django_assert_max_num_queries(3):
        refusal = refusal_of(user, taken)

    assert refusal.code == LaunchRefused.TAKEN
    assert computed == []


def test_a_refusal_says_someone_else_booked_only_when_a_booking_holds_the_gpus(small_catalog, make_user):
    machine = small_catalog.machine(gpu_count=1, free_gpus=1, price_per_gpu_hour=Decimal("2.49"))
    book(make_user(), machine)  # someone else, first
    refusal = refusal_of(make_user(), machine)
    assert refusal.code == LaunchRefused.TAKEN
    assert "someone else booked first" in refusal.message and "feed" not in refusal.message


def test_a_refusal_by_the_providers_feed_says_the_feed(small_catalog, make_user):
    machine = small_catalog.machine(gpu_count=8, free_gpus=2, price_per_gpu_hour=Decimal("2.49"))
    book(make_user(), machine)  # one GPU booked; the feed then reports none free
    type(machine).objects.filter(pk=machine.pk).update(free_gpus=0)
    refusal = refusal_of(make_user(), machine, gpus=2)
    assert "its provider's feed reports fewer free GPUs since the result" in refusal.message
    assert "someone else" not in refusal.message
