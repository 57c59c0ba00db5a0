"""A throughput plan asked for while a refresh replaces the machines' measured speeds (new rows, new
ids) is answered from one consistent state of the catalog, never with a 500. The refresh is real
(its feed served on loopback, on its own thread and connection) and commits between the plan's
read of its machines and its read of their measurements."""
from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.http import QueryDict

from catalog.models import MeasuredSpeed, Provider
from catalog.services import load_catalog
from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.query import parse_query
from nodelodge.refresh.services import refresh_provider
from tests.feeds import feed, record
from tests.helpers import LLAMA_8B, race_together

pytestmark = pytest.mark.django_db(transaction=True)

QUERY = (
    LLAMA_8B +
    "&target_tokens=4000&efficiency=100&redundancy=0"
)
REQUESTS_EACH = 30
REFRESHES = 15
SPEED = {"model": "llama-3-1-8b", "precision": 16, "tokens_per_second": "2400", "gpus": 1,
         "measured_at": "2025-02-01T00:00:00Z", "engine": "vLLM", "engine_version": "0.6.3"}


class RefreshBetweenReads:
    """Before the statement that reads a plan's measurements by id runs, a refresh of the provider
    runs to its commit on another thread; once."""

    def __init__(self, provider_id: int):
        self.provider_id = provider_id
        self.runs = []

    def __call__(self, execute, sql, params, many, context):
        if not self.runs and '"catalog_measuredspeed"."id" IN' in sql:
            thread = threading.Thread(target=self.refresh)
            thread.start()
            thread.join(timeout=60)
            assert self.runs, "the refresh did not finish"
        return execute(sql, params, many, context)

    def refresh(self):
        try:
            self.runs.append(refresh_provider(self.provider_id))
        finally:
            connection.close()


def test_a_plan_read_while_a_refresh_replaces_its_speeds_is_answered_whole(client, feed_server):
    load_catalog(fleet=False)
    provider = Provider.objects.create(name="Hosts Direct", slug="hosts-direct", tier="secure")
    machines = [
        record(f"h-{index}", gpu_count=1, free_gpus=1, price_per_gpu_hour=f"2.{index}0", measured_speeds=[SPEED])
        for index in range(3)
    ]
    provider.feed_url = feed_server.serve_json("hosts", feed(provider.slug, machines))
    provider.save()
    assert refresh_provider(provider.pk).status == "ok"
    before = set(MeasuredSpeed.objects.values_list("pk", flat=True))
    hook = RefreshBetweenReads(provider.pk)

    with connection.execute_wrapper(hook):
        response = client.get(f"/api/v1/recommendations?{QUERY}")

    assert [run.status for run in hook.runs] == ["ok"]
    assert before.isdisjoint(MeasuredSpeed.objects.values_list("pk", flat=True))  # every speed replaced
    assert response.status_code == 200, response.content
    (plan,) = response.json()["throughput_plan"]["plans"]
    assert [m["provider_machine_id"] for m in plan["machines"]] == ["h-0", "h-1"]
    assert {m["measured_speed"]["engine_version"] for m in plan["machines"]} == {"0.6.3"}


@pytest.mark.slow
def test_plans_asked_for_while_refreshes_run_are_all_answered(feed_server):
    """Refreshes back to back on one thread, plan requests on two others, each on its own connection."""
    load_catalog(fleet=False)
    provider = Provider.objects.create(name="Hosts Direct", slug="hosts-direct", tier="secure")
    machines = [
        record(f"h-{index}", gpu_count=1, free_gpus=1, price_per_gpu_hour=f"2.{index}0", measured_speeds=[SPEED])
        for index in range(6)
    ]
    provider.feed_url = feed_server.serve_json("hosts", feed(provider.slug, machines))
    provider.save()
    assert refresh_provider(provider.pk).status == "ok"
    query = parse_query(QueryDict(QUERY))
    plans: list[tuple[str, ...]] = []
    refreshes: list[str] = []

    def reader():
        for _ in range(REQUESTS_EACH):
            (plan,) = recommendation_for(query).throughput.to_dict()["plans"]
            plans.append(tuple(m["provider_machine_id"] for m in plan["machines"]))

    def refresher():
        for _ in range(REFRESHES):
            refreshes.append(refresh_provider(provider.pk).status)

    race_together([reader, reader, refresher])  # a reader's KeyError or 500 would be raised here
    assert refreshes == ["ok"] * REFRESHES
    assert plans == [("h-0", "h-1")] * (2 * REQUESTS_EACH)
