"""`manage.py import_offers`: a one-off import through the refresh's sync, a dry run that changes
nothing, and a clear error for each bad argument."""
import json
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from catalog.models import GpuAlias, GpuType, Machine, Provider
from catalog.services import load_gpu_aliases, load_gpu_types
from nodelodge.refresh.models import SyncRun
from tests.factories import make_machine, make_provider
from tests.feeds import OFFER_FIXTURE_FILES, OFFER_FIXTURES

SHORT = {
    "vast-offers": "vast", "runpod-gpu-types": "runpod", "lambda-instance-types": "lambda",
    "skypilot-catalog": "skypilot", "gpuhunt-offers": "gpuhunt", "prime-availability": "prime",
}
OFFER_KEYS = [
    "id", "gpu_type", "gpus", "memory_per_gpu_gib", "price_per_gpu_hour", "interruptible_price_per_gpu_hour",
    "interruptible", "reserved_price_per_gpu_hour", "reserved_term_days", "country", "region", "available",
    "available_gpus", "reliability", "stock",
]


@pytest.fixture
def catalog(db):
    load_gpu_types()
    load_gpu_aliases()
    provider = make_provider("Hosts United", tier="community")
    make_machine(provider, GpuType.objects.get(name="RTX 4090"), provider_machine_id="old-1",
                 price_per_gpu_hour=Decimal("0.5000"))
    return provider


def run_command(*args) -> str:
    out = StringIO()
    call_command("import_offers", *args, stdout=out)
    return out.getvalue()


def database_state() -> dict:
    return {
        "machines": list(Machine.objects.order_by("pk").values()),
        "runs": list(SyncRun.objects.values()),
        "providers": list(Provider.objects.order_by("pk").values()),
        "aliases": list(GpuAlias.objects.order_by("pk").values()),
        "gpu_types": list(GpuType.objects.order_by("pk").values()),
    }


@pytest.mark.django_db
@pytest.mark.parametrize("feed_format", sorted(OFFER_FIXTURE_FILES))
def test_a_dry_run_prints_the_offers_and_refusals_and_changes_nothing(catalog, feed_format):
    before = database_state()

    document = json.loads(run_command(
        "--format", SHORT[feed_format], "--provider", catalog.slug, "--dry-run", "--json",
        str(OFFER_FIXTURES / OFFER_FIXTURE_FILES[feed_format]),
    ))

    assert database_state() == before
    assert list(document) == ["offers", "refused"]
    assert document["offers"] and all(list(offer) == OFFER_KEYS for offer in document["offers"])
    assert {"GPU memory is missing", "must be above zero", "unknown GPU name"} <= {
        phrase for refusal in document["refused"] for phrase in
        ("GPU memory is missing", "must be above zero", "unknown GPU name") if phrase in refusal["reason"]
    }
    assert all(list(refusal) == ["record", "reason"] for refusal in document["refused"])


@pytest.mark.django_db
def test_a_dry_run_shows_the_figures_the_console_has_no_place_for_yet(catalog):
    document = json.loads(run_command("--format", "vast", "--dry-run", "--json", str(OFFER_FIXTURES / "vast_offers.json")))

    assert document["offers"][0] == {
        "id": "8123401", "gpu_type": "RTX 4090", "gpus": 2, "memory_per_gpu_gib": "23.98828125",
        "price_per_gpu_hour": "0.4006", "interruptible_price_per_gpu_hour": "0.2500", "interruptible": False,
        "reserved_price_per_gpu_hour": None, "reserved_term_days": None, "country": "SE", "region": "Sweden, SE", "available": True, "available_gpus": 2, "reliability": "0.9981",
        "stock": None,
    }
    assert document["refused"][2] == {
        "record": "8123406", "reason": "unknown GPU name 'Titan Xp' (no GPU type or alias has it)",
    }
    lambda_document = json.loads(run_command(
        "--format", "lambda", "--dry-run", "--json", str(OFFER_FIXTURES / "lambda_instance_types.json")
    ))
    assert {offer["available_gpus"] for offer in lambda_document["offers"]} == {None, 0}  # capacity, not a count
    assert {offer["reliability"] for offer in lambda_document["offers"]} == {None}  # never invented


@pytest.mark.django_db
def test_a_dry_run_shows_a_prepaid_offer_as_its_machines_reserved_price(catalog):
    document = json.loads(run_command(
        "--format", "prime", "--dry-run", "--json", str(OFFER_FIXTURES / "prime_availability.json")
    ))
    text = run_command("--format", "prime", "--dry-run", str(OFFER_FIXTURES / "prime_availability.json"))

    reserved = {offer["id"]: (offer["reserved_price_per_gpu_hour"], offer["reserved_term_days"])
                for offer in document["offers"]}
    assert reserved == {
        "hyperstack/NVIDIA_H100_SXM5_80GB/CANADA-1/8": ("1.9200", 90), "runpod/h100-80gb-pcie/US-KS-2/1": (None, None),
        "datacrunch/2H100.80S.30V/FIN-01/2/spot": (None, None), "lambdalabs/a100-80gb-sxm4-4x/us-west-1/4": (None, None),
    }
    assert {"record": "runpod/h100-80gb-pcie/US-KS-2/1/prepaid",
            "reason": "prepaidTime 129600 s is not a whole number of days"} in document["refused"]
    assert ("hyperstack/NVIDIA_H100_SXM5_80GB/CANADA-1/8: 8× H100 SXM 80GB, 80 GiB per GPU, $2.3900/GPU-h "
            "(reserved $1.9200 for 90 days), ? free, CA") in text
    assert text.rstrip().endswith("4 offers read, 6 refused; nothing changed.")


@pytest.mark.django_db
def test_a_dry_run_in_words(catalog):
    text = run_command("--format", "skypilot", "--dry-run", str(OFFER_FIXTURES / "skypilot_vms.csv"))

    assert "p4d.24xlarge@us-east-1a: 8× A100 40GB, 40 GiB per GPU, $4.0966/GPU-h (interruptible $1.2290), ? free" in text
    assert "refused a2-highgpu-1g@us-central1-a: GPU memory is missing (GpuInfo memory)" in text
    assert text.rstrip().endswith("4 offers read, 3 refused; nothing changed.")


@pytest.mark.django_db
def test_an_import_applies_the_offers_as_a_refresh_does(catalog):
    out = json.loads(run_command(
        "--format", "vast", "--provider", catalog.slug, "--json", str(OFFER_FIXTURES / "vast_offers.json")
    ))

    run = SyncRun.objects.get(provider=catalog)
    assert (run.status, run.feed_url, run.received, run.added, run.gone, run.rejected) == (
        "partial", "import: vast_offers.json", 6, 3, 1, 3
    )
    assert out["status"] == "partial" and len(out["refused"]) == 3
    live = Machine.objects.filter(provider=catalog, gone_at__isnull=True)
    assert sorted(live.values_list("provider_machine_id", "price_per_gpu_hour", "memory_source")) == [
        ("8123401", Decimal("0.4006"), "host"), ("8123402", Decimal("2.4933"), "host"),
        ("8123403", Decimal("1.2000"), "host"),
    ]
    assert Machine.objects.get(provider_machine_id="old-1").gone_at is not None  # missing from the file


@pytest.mark.django_db
def test_an_import_in_words_names_each_refused_record(catalog):
    text = run_command("--format", "prime", "--provider", catalog.slug, str(OFFER_FIXTURES / "prime_availability.json"))

    assert text.startswith("hosts-united: partial — 11 received, 4 added, 0 updated, 0 unchanged, 1 gone, 6 rejected")
    assert "refused tensordock/a100-80gb-nomem/DE-FRA-1/1: GPU memory is missing (gpuMemory)" in text


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "vast", "--provider", "hosts-united", "/nonexistent/offers.json"], "No such file"),
        (["--format", "vast", "--provider", "nobody", "x.json"], "No provider with slug nobody."),
        (["--format", "vast", "x.json"], "--provider is needed to import (or use --dry-run"),
        (["--format", "azure", "--dry-run", "x.json"], "invalid choice: 'azure'"),
        (["--dry-run", "x.json"], "the following arguments are required: --format"),
        (["--format", "vast", "--dry-run", "/"], "is a folder, not a file"),
    ],
)
def test_bad_arguments_give_a_clear_error(catalog, args, message):
    before = database_state()
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace("-", r"\-")):
        run_command(*args)
    assert database_state() == before


@pytest.mark.django_db
def test_a_file_in_another_format_is_a_clear_error_and_imports_nothing(catalog, tmp_path):
    wrong = tmp_path / "offers.json"
    wrong.write_bytes((OFFER_FIXTURES / "vast_offers.json").read_bytes())

    with pytest.raises(CommandError, match="offers.json cannot be read as runpod: the answer has no"):
        run_command("--format", "runpod", "--dry-run", str(wrong))
    with pytest.raises(CommandError, match='nothing was imported. Feed rejected: the answer has no "data.gpuTypes"'):
        run_command("--format", "runpod", "--provider", catalog.slug, str(wrong))
    assert SyncRun.objects.get().status == SyncRun.Status.FAILED
    assert Machine.objects.filter(gone_at__isnull=True).count() == 1
