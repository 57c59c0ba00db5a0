"""Text no database can store (a NUL byte, a lone surrogate) rejects its record, not the feed; an
empty machine list never marks a provider's whole fleet gone unless the feed says it is empty."""
from __future__ import annotations

import json
from decimal import Decimal

import pytest

from catalog.models import Machine
from nodelodge.refresh.feeds import adapter_for
from nodelodge.refresh.feeds.base import FeedError
from nodelodge.refresh.services import refresh_provider
from tests.factories import make_machine
from tests.feeds import GPU_TYPES, feed, record

VALID = 28


def parse(document, models: frozenset[str] = frozenset()):
    return adapter_for("nodelodge-v1").parse(json.dumps(document).encode(), provider_slug="acme", gpu_types=GPU_TYPES, models=models
    )


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (record("m-1", region="Frank\x00furt"), "region contains U+0000"),
        (record("m-1", region="Frankfurt \ud800"), "region contains U+D800"),
        (record("m-1", region="Frank\x1bfurt"), "region contains U+001B"),
        (record("m-1\x00"), "id contains U+0000"),
        (record("m-\udfff"), "id contains U+DFFF"),
    ],
    ids=["nul-in-region", "surrogate-in-region", "escape-in-region", "nul-in-id", "surrogate-in-id"],
)
def test_text_that_cannot_be_stored_rejects_only_its_record(bad, reason):
    parsed = parse(feed("acme", [record("good-1"), bad, record("good-2")]))

    assert [r.provider_machine_id for r in parsed.records] == ["good-1", "good-2"]
    assert len(parsed.rejected) == 1 and reason in parsed.rejected[0].reason
    # A bad id is no usable id: it names no machine, so it cannot be matched to one.
    assert parsed.rejected[0].machine_id == (None if bad["id"] != "m-1" else "m-1")


def test_a_measured_speed_with_text_that_cannot_be_stored_is_refused_on_its_own():
    speed = {"model": "llama-3-1-8b", "precision": 16, "tokens_per_second": 2400,
             "measured_at": "2025-02-01T00:00:00Z", "engine": "vLLM\x00", "measured_by": "lab \ud800"}
    parsed = parse(feed("acme", [record("m-1", measured_speeds=[speed])]), frozenset({"llama-3-1-8b"}))
    assert [r.provider_machine_id for r in parsed.records] == ["m-1"]
    assert parsed.records[0].measured_speeds == ()
    assert [r.reason for r in parsed.rejected_speeds] == [
        "measured_speeds[0]: engine contains U+0000, a control character, which is not allowed in text"
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("where", ["region", "id"])
@pytest.mark.parametrize("character", ["\x00", "\ud800"], ids=["nul", "lone-surrogate"])
def test_one_bad_character_in_one_record_leaves_the_rest_applied(feed_server, gpu_types, providers, where, character):
    provider = providers["secure"]
    make_machine(provider, gpu_types["h100"], provider_machine_id="old-1", gpu_count=8, price_per_gpu_hour=Decimal("3.00"), free_gpus=8)
    bad = record("bad-1", region=f"Frankfurt{character}") if where == "region" else record(f"bad{character}1")
    machines = [record(f"m-{index:02d}", free_gpus=index % 9) for index in range(VALID)]
    provider.feed_url = feed_server.serve_json("c", feed(provider.slug, [*machines[:14], bad, *machines[14:]]))
    provider.save()

    run = refresh_provider(provider.pk)

    assert run.status == "partial", run.error
    assert (run.received, run.added, run.rejected) == (VALID + 1, VALID, 1)
    (detail,) = run.rejected_details
    code = f"U+{ord(character):04X}"
    assert code in detail["reason"] and detail["reason"].startswith(where)
    assert Machine.objects.filter(provider=provider, provider_machine_id__startswith="m-").count() == VALID
    assert Machine.objects.get(provider=provider, provider_machine_id="m-05").free_gpus == 5
    old = Machine.objects.get(provider=provider, provider_machine_id="old-1")
    if where == "id":  # a record with no usable id could be old-1: nobody is marked gone this time
        assert old.gone_at is None and "no usable id" in run.error
    else:
        assert old.gone_at is not None and run.gone == 1


@pytest.mark.django_db
def test_an_empty_machine_list_marks_nothing_gone_and_says_why(feed_server, gpu_types, providers):
    provider = providers["secure"]
    for name in ("a", "b", "c"):
        make_machine(provider, gpu_types["h100"], provider_machine_id=name, gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("3.00"))
    before = list(Machine.objects.order_by("pk").values_list("provider_machine_id", "free_gpus", "last_seen_at"))
    provider.feed_url = feed_server.serve_json("empty", feed(provider.slug, []))
    provider.save()

    run = refresh_provider(provider.pk)

    assert run.status == "failed"
    assert "lists no machines while 3 of the provider's machines are live" in run.error
    assert '"empty": true' in run.error
    assert run.gone == 0
    assert Machine.objects.filter(provider=provider, gone_at__isnull=False).count() == 0
    assert list(Machine.objects.order_by("pk").values_list("provider_machine_id", "free_gpus", "last_seen_at")) == before


@pytest.mark.django_db
def test_a_feed_that_says_it_is_empty_marks_every_machine_gone(feed_server, gpu_types, providers):
    provider = providers["secure"]
    for name in ("a", "b"):
        make_machine(provider, gpu_types["h100"], provider_machine_id=name, gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("3.00"))
    provider.feed_url = feed_server.serve_json("empty", {**feed(provider.slug, []), "empty": True})
    provider.save()

    run = refresh_provider(provider.pk)

    assert run.status == "ok", run.error
    assert run.gone == 2
    assert Machine.objects.filter(provider=provider, gone_at__isnull=True).count() == 0


@pytest.mark.django_db
def test_an_empty_list_from_a_provider_with_no_live_machines_is_fine(feed_server, gpu_types, providers):
    provider = providers["secure"]
    provider.feed_url = feed_server.serve_json("empty", feed(provider.slug, []))
    provider.save()

    run = refresh_provider(provider.pk)

    assert run.status == "ok" and run.error == "" and (run.received, run.gone) == (0, 0)


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({**feed("acme", [record("m-1")]), "empty": True}, '"empty" is true but the feed lists 1 machine'),
        ({**feed("acme", []), "empty": "yes"}, '"empty" must be true or false'),
    ],
    ids=["empty-with-machines", "empty-not-a-flag"],
)
def test_a_contradictory_empty_flag_refuses_the_whole_feed(document, reason):
    with pytest.raises(FeedError, match=reason):
        parse(document)
