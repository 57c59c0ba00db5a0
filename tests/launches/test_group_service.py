"""Booking a cluster or a throughput plan all or nothing (`booking.launch`), stopping it together
(`holding.stop`), and its bookings ending together at the first booking limit."""
from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog.models import Machine
from nodelodge.launches.booking import launch
from nodelodge.launches.holding import BookingNotFound, end_expired_bookings, stop
from nodelodge.launches.models import Booking, LaunchGroup
from nodelodge.launches.refusals import GroupInputError, GroupRefused, LaunchRefused
from tests.factories import H100_MIB, make_gpu_type, make_machine, make_provider
from tests.helpers import LLAMA_8B as QUERY

from .conftest import CLUSTER_MACHINE

MACHINE_PRICE = Decimal("19.92")  # 8 × $2.49


def book(user, machines, price=None, *, kind="cluster", key=None, **extra):
    pairs = [(machine.pk, machine.gpu_count if kind == "cluster" else gpus) for machine, gpus in machines]
    if price is None:
        price = sum(machine.price_per_gpu_hour * gpus for (machine, _g), (_id, gpus) in zip(machines, pairs, strict=True))
    return launch(
        user, machines=pairs, shown_price_per_hour=price, query_string=QUERY,
        idempotency_key=key or uuid.uuid4().hex, kind=kind, **extra,
    )


def cluster(*machines):
    return [(machine, machine.gpu_count) for machine in machines]


def free_gpus(*machines) -> list[int]:
    return [Machine.objects.get(pk=machine.pk).free_gpus for machine in machines]


def test_a_cluster_books_every_machine_whole_in_one_group(cluster_catalog, make_user):
    user = make_user()
    machines = [cluster_catalog.cluster_machine() for _ in range(3)]

    outcome = book(user, cluster(*machines))

    assert outcome.created
    group = outcome.group
    assert (group.kind, group.price_per_hour, group.user) == ("cluster", 3 * MACHINE_PRICE, user)
    bookings = list(group.bookings.order_by("machine_id"))
    assert [(b.machine_id, b.gpus, b.status) for b in bookings] == [(m.pk, 8, "running") for m in machines]
    assert {b.started_at for b in bookings} == {group.created_at}
    assert group.status == "running" and group.workload["model"] == "llama-3-1-8b"
    assert free_gpus(*machines) == [0, 0, 0]


@pytest.mark.parametrize("how", ["gone", "taken", "offline", "stale", "price_per_gpu_hour"])
def test_one_machine_that_cannot_be_booked_books_nothing_and_is_named(cluster_catalog, make_user, how):
    user = make_user()
    machines = [cluster_catalog.cluster_machine() for _ in range(3)]
    shown = 3 * MACHINE_PRICE
    failing = machines[1]
    change = {
        "gone": {"gone_at": timezone.now()},
        "taken": {"free_gpus": 5},
        "offline": {"is_available": False},
        "stale": {"last_seen_at": timezone.now() - timedelta(days=2)},
        "price_per_gpu_hour": {"price_per_gpu_hour": Decimal("2.60")},
    }[how]
    Machine.objects.filter(pk=failing.pk).update(**change)

    with pytest.raises(GroupRefused) as refused:
        book(user, cluster(*machines), shown)

    refusal = refused.value
    if how == "price_per_gpu_hour":  # the total rose: the group as a whole is refused
        assert refusal.code == LaunchRefused.PRICE_CHANGED
        assert "$59.76/h" in refusal.message and "$60.64/h" in refusal.message
    else:
        assert (refusal.machine_id, refusal.provider_machine_id) == (failing.pk, failing.provider_machine_id)
        assert failing.provider_machine_id in refusal.message
        assert refusal.code in {"gone", "taken", "offline", "stale", "not_whole"}
    assert refusal.result_url.startswith("/?") and "model=llama-3-1-8b" in refusal.result_url
    assert not Booking.objects.exists() and not LaunchGroup.objects.exists()
    assert free_gpus(machines[0], machines[2]) == [8, 8]


def test_a_price_that_fell_is_a_change_too_as_for_launch(cluster_catalog, make_user):
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    with pytest.raises(GroupRefused) as refused:
        book(make_user(), cluster(*machines), 2 * MACHINE_PRICE + Decimal("0.01"))
    assert refused.value.code == LaunchRefused.PRICE_CHANGED
    assert not Booking.objects.exists()


@pytest.mark.parametrize(("change", "code"), [
    ({"site": "ams-2"}, GroupRefused.NOT_IDENTICAL),
    ({"memory_per_gpu_mib": 81_000}, GroupRefused.NOT_IDENTICAL),
    ({"gpu_count": 4, "free_gpus": 4}, GroupRefused.NOT_IDENTICAL),
    ({"interconnect": "ethernet", "interconnect_gbps": 400}, GroupRefused.NOT_CLUSTERABLE),
    ({"interconnect": "infiniband", "interconnect_gbps": 50}, GroupRefused.NOT_CLUSTERABLE),
    ({"interconnect": "none", "interconnect_gbps": None}, GroupRefused.NOT_CLUSTERABLE),
    ({"site": ""}, GroupRefused.NOT_CLUSTERABLE),
])
def test_the_server_checks_the_cluster_itself_whatever_the_client_sent(cluster_catalog, make_user, change, code):
    machines = [cluster_catalog.cluster_machine(), cluster_catalog.cluster_machine(**change)]

    with pytest.raises(GroupRefused) as refused:
        book(make_user(), cluster(*machines))

    assert refused.value.code == code
    assert refused.value.provider_machine_id == machines[1].provider_machine_id
    assert not Booking.objects.exists()


def test_a_cluster_never_spans_providers_gpu_types_or_community_machines(cluster_catalog, make_user):
    first = cluster_catalog.cluster_machine()
    other_provider = make_provider("Birch Cloud")
    community = make_provider("Hosts", tier="community")
    other_gpu = make_gpu_type("H100 PCIe 80GB")
    gpu = cluster_catalog.gpu_type
    cases = [
        (make_machine(other_provider, gpu, **_site()), GroupRefused.NOT_IDENTICAL),
        (make_machine(community, gpu, **_site()), GroupRefused.NOT_CLUSTERABLE),
        (make_machine(cluster_catalog.provider, other_gpu, **_site()), GroupRefused.NOT_IDENTICAL),
    ]
    for machine, code in cases:
        with pytest.raises(GroupRefused) as refused:
            book(make_user(), cluster(first, machine))
        assert (refused.value.code, refused.value.machine_id) == (code, machine.pk)
    assert not Booking.objects.exists()


def _site() -> dict:
    return CLUSTER_MACHINE | {"price_per_gpu_hour": Decimal("2.49"), "memory_per_gpu_mib": H100_MIB}


def test_a_cluster_takes_each_machine_whole(cluster_catalog, make_user):
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    with pytest.raises(GroupRefused) as refused:
        launch(
            make_user(), machines=[(machines[0].pk, 8), (machines[1].pk, 4)],
            shown_price_per_hour=Decimal("29.88"), query_string=QUERY, idempotency_key=uuid.uuid4().hex,
            kind="cluster",
        )
    assert refused.value.code == GroupRefused.NOT_WHOLE
    assert refused.value.machine_id == machines[1].pk
    assert not Booking.objects.exists()


def test_an_unknown_machine_id_is_named_and_books_nothing(cluster_catalog, make_user):
    machine = cluster_catalog.cluster_machine()
    with pytest.raises(GroupRefused) as refused:
        launch(
            make_user(), machines=[(machine.pk, 8), (999_999, 8)], shown_price_per_hour=2 * MACHINE_PRICE,
            query_string=QUERY, idempotency_key=uuid.uuid4().hex, kind="cluster",
        )
    assert refused.value.code == LaunchRefused.GONE and refused.value.machine_id == 999_999
    assert "999999" in refused.value.message
    assert free_gpus(machine) == [8]


@pytest.mark.parametrize(("kind", "machines", "field"), [
    ("rack", [(1, 8)], "kind"),
    ("cluster", [], "machines"),
    ("cluster", [(1, 8), (1, 8)], "machines"),
    ("plan", [(1, 0)], "machines"),
    ("plan", [(1, 17)], "machines"),
    ("plan", [(0, 1)], "machines"),
    ("plan", [("x", 1)], "machines"),
])
def test_unreadable_input_is_an_input_error_and_books_nothing(cluster_catalog, make_user, kind, machines, field):
    with pytest.raises(GroupInputError) as error:
        launch(make_user(), machines=machines, shown_price_per_hour=Decimal(1), query_string=QUERY,
                              idempotency_key=uuid.uuid4().hex, kind=kind)
    assert list(error.value.errors) == [field]
    assert not Booking.objects.exists()


def test_the_same_key_books_once_and_returns_the_same_group(cluster_catalog, make_user):
    user = make_user()
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    key = uuid.uuid4().hex

    first = book(user, cluster(*machines), key=key)
    again = book(user, cluster(*machines), key=key)

    assert first.created and not again.created
    assert again.group.pk == first.group.pk
    assert Booking.objects.count() == 2 and LaunchGroup.objects.count() == 1
    assert free_gpus(*machines) == [0, 0]
    # Another user's same key is their own.
    assert book(make_user(), cluster(cluster_catalog.cluster_machine()), key=key).created


def test_machines_are_locked_and_taken_in_the_order_of_their_ids(cluster_catalog, make_user):
    machines = [cluster_catalog.cluster_machine() for _ in range(4)]
    given = list(reversed(machines))  # the client's order is not the lock order

    with CaptureQueriesContext(connection) as queries:
        book(make_user(), cluster(*given))

    statements = [q["sql"] for q in queries.captured_queries]
    taken = [s for s in statements if s.startswith('UPDATE "catalog_machine"')]
    ids = [int(s.rsplit("=", 1)[1].strip(" )")) for s in taken]
    assert ids == sorted(m.pk for m in machines)
    locking = [s for s in statements if 'FROM "catalog_machine"' in s and "ORDER BY" in s]
    assert locking and all('ORDER BY "catalog_machine"."id" ASC' in s for s in locking)
    if connection.features.has_select_for_update:  # PostgreSQL: one SELECT … ORDER BY id FOR UPDATE
        assert sum(s.endswith('FOR UPDATE OF "catalog_machine"') for s in locking) == 1


def test_an_injected_failure_on_the_last_machine_leaves_zero_bookings(cluster_catalog, make_user):
    user = make_user()
    machines = [cluster_catalog.cluster_machine() for _ in range(4)]
    taken = []

    def fail_on_the_last_machine(execute, sql, params, many, context):
        if sql.startswith('UPDATE "catalog_machine"'):
            taken.append(params[-1])
            if params[-1] == machines[-1].pk:
                raise OperationalError("the connection was lost while taking the last machine")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(fail_on_the_last_machine), pytest.raises(OperationalError):
        book(user, cluster(*machines))

    assert taken == [m.pk for m in machines]  # the first three were taken, then rolled back
    assert not Booking.objects.exists() and not LaunchGroup.objects.exists()
    assert free_gpus(*machines) == [8, 8, 8, 8]
    assert book(user, cluster(*machines)).created  # and the same cluster books afterwards
    assert free_gpus(*machines) == [0, 0, 0, 0]


def test_a_plan_books_each_machine_with_the_gpus_the_plan_takes(cluster_catalog, make_user):
    one = cluster_catalog.machine(gpu_count=4, free_gpus=4)
    two = cluster_catalog.machine(gpu_count=2, free_gpus=2, price_per_gpu_hour=Decimal("2.10"))

    outcome = book(make_user(), [(one, 3), (two, 2)], kind="plan")

    assert outcome.group.kind == "plan" and outcome.group.price_per_hour == Decimal("11.67")
    assert sorted(outcome.group.bookings.values_list("machine_id", "gpus")) == [(one.pk, 3), (two.pk, 2)]
    assert free_gpus(one, two) == [1, 0]


def test_a_plan_machine_the_workload_no_longer_fits_books_nothing(cluster_catalog, make_user):
    fits = cluster_catalog.machine(gpu_count=2, free_gpus=2)
    small = cluster_catalog.machine(gpu_count=1, free_gpus=1, memory_per_gpu_mib=8_000)
    with pytest.raises(GroupRefused) as refused:
        book(make_user(), [(fits, 2), (small, 1)], kind="plan")
    assert refused.value.code == LaunchRefused.NO_LONGER_FITS and refused.value.machine_id == small.pk
    assert free_gpus(fits, small) == [2, 1]


def test_stopping_a_group_stops_every_booking_at_once_and_frees_every_gpu(cluster_catalog, make_user):
    user = make_user()
    machines = [cluster_catalog.cluster_machine() for _ in range(3)]
    group = book(user, cluster(*machines)).group

    with pytest.raises(BookingNotFound):
        stop(make_user(), group_id=group.pk)  # another user's
    stopped = stop(user, group_id=group.pk)

    assert stopped.stopped and [b.status for b in stopped.bookings] == ["ended"] * 3
    assert len({b.ended_at for b in stopped.bookings}) == 1
    assert free_gpus(*machines) == [8, 8, 8]
    assert group.status == "ended"
    assert not stop(user, group_id=group.pk).stopped  # a second click changes nothing
    assert free_gpus(*machines) == [8, 8, 8]


def test_stop_on_one_booking_of_a_group_stops_the_whole_group(cluster_catalog, make_user):
    user = make_user()
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    group = book(user, cluster(*machines)).group
    member = group.bookings.order_by("pk").last()

    outcome = stop(user, member.pk)

    assert outcome.stopped and outcome.booking.pk == member.pk
    assert set(Booking.objects.values_list("status", flat=True)) == {"ended"}
    assert free_gpus(*machines) == [8, 8]


def test_a_group_ends_whole_when_its_first_booking_limit_is_reached(cluster_catalog, make_user):
    user = make_user()
    limited = cluster_catalog.cluster_machine(booking_limit_hours=5)
    unlimited = cluster_catalog.cluster_machine(booking_limit_hours=None)
    alone = cluster_catalog.cluster_machine(booking_limit_hours=None)
    now = timezone.now()
    group = book(user, cluster(limited, unlimited), now=now - timedelta(hours=6)).group
    single = launch(
        user, machines=[(alone.pk, 1)], shown_price_per_hour=Decimal("2.49"), query_string=QUERY,
        idempotency_key=uuid.uuid4().hex,
    ).booking

    assert end_expired_bookings(now=now) == 2

    bookings = list(group.bookings.all())
    assert {(b.status, b.ended_at) for b in bookings} == {("ended", now - timedelta(hours=1))}
    assert free_gpus(limited, unlimited) == [8, 8]
    single.refresh_from_db()
    assert single.is_running
    assert end_expired_bookings(now=now) == 0


def test_the_budget_covers_the_whole_group_on_each_of_its_bookings(cluster_catalog, make_user):
    from sizing.wording import budget_cover

    machines = [cluster_catalog.cluster_machine(booking_limit_hours=None) for _ in range(2)]
    group = launch(
        make_user(), machines=[(m.pk, 8) for m in machines], shown_price_per_hour=2 * MACHINE_PRICE,
        query_string=f"{QUERY}&budget=100", idempotency_key=uuid.uuid4().hex, kind="cluster",
    ).group
    whole = budget_cover(Decimal(100), 2 * MACHINE_PRICE, None).hours_of_one_booking
    assert whole < budget_cover(Decimal(100), MACHINE_PRICE, None).hours_of_one_booking
    assert list(group.bookings.values_list("hours_covered", flat=True)) == [whole, whole]


def test_a_group_past_its_requests_deadline_books_nothing(cluster_catalog, make_user):
    import time

    from nodelodge.hardening import deadline

    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    with deadline.request_deadline(time.time() - 1), pytest.raises(deadline.DeadlinePassed):
        book(make_user(), cluster(*machines))
    assert not Booking.objects.exists() and not LaunchGroup.objects.exists()
    assert free_gpus(*machines) == [8, 8]
