"""Staff edit a machine's markets, reliability and stock in the admin: good terms are saved, a bad one
is refused with its message beside its field and nothing is saved; the migration that brought markets
made every machine listed interruptible an offer in the interruptible market at its price."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from catalog.models import Machine
from tests.helpers import migrate

from .test_admin import admin_url, machine_form

MARKET_FORM = {
    "interruptible_price_per_gpu_hour": "0.6100", "interruption_notice_seconds": "30",
    "interruption_frequency": "  when the owner needs it ", "reserved_price_per_gpu_hour": "0.7100",
    "reserved_term_days": "30", "reliability": "0.9981", "reliability_measures": " Uptime, last 30 days ",
    "stock": "medium",
}
BLANK_MARKETS = {name: "" for name in MARKET_FORM}


@pytest.mark.django_db
def test_staff_save_a_machine_in_three_markets_with_its_reliability_and_stock(admin_client, catalog):
    response = admin_client.post(admin_url(Machine, "add"), machine_form(**MARKET_FORM))
    assert response.status_code == 302, response.context["adminform"].form.errors
    machine = Machine.objects.get(provider_machine_id="admin-1")
    assert [(m.market, m.price_per_gpu_hour, m.notice_seconds, m.frequency, m.term_days)
            for m in machine.market_prices()] == [
        ("on_demand", Decimal("0.89"), None, "", None),
        ("interruptible", Decimal("0.61"), 30, "when the owner needs it", None),
        ("reserved", Decimal("0.71"), None, "", 30),
    ]
    assert (machine.reliability, machine.reliability_measures, machine.stock) == (
        Decimal("0.9981"), "Uptime, last 30 days", "medium"
    )
    page = admin_client.get(admin_url(Machine, "change", machine.pk)).content.decode()
    assert 'name="reserved_term_days" value="30"' in page and "Reliability and stock" in page


@pytest.mark.django_db
def test_a_machine_listed_interruptible_is_offered_there_at_its_price(admin_client, catalog):
    response = admin_client.post(
        admin_url(Machine, "add"), machine_form(interruptible="on", **BLANK_MARKETS)
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    machine = Machine.objects.get(provider_machine_id="admin-1")
    assert machine.interruptible_price_per_gpu_hour == Decimal("0.89")
    assert [m.market for m in machine.market_prices()] == ["interruptible"]


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"interruptible_price_per_gpu_hour": "0"}, "interruptible_price_per_gpu_hour",
         "Interruptible price must be above zero."),
        ({"interruptible": "on", "interruptible_price_per_gpu_hour": "0.5"}, "interruptible_price_per_gpu_hour",
         "its interruptible price is its price per GPU-hour (0.89)"),
        ({"interruption_notice_seconds": "30"}, "interruption_notice_seconds",
         "Interruption terms need an interruptible price"),
        ({"interruptible_price_per_gpu_hour": "0.5", "interruption_notice_seconds": "-1"},
         "interruption_notice_seconds", "Interruption notice cannot be negative (0 = no notice)."),
        ({"reserved_price_per_gpu_hour": "0.7"}, "reserved_term_days", "A reserved price needs its term in days"),
        ({"reserved_term_days": "30"}, "reserved_price_per_gpu_hour", "A reserved term needs its reserved price"),
        ({"reserved_price_per_gpu_hour": "0.7", "reserved_term_days": "0"}, "reserved_term_days",
         "Reserved term must be at least one day."),
        ({"reliability": "1.5", "reliability_measures": "uptime"}, "reliability",
         "Reliability must be between 0 and 1."),
        ({"reliability": "0.99"}, "reliability_measures", "Say what the reliability figure measures"),
        ({"reliability_measures": "uptime"}, "reliability", "no reliability figure"),
        ({"stock": "plenty"}, "stock", "Select a valid choice."),
    ],
)
@pytest.mark.django_db
def test_bad_market_terms_are_refused_beside_their_field_and_nothing_is_saved(
    admin_client, catalog, overrides, field, message
):
    before = Machine.objects.count()
    response = admin_client.post(admin_url(Machine, "add"), machine_form(**{**BLANK_MARKETS, **overrides}))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert field in errors and message in " ".join(errors[field]), errors
    assert Machine.objects.count() == before


@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_an_interruptible_listing_an_interruptible_offer_at_its_price(db):
    """On both databases: SQLite rebuilds the table for the new checks, so its triggers are put back."""
    old = migrate([("catalog", "0021_gpu_aliases_and_feed_formats")])
    try:
        Provider, GpuType = old.get_model("catalog", "Provider"), old.get_model("catalog", "GpuType")
        OldMachine = old.get_model("catalog", "Machine")
        provider = Provider.objects.create(name="Old", slug="old", tier="community")
        gpu = GpuType.objects.create(name="H100 SXM 80GB", slug="h100", vendor="NVIDIA", memory_mib=81559)
        common = {"provider_id": provider.pk, "gpu_type_id": gpu.pk, "gpu_count": 1, "free_gpus": 1,
                  "tier": "community"}
        spot = OldMachine.objects.create(provider_machine_id="spot", price_per_gpu_hour=Decimal("0.61"),
                                         interruptible=True, **common)
        plain = OldMachine.objects.create(provider_machine_id="plain", price_per_gpu_hour=Decimal("2.49"),
                                          **common)
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("catalog"))
    assert Machine.objects.get(pk=spot.pk).interruptible_price_per_gpu_hour == Decimal("0.61")
    assert [m.market for m in Machine.objects.get(pk=spot.pk).market_prices()] == ["interruptible"]
    assert Machine.objects.get(pk=plain.pk).market_prices()[0].market == "on_demand"
    assert Machine.objects.get(pk=plain.pk).interruptible_price_per_gpu_hour is None
    # The provider's copies on the machine are still kept by the database after the rebuild.
    Provider.objects.filter(pk=provider.pk).update(tier="secure")
    assert Machine.objects.get(pk=plain.pk).tier == "secure"
    Machine.objects.all().delete()
    Provider.objects.all().delete()
