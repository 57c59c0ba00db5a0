"""Launch books the market its review shows (the machine's listed price's: on demand, or interruptible
for a machine listed so), under the same row locks as any Launch: many users racing for an
interruptible machine's last GPUs make exactly as many bookings as it has GPUs free, each in the
interruptible market at its price, and users racing for overlapping clusters priced interruptible by the
market preference book one whole, each machine in its market; on PostgreSQL against the row locks, on
SQLite against its write lock. The migration that stores the market gives earlier bookings theirs."""
from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from catalog.models import Machine
from nodelodge.launches.booking import LaunchOutcome, launch
from nodelodge.launches.models import Booking
from nodelodge.launches.refusals import LaunchRefused
from tests.helpers import LLAMA_8B as QUERY
from tests.helpers import migrate, race_outcomes

THREADS = 8


def launch_call(user, machine, price):
    return lambda: launch(
        user, machines=[(machine.pk, 1)], shown_price_per_hour=price, query_string=QUERY,
        idempotency_key=uuid.uuid4().hex,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("free", [1, 2])
def test_users_racing_for_an_interruptible_machine_book_its_free_gpus_in_that_market(small_catalog, make_user, free):
    spot = small_catalog.machine(gpu_count=4, free_gpus=free, price_per_gpu_hour=Decimal("0.61"),
                                 interruptible=True, interruption_notice_seconds=30)
    users = [make_user() for _ in range(THREADS)]

    results = race_outcomes([launch_call(user, spot, Decimal("0.61")) for user in users])

    won = [r for r in results if isinstance(r, LaunchOutcome)]
    lost = [r for r in results if isinstance(r, LaunchRefused)]
    assert (len(won), len(lost)) == (free, THREADS - free), results
    assert all(r.code == LaunchRefused.TAKEN for r in lost)
    booked = list(Booking.objects.filter(machine=spot).values_list("market", "price_per_gpu_hour", "gpus"))
    assert booked == [("interruptible", Decimal("0.61"), 1)] * free
    spot.refresh_from_db()
    assert spot.free_gpus == 0


@pytest.mark.django_db(transaction=True)
def test_racing_for_an_on_demand_and_an_interruptible_machine_books_each_in_its_own_market(
    small_catalog, make_user
):
    plain = small_catalog.machine(gpu_count=2, free_gpus=1, interruptible_price_per_gpu_hour=Decimal("1.10"))
    spot = small_catalog.machine(gpu_count=2, free_gpus=1, price_per_gpu_hour=Decimal("0.61"), interruptible=True)
    calls = [launch_call(make_user(), plain, Decimal("2.49")) for _ in range(THREADS // 2)]
    calls += [launch_call(make_user(), spot, Decimal("0.61")) for _ in range(THREADS // 2)]

    results = race_outcomes(calls)

    assert sum(isinstance(r, LaunchOutcome) for r in results) == 2, results
    assert sorted(Booking.objects.values_list("machine_id", "market", "price_per_gpu_hour")) == [
        (plain.pk, "on_demand", Decimal("2.49")), (spot.pk, "interruptible", Decimal("0.61")),
    ]


@pytest.mark.django_db(transaction=True)
def test_bookings_made_before_markets_get_their_machines_market(small_catalog, make_user):
    user = make_user()
    spot = small_catalog.machine(price_per_gpu_hour=Decimal("0.61"), interruptible=True)
    plain = small_catalog.machine()
    old = migrate([("launches", "0003_launch_group")])
    try:
        OldBooking = old.get_model("launches", "Booking")
        common = {"user_id": user.pk, "gpus": 1, "workload": {}, "result_url": "/", "status": "running",
                  "started_at": timezone.now()}
        on_spot = OldBooking.objects.create(machine_id=spot.pk, price_per_gpu_hour=Decimal("0.61"),
                                            price_per_hour=Decimal("0.61"), idempotency_key="a", **common)
        on_plain = OldBooking.objects.create(machine_id=plain.pk, price_per_gpu_hour=Decimal("2.49"),
                                             price_per_hour=Decimal("2.49"), idempotency_key="b", **common)
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("launches"))
    assert Booking.objects.get(pk=on_spot.pk).market == "interruptible"
    assert Booking.objects.get(pk=on_plain.pk).market == "on_demand"


@pytest.mark.django_db
def test_launch_books_the_market_its_review_named_and_refuses_one_that_changed(client, small_catalog, make_user):
    from django.urls import reverse

    from catalog.models import Machine

    client.force_login(make_user())
    machine = small_catalog.machine(free_gpus=2)
    review = client.get(f"/launch/review/?machine={machine.pk}&gpus=1&price_per_hour=2.49&query="
                        + QUERY.replace("&", "%26")).content.decode()
    assert '<input type="hidden" name="market" value="on_demand">' in review

    # The provider lists it interruptible now, at the same price: Confirm of the review is refused.
    Machine.objects.filter(pk=machine.pk).update(interruptible=True, interruptible_price_per_gpu_hour=Decimal("2.49"))
    data = {"machine": machine.pk, "gpus": 1, "price_per_hour": "2.49", "query": QUERY, "market": "on_demand",
            "idempotency_key": uuid.uuid4().hex}
    response = client.post(reverse("launches:launch"), data)
    assert response.status_code == 409
    assert ("This machine is now offered interruptible, not on demand as the review showed; check and launch "
            "again.") in response.content.decode()
    assert not Booking.objects.exists()
    assert Machine.objects.get(pk=machine.pk).free_gpus == 2

    german = client.post("/de" + reverse("launches:launch"), {**data, "idempotency_key": uuid.uuid4().hex},
                         HTTP_ACCEPT_LANGUAGE="de")
    assert "Diese Maschine wird jetzt unterbrechbar angeboten, nicht auf Abruf" in german.content.decode()

    # Its review now names the interruptible market, and Confirm books it there.
    response = client.post(reverse("launches:launch"), {**data, "market": "interruptible",
                                                         "idempotency_key": uuid.uuid4().hex})
    assert response.status_code == 303
    assert list(Booking.objects.values_list("market", "price_per_gpu_hour")) == [("interruptible", Decimal("2.49"))]


@pytest.mark.django_db
def test_a_market_the_console_does_not_know_is_a_bad_form(client, small_catalog, make_user):
    from django.urls import reverse

    client.force_login(make_user())
    machine = small_catalog.machine(free_gpus=2)
    data = {"machine": machine.pk, "gpus": 1, "price_per_hour": "2.49", "query": QUERY, "market": "spot",
            "idempotency_key": uuid.uuid4().hex}
    assert client.post(reverse("launches:launch"), data).status_code == 400
    assert not Booking.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_users_racing_for_a_machine_priced_interruptible_by_the_preference_book_it_there(small_catalog, make_user):
    """An on-demand machine also offered interruptible, on a result that allows interruptible prices: the
    winners book its interruptible market at that price, as the row and the review showed it."""
    dual = small_catalog.machine(gpu_count=2, free_gpus=2, price_per_gpu_hour=Decimal("2.00"),
                                 interruptible_price_per_gpu_hour=Decimal("0.6149"))
    query = QUERY + "&market=interruptible"
    calls = [
        lambda user=make_user(): launch(
            user, machines=[(dual.pk, 1)], shown_price_per_hour=Decimal("0.6149"), query_string=query,
            idempotency_key=uuid.uuid4().hex, market="interruptible",
        )
        for _ in range(THREADS)
    ]

    results = race_outcomes(calls)

    assert sum(isinstance(r, LaunchOutcome) for r in results) == 2, results
    assert all(r.code == LaunchRefused.TAKEN for r in results if isinstance(r, LaunchRefused))
    booked = list(Booking.objects.filter(machine=dual).values_list("market", "price_per_gpu_hour", "price_per_hour"))
    assert booked == [("interruptible", Decimal("0.6149"), Decimal("0.6149"))] * 2


@pytest.mark.django_db(transaction=True)
def test_users_racing_for_an_interruptible_cluster_book_it_whole_once_in_each_machines_market(
    cluster_catalog, make_user
):
    """Overlapping clusters on a result that allows interruptible prices, booked at once: one group wins
    whole, each of its machines in the market the review named at that price; the others book nothing."""
    spot = [cluster_catalog.cluster_machine(interruptible_price_per_gpu_hour=Decimal("1.25")) for _ in range(2)]
    plain = cluster_catalog.cluster_machine()
    query = QUERY + "&market=interruptible"
    asks = [[spot[0], spot[1]], [spot[1], plain], [plain, spot[0]]] * (THREADS // 2)
    price = {m.pk: (Decimal("10.00") if m in spot else Decimal("19.92")) for m in [*spot, plain]}
    market = {m.pk: ("interruptible" if m in spot else "on_demand") for m in [*spot, plain]}
    calls = [
        lambda user=make_user(), ask=ask: launch(
            user, machines=[(m.pk, 8) for m in reversed(ask)], shown_price_per_hour=sum(price[m.pk] for m in ask),
            query_string=query, idempotency_key=uuid.uuid4().hex, kind="cluster",
            markets={m.pk: market[m.pk] for m in ask},
        )
        for ask in asks
    ]

    results = race_outcomes(calls)

    won = [r for r in results if isinstance(r, LaunchOutcome)]
    assert len(won) == 1, results  # any two of the three overlap
    assert all(isinstance(r, LaunchRefused) and r.code in ("taken", "not_whole") for r in results if r not in won)
    [group] = won
    assert [(b.machine_id, b.market, b.price_per_hour) for b in group.bookings] == [
        (b.machine_id, market[b.machine_id], price[b.machine_id]) for b in group.bookings
    ]
    assert Booking.objects.count() == 2 and len(group.bookings) == 2
    assert sum(Machine.objects.get(pk=m.pk).free_gpus for m in [*spot, plain]) == 8
