from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from catalog import services
from catalog.models import GpuType, LanguageModel, Machine
from tests.factories import build_machine, make_gpu_type, make_provider

pytestmark = pytest.mark.django_db

# The valid machine these tests start from: four free 24 GB GPUs at $0.50 per GPU-hour in DE, never seen.
VALID = {
    "provider_machine_id": "m-1", "gpu_count": 4, "free_gpus": 4, "memory_per_gpu_mib": 24564,
    "memory_source": "datacenter", "country": "DE", "region": "", "price_per_gpu_hour": Decimal("0.5000"),
    "last_seen_at": None,
}


@pytest.fixture
def provider():
    return make_provider("Test Secure", tier="secure")


@pytest.fixture
def gpu_type():
    return make_gpu_type("Test GPU", memory_mib=24564)


def errors_of(instance) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        instance.full_clean()
    return caught.value.message_dict


def test_a_valid_machine_passes_full_clean_and_takes_its_providers_tier(provider, gpu_type):
    machine = build_machine(provider, gpu_type, **VALID | {"country": "de"})
    machine.full_clean()
    machine.save()
    machine.refresh_from_db()
    assert machine.country == "DE"
    assert machine.tier == "secure"


@pytest.mark.parametrize(
    ("overrides", "field", "fragment"),
    [
        ({"memory_per_gpu_mib": -1}, "memory_per_gpu_mib", "Memory per GPU must be a positive number of MiB"),
        ({"memory_per_gpu_mib": 0}, "memory_per_gpu_mib", "Memory per GPU must be a positive number of MiB"),
        ({"free_gpus": 5}, "free_gpus", "Free GPUs (5) cannot exceed the machine's GPU count (4)"),
        ({"country": "XX"}, "country", "Country must be an ISO 3166 alpha-2 code"),
        ({"price_per_gpu_hour": Decimal("0")}, "price_per_gpu_hour", "Price per GPU-hour must be above zero"),
        ({"price_per_gpu_hour": Decimal("-1")}, "price_per_gpu_hour", "Price per GPU-hour must be above"),
        ({"gpu_count": 0, "free_gpus": 0}, "gpu_count", "GPU count must be between 1 and 16"),
        ({"gpu_count": 17, "free_gpus": 0}, "gpu_count", "GPU count must be between 1 and 16"),
        ({"booking_limit_hours": 0}, "booking_limit_hours", "Booking limit must be at least one hour"),
        (
            {"memory_per_gpu_mib": None, "memory_source": "host"},
            "memory_source",
            "Memory source must be “unknown”",
        ),
    ],
)
def test_each_bad_machine_value_is_rejected_with_a_message_naming_it(
    provider, gpu_type, overrides, field, fragment
):
    errors = errors_of(build_machine(provider, gpu_type, **VALID | overrides))
    assert field in errors
    assert any(fragment in message for message in errors[field]), errors[field]


def test_unreported_memory_and_unknown_country_are_allowed(provider, gpu_type):
    machine = build_machine(provider, gpu_type, **VALID | {"memory_per_gpu_mib": None, "memory_source": "unknown", "country": ""})
    machine.full_clean()


def test_the_database_rejects_more_free_gpus_than_gpus(provider, gpu_type):
    with pytest.raises(IntegrityError), transaction.atomic():
        build_machine(provider, gpu_type, **VALID | {"free_gpus": 5}).save()


@pytest.mark.parametrize(
    "overrides",
    [{"price_per_gpu_hour": Decimal("0")}, {"memory_per_gpu_mib": 0}, {"gpu_count": 17, "free_gpus": 1}],
)
def test_the_database_rejects_impossible_machine_values(provider, gpu_type, overrides):
    with pytest.raises(IntegrityError), transaction.atomic():
        build_machine(provider, gpu_type, **VALID | overrides).save()


def test_provider_tier_and_active_flag_are_copied_to_its_machines(provider, gpu_type):
    build_machine(provider, gpu_type, **VALID).save()
    provider.tier = "community"
    provider.is_active = False
    services.save_provider(provider)
    machine = Machine.objects.get()
    assert machine.tier == "community" and machine.provider_is_active is False
    provider.is_active = True
    services.save_provider(provider)
    assert Machine.objects.get().provider_is_active is True


def test_language_model_figures_reject_zero_and_negative_values():
    model = LanguageModel(name="Bad", slug="bad", parameters=0, layers=-2, kv_heads=0)
    errors = errors_of(model)
    assert "Parameters must be a positive number" in errors["parameters"][0]
    assert "Layers must be a positive number" in errors["layers"][0]
    assert "KV heads must be a positive number" in errors["kv_heads"][0]


def test_language_model_rejects_kv_heads_that_do_not_divide_the_heads():
    errors = errors_of(LanguageModel(name="Odd", slug="odd", attention_heads=32, kv_heads=5))
    assert "must divide the attention heads" in errors["kv_heads"][0]


def test_missing_values_names_unpublished_figures_not_zeroes():
    model = LanguageModel(name="Sparse", slug="sparse", parameters=10, layers=2, attention_heads=4)
    assert model.missing_values() == ["kv_heads", "head_dim"]


def test_gpu_type_memory_must_be_positive():
    errors = errors_of(GpuType(name="Zero", slug="zero", vendor="AMD", memory_mib=0))
    assert "Memory (MiB) must be a positive number" in errors["memory_mib"][0]
