"""A machine's site and interconnect in the provider feed: optional (left out: no site, no interconnect),
checked like every other field (a bad value rejects that record with its reason, the others apply), kept
by a refresh over loopback HTTP and carried by the demo feed."""
from __future__ import annotations

import json
import re

import pytest

from catalog.models import Machine, Provider
from nodelodge.refresh.feeds import adapter_for
from nodelodge.refresh.services import refresh_provider
from tests.factories import load_shipped_catalog
from tests.feeds import GPU_TYPES, feed, record

pytestmark = pytest.mark.django_db

CLUSTERED = {"site": "fra-2", "interconnect": "infiniband", "interconnect_gbps": 400}


def parse(document):
    return adapter_for("nodelodge-v1").parse(json.dumps(document).encode(), provider_slug="acme", gpu_types=GPU_TYPES)


BAD_FACTS = [
    ({"interconnect": "infiniband"}, "interconnect infiniband needs interconnect_gbps, its speed in Gb/s"),
    ({"interconnect": "roce", "interconnect_gbps": None}, "interconnect roce needs interconnect_gbps"),
    ({"interconnect_gbps": 400}, "interconnect_gbps is given but interconnect is none"),
    ({"interconnect": "none", "interconnect_gbps": 100}, "interconnect_gbps is given but interconnect is none"),
    ({"interconnect": "token-ring", "interconnect_gbps": 4}, "interconnect must be one of none, ethernet, infiniband, roce"),
    ({"interconnect": 400}, "interconnect must be one of"),
    ({"interconnect": "roce", "interconnect_gbps": 0}, "interconnect_gbps must be between 1 and 100,000"),
    ({"interconnect": "roce", "interconnect_gbps": 400_000_000}, "interconnect_gbps must be between 1 and 100,000"),
    ({"interconnect": "roce", "interconnect_gbps": "400"}, "interconnect_gbps must be a whole number"),
    ({"interconnect": "roce", "interconnect_gbps": 400.5}, "interconnect_gbps must be a whole number"),
    ({"interconnect": "roce", "interconnect_gbps": True}, "interconnect_gbps must be a whole number"),
    ({"site": 7}, "site must be text"),
    ({"site": "x" * 121}, "site is longer than 120 characters"),
    ({"site": "fra\x002"}, "site contains U+0000"),
    ({"site": "fra\ud8002"}, "site contains U+D800, a lone surrogate"),
]


@pytest.mark.parametrize(("facts", "reason"), BAD_FACTS, ids=[reason for _, reason in BAD_FACTS])
def test_a_bad_value_rejects_that_record_with_its_reason_and_the_others_go_on(facts, reason):
    parsed = parse(feed("acme", [record("good-1", **CLUSTERED), record("m-1", **facts), record("good-2")]))
    assert [r.provider_machine_id for r in parsed.records] == ["good-1", "good-2"]
    [rejected] = parsed.rejected
    assert rejected.machine_id == "m-1" and reason in rejected.reason


def test_the_facts_read_into_checked_values_and_default_to_none():
    parsed = parse(feed("acme", [
        record("m-1", site="  fra-2 ", interconnect=" InfiniBand ", interconnect_gbps=400),
        record("m-2"),
        record("m-3", site=None, interconnect=None, interconnect_gbps=None),
        record("m-4", site="ams-1", interconnect="ethernet", interconnect_gbps=25),
    ]))
    assert parsed.rejected == []
    assert [(r.site, r.interconnect, r.interconnect_gbps) for r in parsed.records] == [
        ("fra-2", "infiniband", 400), ("", "none", None), ("", "none", None), ("ams-1", "ethernet", 25),
    ]


@pytest.fixture
def acme(feed_server, gpu_types):
    return Provider.objects.create(name="Acme", slug="acme", tier="secure")


def refresh(provider, feed_server, machines):
    provider.feed_url = feed_server.serve_json("acme", feed("acme", machines))
    provider.save()
    return refresh_provider(provider.pk)


def facts(machine_id: str) -> tuple:
    return Machine.objects.filter(provider_machine_id=machine_id).values_list(
        "site", "interconnect", "interconnect_gbps").get()


def test_a_refresh_stores_the_facts_changes_them_and_keeps_a_rejected_machine_as_it_was(acme, feed_server):
    run = refresh(acme, feed_server, [record("m-1", **CLUSTERED), record("m-2")])
    assert (run.status, run.added, run.rejected) == ("ok", 2, 0)
    assert facts("m-1") == ("fra-2", "infiniband", 400)
    assert facts("m-2") == ("", "none", None)

    # A change of network alone counts as an update; a bad record leaves its machine exactly as it was.
    run = refresh(acme, feed_server, [
        record("m-1", site="fra-2", interconnect="roce", interconnect_gbps=200),
        record("m-2", interconnect="infiniband"),
    ])
    assert (run.status, run.updated, run.unchanged, run.rejected, run.gone) == ("partial", 1, 0, 1, 0)
    assert run.rejected_details == [
        {"id": "m-2", "reason": "interconnect infiniband needs interconnect_gbps, its speed in Gb/s"}
    ]
    assert facts("m-1") == ("fra-2", "roce", 200)
    assert facts("m-2") == ("", "none", None)

    # Left out again: no site, no interconnect.
    run = refresh(acme, feed_server, [record("m-1"), record("m-2")])
    assert (run.status, run.updated, run.unchanged) == ("ok", 1, 1)
    assert facts("m-1") == ("", "none", None)


def test_the_demo_feed_carries_the_facts_so_a_refresh_keeps_them(client, db):
    load_shipped_catalog()
    clustered = Machine.objects.exclude(interconnect="none").exclude(site="")
    provider = Provider.objects.get(pk=clustered.values_list("provider", flat=True).order_by("provider").first())
    before = sorted(clustered.filter(provider=provider).values_list(
        "provider_machine_id", "site", "interconnect", "interconnect_gbps"))
    assert before
    body = client.get(f"/feeds/demo/{provider.slug}.json").json()
    entries = {m["id"]: m for m in body["machines"]}
    for machine_id, site, interconnect, gbps in before:
        assert (entries[machine_id]["site"], entries[machine_id]["interconnect"],
                entries[machine_id]["interconnect_gbps"]) == (site, interconnect, gbps)
    assert any("interconnect" not in entry for entry in entries.values())


def test_a_refresh_writes_known_machines_in_the_order_of_their_ids_as_a_group_booking_locks_them(acme, feed_server):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    refresh(acme, feed_server, [record(f"m-{n}", **CLUSTERED) for n in range(1, 4)])
    by_name = dict(Machine.objects.values_list("provider_machine_id", "pk"))

    # The feed lists them backwards, with a new machine first.
    with CaptureQueriesContext(connection) as captured:
        run = refresh(acme, feed_server, [record("m-new"), *(record(f"m-{n}", **CLUSTERED) for n in (3, 2, 1))])

    assert run.status == "ok"
    [upsert] = [query["sql"] for query in captured.captured_queries if query["sql"].startswith("INSERT INTO")
                and "catalog_machine" in query["sql"].split("(")[0]]
    # SQLite lists the rows' values in turn ('m-1', …), PostgreSQL one array per column ({m-1,…}).
    positions = [re.search(rf"[{{',]{name}[}}',]", upsert).start() for name in ("m-1", "m-2", "m-3", "m-new")]
    assert positions == sorted(positions) and by_name["m-1"] < by_name["m-2"] < by_name["m-3"]
