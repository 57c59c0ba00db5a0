"""Auto-Launch: the cheapest match at most $X/h, booked once through Launch's own service, never above
the cap; a price change between match and booking refuses and leaves the watch active; at most three
running auto-launched bookings per user; the booking's e-mail."""
from decimal import Decimal

import pytest
from django.core import mail

from catalog.models import Machine
from nodelodge.launches.models import Booking
from nodelodge.watches import auto, evaluation
from nodelodge.watches.evaluation import evaluate_watches
from nodelodge.watches.models import Firing, Watch
from nodelodge.watches.services import WatchRequest, create_watch
from tests.factories import make_user
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db(transaction=True)
QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))


@pytest.fixture(autouse=True)
def firings_only(monkeypatch):
    """Each test runs the auto-launch of the firing itself, after the evaluation."""
    monkeypatch.setattr(evaluation, "_queue_delivery", lambda firing_id: None)


def auto_watch(owner=None, cap="3.00") -> Watch:
    return create_watch(owner or make_user(), WatchRequest(
        query=QUERY, email=False, auto_launch=True, auto_launch_max_price=cap,
    ))


def fire(watch) -> Firing:
    evaluate_watches()
    return Firing.objects.filter(watch=watch).latest("fired_at")


def test_the_cheapest_match_under_the_cap_is_booked_once_and_mailed(catalog):
    watch = auto_watch()
    catalog.machine(provider_machine_id="dear", price_per_gpu_hour=Decimal("2.90"))
    cheap = catalog.machine(provider_machine_id="cheap", price_per_gpu_hour=Decimal("2.49"))
    firing = fire(watch)

    outcome = auto.launch_for(firing.pk)
    again = auto.launch_for(firing.pk)

    booking = Booking.objects.get()
    assert (booking.machine_id, booking.price_per_hour, booking.user_id) == (cheap.pk, Decimal("2.4900"), watch.owner_id)
    assert outcome == {"watch": watch.pk, "booked": booking.pk, "refused": None}
    assert again["booked"] == booking.pk and again["refused"] == "already booked"
    assert Watch.objects.get(pk=watch.pk).auto_launch_booking_id == booking.pk
    [message] = mail.outbox
    assert message.subject == "Node Lodge: your watch booked a machine"
    assert "Your watch booked 1 GPU(s) on cheap at $2.49/h." in message.body


def test_matches_all_above_the_cap_book_nothing(catalog):
    watch = auto_watch(cap="2.00")
    catalog.machine(price_per_gpu_hour=Decimal("2.49"))

    outcome = auto.launch_for(fire(watch).pk)

    assert outcome["booked"] is None and "cap of $2.00/h" in outcome["refused"]
    assert not Booking.objects.exists()


def test_a_price_change_between_match_and_booking_refuses_and_the_watch_stays_active(catalog):
    watch = auto_watch(cap="3.00")
    machine = catalog.machine(price_per_gpu_hour=Decimal("2.49"))
    firing = fire(watch)
    Machine.objects.filter(pk=machine.pk).update(price_per_gpu_hour=Decimal("3.50"))

    outcome = auto.launch_for(firing.pk)

    assert outcome["booked"] is None and "The price changed" in outcome["refused"]
    assert not Booking.objects.exists()
    watch.refresh_from_db()
    assert watch.is_active and watch.auto_launch_booking_id is None
    assert "The price changed" in watch.auto_launch_refusal


def test_a_price_drop_still_books_only_at_the_price_matched(catalog):
    """The booking is at the matched price or refused: a cheaper price now is a change too, so nothing
    is ever booked at a price the cap was not compared with."""
    watch = auto_watch(cap="3.00")
    machine = catalog.machine(price_per_gpu_hour=Decimal("2.49"))
    firing = fire(watch)
    Machine.objects.filter(pk=machine.pk).update(price_per_gpu_hour=Decimal("2.00"))

    assert auto.launch_for(firing.pk)["booked"] is None
    assert not Booking.objects.exists()


def test_at_most_three_running_auto_launches_per_user(catalog):
    owner = make_user()
    watches = [create_watch(owner, WatchRequest(
        query={**QUERY, "context": str(4096 + n)}, email=False, auto_launch=True, auto_launch_max_price="3",
    )) for n in range(4)]
    for _ in range(4):
        catalog.machine(price_per_gpu_hour=Decimal("2.49"))
    evaluate_watches()

    outcomes = [auto.launch_for(Firing.objects.get(watch=w).pk) for w in watches]

    assert [bool(o["booked"]) for o in outcomes] == [True, True, True, False]
    assert outcomes[3]["refused"] == "3 auto-launched bookings are running already."
    assert Booking.objects.filter(user=owner, status="running").count() == 3
