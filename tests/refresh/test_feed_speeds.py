"""Measured speeds in the provider feed: checked one by one (a bad one is refused with its reason and
nothing else is lost), kept when a later feed leaves the section out, dropped when the machine
changes GPU type; and the demo feed carries them."""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from catalog.models import LanguageModel, Machine, MeasuredSpeed, Provider
from nodelodge.refresh.feeds import adapter_for
from nodelodge.refresh.feeds.base import GpuTypeIndex, GpuTypeRef
from nodelodge.refresh.services import refresh_provider
from tests.factories import H100_MIB, load_shipped_catalog
from tests.feeds import feed, record

GPU_TYPES = GpuTypeIndex(
    [GpuTypeRef(id=1, name="H100 SXM 80GB", datasheet_memory_mib=H100_MIB)], {"h100-sxm-80gb": 1}
)
MODELS = frozenset({"llama-3-1-8b", "llama-3-1-70b"})


def speed(**overrides) -> dict:
    values = {
        "model": "llama-3-1-8b", "precision": 16, "tokens_per_second": "5000", "gpus": 1, "engine": "vLLM",
        "engine_version": "0.6.3", "concurrency": 64, "input_tokens": 1024, "output_tokens": 128,
        "measured_at": "2025-05-01T10:00:00Z", "measured_by": "Acme lab",
    }
    values.update(overrides)
    return {key: value for key, value in values.items() if value is not ...}


def parse(document):
    return adapter_for("nodelodge-v1").parse(
        json.dumps(document).encode(), provider_slug="acme", gpu_types=GPU_TYPES, models=MODELS
    )


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (speed(tokens_per_second="-5"), "tokens_per_second must be above zero"),
        (speed(tokens_per_second=0), "tokens_per_second must be above zero"),
        (speed(tokens_per_second="5e7"), "is absurd"),
        (speed(tokens_per_second="NaN"), "must be a finite number"),
        (speed(tokens_per_second=True), "tokens_per_second must be a number"),
        (speed(model="gpt-imaginary"), "unknown model 'gpt-imaginary'"),
        (speed(model=...), "model is missing"),
        (speed(precision=12), "precision must be 16, 8 or 4"),
        (speed(gpus=9), "gpus must be between 1 and the machine's 8"),
        (speed(concurrency=0), "concurrency must be between 1"),
        (speed(measured_at=...), "measured_at is missing"),
        (speed(measured_at="yesterday"), "is not an ISO 8601 time"),
        (speed(measured_at="2025-05-01T10:00:00"), "needs a time zone"),
        (speed(measured_at=(datetime.now(UTC) + timedelta(days=2)).isoformat()), "is in the future"),
        (speed(engine="x" * 61), "engine is longer than 60 characters"),
        ("fast", "a measured speed must be a JSON object"),
    ],
)
def test_a_bad_speed_is_refused_with_its_reason_and_nothing_else_is_lost(bad, reason):
    parsed = parse(feed("acme", [record("m-1", measured_speeds=[speed(), bad, speed(precision=8)]), record("m-2")]))
    assert [r.provider_machine_id for r in parsed.records] == ["m-1", "m-2"]
    assert parsed.rejected == []
    (refused,) = parsed.rejected_speeds
    assert refused.machine_id == "m-1" and refused.reason.startswith("measured_speeds[1]: ")
    assert reason in refused.reason
    kept = parsed.records[0].measured_speeds
    assert [(s.model_slug, s.precision, s.tokens_per_second) for s in kept] == [
        ("llama-3-1-8b", 16, Decimal("5000.000")), ("llama-3-1-8b", 8, Decimal("5000.000"))
    ]
    assert parsed.records[1].measured_speeds is None  # no section: the machine keeps what it has


def test_a_good_speed_reads_into_checked_values():
    parsed = parse(feed("acme", [record("m-1", measured_speeds=[speed(model="LLaMA-3-1-70B", gpus=4,
                                                                       tokens_per_second=4400.5)])]))
    (measured,) = parsed.records[0].measured_speeds
    assert measured.model_slug == "llama-3-1-70b" and measured.gpus == 4
    assert measured.tokens_per_second == Decimal("4400.500")
    assert measured.measured_at == datetime(2025, 5, 1, 10, tzinfo=UTC)
    assert (measured.engine, measured.engine_version, measured.concurrency) == ("vLLM", "0.6.3", 64)
    assert (measured.input_tokens, measured.output_tokens, measured.measured_by) == (1024, 128, "Acme lab")


@pytest.fixture
def acme(feed_server, gpu_types, providers):
    LanguageModel.objects.create(name="Llama 3.1 8B", slug="llama-3-1-8b")
    provider = Provider.objects.create(name="Acme", slug="acme", tier="secure")
    return provider


def refresh(provider, feed_server, machines) -> object:
    provider.feed_url = feed_server.serve_json("acme", feed("acme", machines))
    provider.save()
    return refresh_provider(provider.pk)


def test_refresh_stores_speeds_keeps_them_when_omitted_and_drops_them_on_a_new_gpu_type(acme, feed_server):
    run = refresh(acme, feed_server, [
        record("m-1", measured_speeds=[speed(), speed(model="nope")]), record("m-2", free_gpus=1),
    ])
    assert run.status == "partial" and run.rejected == 1 and (run.added, run.gone) == (2, 0)
    assert run.rejected_details == [{"id": "m-1", "reason": "measured_speeds[1]: unknown model 'nope'"}]
    machine = Machine.objects.get(provider_machine_id="m-1")
    (stored,) = MeasuredSpeed.objects.filter(machine=machine)
    assert (stored.value, stored.gpus, stored.engine, stored.source) == (Decimal("5000.000"), 1, "vLLM", "feed")
    assert stored.gpu_type_id == machine.gpu_type_id and stored.measured_by == "Acme lab"

    # A later feed without the section keeps the speed; staff's own measurement is never touched.
    MeasuredSpeed.objects.create(machine=machine, model_kind="language", model_slug="llama-3-1-8b", precision=8,
                                 value=Decimal("6100"), unit="tokens/s", measured_at=datetime(2025, 4, 1, tzinfo=UTC))
    run = refresh(acme, feed_server, [record("m-1", free_gpus=2), record("m-2")])
    assert run.status == "ok"
    assert MeasuredSpeed.objects.filter(machine=machine).count() == 2

    # The section replaces the feed's own speeds (an empty list clears them), staff's stay.
    refresh(acme, feed_server, [record("m-1", measured_speeds=[speed(tokens_per_second="5200")]), record("m-2")])
    assert sorted(MeasuredSpeed.objects.filter(machine=machine).values_list("source", "value")) == [
        ("feed", Decimal("5200.000")), ("staff", Decimal("6100.000"))
    ]
    refresh(acme, feed_server, [record("m-1", measured_speeds=[]), record("m-2")])
    assert list(MeasuredSpeed.objects.filter(machine=machine).values_list("source", flat=True)) == ["staff"]

    # Another GPU type: every measurement of the old one goes, whoever entered it.
    refresh(acme, feed_server, [record("m-1", measured_speeds=[speed()]), record("m-2")])
    run = refresh(acme, feed_server, [record("m-1", gpu_type="RTX 4090", gpu_count=1, free_gpus=1,
                                             memory_mib=24_564), record("m-2")])
    assert run.status == "ok"
    assert not MeasuredSpeed.objects.filter(machine=machine).exists()


def test_the_demo_feed_carries_the_speeds_and_a_refresh_keeps_them(client, db):
    load_shipped_catalog()
    provider = Provider.objects.get(slug="harbor-compute")
    body = client.get("/feeds/demo/harbor-compute.json").json()
    with_speeds = [m for m in body["machines"] if "measured_speeds" in m]
    assert with_speeds and len(with_speeds) < len(body["machines"])
    before = sorted(
        MeasuredSpeed.objects.filter(machine__provider=provider, source="feed").values_list(
            "machine__provider_machine_id", "model_slug", "precision", "value", "gpus"
        )
    )
    from django.utils import timezone

    from nodelodge.refresh.models import SyncRun
    from nodelodge.refresh.services import apply_feed, gpu_type_index, language_model_slugs

    parsed = adapter_for("nodelodge-v1").parse(
        json.dumps(body).encode(), provider_slug=provider.slug, gpu_types=gpu_type_index(),
        models=language_model_slugs(),
    )
    assert parsed.rejected == [] and parsed.rejected_speeds == []
    run = SyncRun.objects.create(provider=provider, started_at=timezone.now())
    apply_feed(provider, parsed, run, now=timezone.now())
    after = sorted(
        MeasuredSpeed.objects.filter(machine__provider=provider, source="feed").values_list(
            "machine__provider_machine_id", "model_slug", "precision", "value", "gpus"
        )
    )
    assert after == before
