"""Auto-Launch racing a user's manual Launch for the last GPU, each on its own thread and database
connection: exactly one booking, whichever wins; the loser is refused and books nothing."""
import uuid
from decimal import Decimal

import pytest

from catalog.models import Machine
from nodelodge.launches.booking import LaunchOutcome, launch
from nodelodge.launches.models import Booking
from nodelodge.launches.refusals import LaunchRefused
from nodelodge.watches import auto, evaluation
from nodelodge.watches.evaluation import evaluate_watches
from nodelodge.watches.models import Firing, Watch
from nodelodge.watches.services import WatchRequest, create_watch
from tests.factories import make_user
from tests.helpers import LLAMA_8B, race_outcomes

pytestmark = pytest.mark.django_db(transaction=True)
QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))
ROUNDS = 5


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_auto_launch_and_a_manual_launch_on_the_last_gpu_book_exactly_one(catalog, monkeypatch, round_):
    monkeypatch.setattr(evaluation, "_queue_delivery", lambda firing_id: None)
    machine = catalog.machine(gpu_count=2, free_gpus=1, price_per_gpu_hour=Decimal("2.49"))
    watcher, other = make_user(), make_user()
    watch = create_watch(watcher, WatchRequest(query=QUERY, email=False, auto_launch=True, auto_launch_max_price="3"))
    evaluate_watches()
    firing = Firing.objects.get(watch=watch)

    automatic, manual = race_outcomes([
        lambda: auto.launch_for(firing.pk),
        lambda: launch(
            other, machines=[(machine.pk, 1)], shown_price_per_hour=Decimal("2.49"), query_string=LLAMA_8B,
            idempotency_key=uuid.uuid4().hex,
        ),
    ])

    assert Booking.objects.filter(machine=machine).count() == 1
    assert Machine.objects.get(pk=machine.pk).free_gpus == 0
    booking = Booking.objects.get()
    if booking.user_id == watcher.pk:
        assert automatic["booked"] == booking.pk and isinstance(manual, LaunchRefused)
    else:
        assert isinstance(manual, LaunchOutcome) and automatic["booked"] is None
        assert "someone else booked first" in automatic["refused"]
        assert Watch.objects.get(pk=watch.pk).is_active
