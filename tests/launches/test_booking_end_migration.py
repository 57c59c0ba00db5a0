"""The migration that stores each booking's end (`ends_at`) fills it for bookings made before it."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from tests.helpers import migrate

BEFORE = [("launches", "0001_initial")]
AFTER = [("launches", "0002_booking_ends_at")]


def latest():
    """The launches app's newest migration: where the test leaves the schema, for the tests after it."""
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes("launches")


@pytest.mark.django_db(transaction=True)
def test_bookings_made_before_the_stored_end_get_start_plus_their_limit(small_catalog, make_user):
    user = make_user("ada")
    machine = small_catalog.machine()
    old = migrate(BEFORE)
    try:
        Booking = old.get_model("launches", "Booking")
        started = timezone.now().replace(microsecond=0) - timedelta(hours=30)
        common = {
            "user_id": user.pk, "machine_id": machine.pk, "gpus": 1, "price_per_gpu_hour": Decimal("2.49"),
            "price_per_hour": Decimal("2.49"), "workload": {}, "result_url": "/", "status": "running",
            "started_at": started,
        }
        limited = Booking.objects.create(booking_limit_hours=24, idempotency_key="a", **common)
        unlimited = Booking.objects.create(booking_limit_hours=None, idempotency_key="b", **common)
    finally:
        new = migrate(AFTER)
    try:
        Booking = new.get_model("launches", "Booking")
        assert Booking.objects.get(pk=limited.pk).ends_at == started + timedelta(hours=24)
        assert Booking.objects.get(pk=unlimited.pk).ends_at is None
    finally:
        migrate(latest())
