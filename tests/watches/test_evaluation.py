"""Watches: the saved query with its defaults written out, the conditions, firing once per match, the
cool-down, staleness without a write, the limit per user."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from catalog.models import Machine
from nodelodge.watches import evaluation, services
from nodelodge.watches.evaluation import evaluate_watches
from nodelodge.watches.models import Firing, Watch
from nodelodge.watches.services import WatchError, WatchRequest, create_watch
from sizing.calculators.vllm_versions import DEFAULT_VERSION
from tests.factories import make_user
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db(transaction=True)
QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))


@pytest.fixture(autouse=True)
def no_delivery(monkeypatch):
    """Delivery has its own tests; here the firings alone are counted."""
    monkeypatch.setattr(evaluation, "_queue_delivery", lambda firing_id: None)


def watch(owner=None, **fields) -> Watch:
    return create_watch(owner or make_user(), WatchRequest(query=fields.pop("query", QUERY), **fields))


def test_a_watch_writes_every_default_out(catalog):
    made = watch(query={"model": "llama-3-1-8b"})

    assert made.query == {
        "workload": "inference", "model": "llama-3-1-8b", "precision": "16", "kv_cache": "16",
        "context": "4096", "requests": "1", "tier": "both", "sort": "price",
    }
    assert made.query_key == (
        "context=4096&kv_cache=16&model=llama-3-1-8b&precision=16&requests=1&sort=price&tier=both&workload=inference"
    )
    assert (made.state, made.cooldown_seconds, made.condition, made.matching) == ("active", 3600, "appears", False)
    assert len(made.secret) >= 40 and made.secret != made.feed_token != made.unsubscribe_token


def test_an_empty_answer_fires_when_a_machine_appears_and_only_once(catalog):
    made = watch()
    now = timezone.now()

    assert evaluate_watches(now=now).fired == []
    machine = catalog.machine()
    first = evaluate_watches(now=now + timedelta(minutes=1))
    again = evaluate_watches(now=now + timedelta(minutes=2))

    assert len(first.fired) == 1 and again.fired == []
    firing = Firing.objects.get()
    assert (firing.machines_total, firing.cheapest_price_per_hour) == (1, Decimal("2.4900"))
    assert [(m["id"], m["price_per_hour"], m["gpus"]) for m in firing.matches] == [(machine.pk, "2.4900", 1)]
    made.refresh_from_db()
    assert made.matching and made.last_fired_at == now + timedelta(minutes=1)
    assert made.next_check_at == now + timedelta(minutes=2) + evaluation.check_interval()


def test_a_match_that_leaves_and_comes_back_fires_again_only_after_the_cool_down(catalog):
    watch()
    machine = catalog.machine()
    now = timezone.now()
    assert len(evaluate_watches(now=now).fired) == 1

    Machine.objects.filter(pk=machine.pk).update(is_available=False)
    assert evaluate_watches(now=now + timedelta(minutes=5)).fired == []
    Machine.objects.filter(pk=machine.pk).update(is_available=True, last_seen_at=now + timedelta(minutes=10))
    assert evaluate_watches(now=now + timedelta(minutes=10)).fired == []  # within the hour
    Machine.objects.filter(pk=machine.pk).update(last_seen_at=now + timedelta(minutes=61))

    assert len(evaluate_watches(now=now + timedelta(minutes=61)).fired) == 1
    assert Firing.objects.count() == 2


def test_a_stale_machine_stops_matching_without_a_write(catalog):
    made = watch()
    machine = catalog.machine()
    now = timezone.now()
    assert len(evaluate_watches(now=now).fired) == 1
    updated_at = Machine.objects.get(pk=machine.pk).updated_at

    evaluate_watches(now=machine.last_seen_at + timedelta(minutes=16))

    made.refresh_from_db()
    assert made.matching is False
    assert Machine.objects.get(pk=machine.pk).updated_at == updated_at


def test_cheapest_below_fires_only_under_the_price(catalog):
    watch(condition="cheapest_below", price_per_hour="2.00")
    machine = catalog.machine(price_per_gpu_hour=Decimal("2.50"))
    now = timezone.now()
    assert evaluate_watches(now=now).fired == []

    Machine.objects.filter(pk=machine.pk).update(price_per_gpu_hour=Decimal("1.99"))

    assert len(evaluate_watches(now=now).fired) == 1
    assert Firing.objects.get().cheapest_price_per_hour == Decimal("1.9900")


def test_at_least_n_machines(catalog):
    watch(condition="at_least", machines=2)
    catalog.machine()
    now = timezone.now()
    assert evaluate_watches(now=now).fired == []

    catalog.machine()

    assert len(evaluate_watches(now=now).fired) == 1
    assert Firing.objects.get().machines_total == 2


def test_a_paused_watch_is_not_checked_and_resumes(catalog):
    owner = make_user()
    made = watch(owner)
    catalog.machine()
    services.pause(owner, made.pk)
    assert evaluate_watches().fired == []

    services.resume(owner, made.pk)

    assert len(evaluate_watches().fired) == 1


def test_watches_asking_the_same_query_are_read_once(catalog):
    for _ in range(3):
        watch()
    watch(query={**QUERY, "precision": "8"})
    catalog.machine()

    evaluation = evaluate_watches()

    assert (evaluation.queries, evaluation.watches, len(evaluation.fired)) == (2, 4, 4)


def test_due_only_checks_the_watches_whose_time_has_come(catalog):
    made = watch()
    catalog.machine()
    now = timezone.now()
    Watch.objects.filter(pk=made.pk).update(next_check_at=now + timedelta(minutes=5))

    assert evaluate_watches(now=now, due_only=True).watches == 0
    assert evaluate_watches(now=now + timedelta(minutes=5), due_only=True).watches == 1


def test_fifty_watches_per_user_at_most(catalog):
    owner = make_user()
    for _ in range(services.MAX_WATCHES_PER_USER):
        watch(owner)

    with pytest.raises(WatchError) as refused:
        watch(owner)

    assert "50 watches" in refused.value.errors["__all__"]
    assert Watch.objects.filter(owner=owner).count() == 50


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"condition": "cheapest_below"}, "price_per_hour"),
        ({"condition": "cheapest_below", "price_per_hour": "-1"}, "price_per_hour"),
        ({"condition": "at_least", "machines": "0"}, "machines"),
        ({"condition": "plan_below", "price_per_hour": "5"}, "condition"),
        ({"condition": "sometimes"}, "condition"),
        ({"cooldown_seconds": "x"}, "cooldown_seconds"),
        ({"auto_launch": True}, "auto_launch_max_price"),
        ({"query": {**QUERY, "context": "0"}}, "context"),
        ({"webhook_url": "http://example.com/hook"}, "webhook_url"),
    ],
)
def test_bad_watches_name_the_field(catalog, fields, field):
    with pytest.raises(WatchError) as refused:
        watch(**fields)

    assert field in refused.value.errors
    assert not Watch.objects.exists()


def test_the_embedded_runs_refresh_command_checks_the_watches_after_its_round(catalog, feed_server):
    from io import StringIO

    from django.core.management import call_command

    from tests.feeds import feed, record

    watch()
    catalog.provider.feed_url = feed_server.serve_json("p", feed(catalog.provider.slug, [record("fra-9")]))
    catalog.provider.save()
    out = StringIO()

    call_command("refresh_providers", stdout=out)

    assert out.getvalue().splitlines()[-1] == "watches: 1 checked, 1 fired"
    assert Firing.objects.get().matches[0]["provider_machine_id"] == "fra-9"


def test_a_throughput_plan_fires_when_its_cost_drops_below_the_price(catalog):
    """100 tokens/s on one GPU measured at 2,000, with one spare copy: two machines of one GPU."""
    from tests.factories import make_measured_speed

    watch(query={**QUERY, "target_tokens": "100"}, condition="plan_below", price_per_hour="4.00")
    machines = [catalog.machine(price_per_gpu_hour=Decimal("2.49")) for _ in range(2)]
    for machine in machines:
        make_measured_speed(machine, "2000")
    now = timezone.now()
    assert evaluate_watches(now=now).fired == []  # $4.98/h

    Machine.objects.filter(pk__in=[m.pk for m in machines]).update(price_per_gpu_hour=Decimal("1.50"))

    assert len(evaluate_watches(now=now).fired) == 1
    assert Firing.objects.get().plan_price_per_hour == Decimal("3.0000")


@pytest.mark.parametrize("extra", [{}, {"max_price": "3"}, {"tier": "secure"}, {"countries": "DE"},
                                   {"budget": "10"}, {"precision": "8"}])
def test_the_counts_alone_give_the_whole_answers_total_and_cheapest_price(catalog, extra):
    # The glance a check starts with (one counting statement) agrees with the whole answer it saves.
    catalog.machine(price_per_gpu_hour=Decimal("2.4900"), country="DE")
    catalog.machine(price_per_gpu_hour=Decimal("1.9000"), country="FR", gpu_count=2, free_gpus=2)
    catalog.machine(price_per_gpu_hour=Decimal("4.1000"), country="DE", tier="secure")
    query = services.watch_query(watch(query={**QUERY, **extra}))
    now = timezone.now()

    glanced, whole = evaluation.glance(query, now), evaluation.find(query, now)

    assert not glanced.described and whole.described
    assert (glanced.machines_total, glanced.cheapest) == (whole.machines_total, whole.cheapest)


def test_a_check_that_fires_nothing_describes_no_machine(catalog, monkeypatch):
    catalog.machine()
    watch()
    evaluate_watches(now=timezone.now())  # fires, and records the machine it saw
    described = []
    monkeypatch.setattr(evaluation, "find", lambda query, now: described.append(query))

    later = evaluate_watches(now=timezone.now() + timedelta(minutes=1))

    assert later.fired == [] and later.watches == 1
    assert described == []


def test_a_filtered_query_is_answered_whole(catalog):
    # List filters work over the machines described, so the counts alone cannot answer them.
    catalog.machine()
    query = services.watch_query(watch(query={**QUERY, "min_memory_gib": "40"}))

    assert evaluation.glance(query, timezone.now()) is None
    assert evaluation.find(query, timezone.now()).machines_total == 1


def test_a_check_asked_for_during_the_last_round_is_queued_not_lost(catalog, monkeypatch):
    from django.core.cache import cache

    from nodelodge.watches import tasks

    rounds, queued = [], []
    real = evaluation.evaluate_watches

    def asked_again_meanwhile(**kwargs):
        rounds.append(1)
        outcome = real(**kwargs)
        cache.set(tasks.AGAIN_KEY, 1)  # a refresh ends while this round runs and asks for a check
        return outcome

    monkeypatch.setattr(evaluation, "evaluate_watches", asked_again_meanwhile)
    monkeypatch.setattr(tasks.evaluate_watches, "delay", lambda: queued.append(1))
    try:
        outcome = tasks.evaluate_watches()
    finally:
        cache.delete(tasks.AGAIN_KEY)

    assert outcome["rounds"] == len(rounds) == 5 and queued == [1]
    assert cache.get(tasks.LOCK_KEY) is None


def test_a_check_with_nothing_asked_meanwhile_queues_nothing(catalog, monkeypatch):
    from django.core.cache import cache

    from nodelodge.watches import tasks

    queued = []
    monkeypatch.setattr(tasks.evaluate_watches, "delay", lambda: queued.append(1))

    outcome = tasks.evaluate_watches()

    assert outcome["rounds"] == 1 and queued == [] and cache.get(tasks.AGAIN_KEY) is None


def test_a_vllm_watch_is_sized_on_its_release_and_keeps_it_written_out(catalog):
    # 4 requests of 114,000 tokens fit one H100 under the current stable release, not under vLLM 0.19: the
    # current one's default gpu_memory_utilization, 0.92, gives more than the 1 GiB of CUDA graphs it pays
    # inside the budget, where 0.19 takes 0.9 and keeps the graphs outside.
    asked = {**QUERY, "engine": "vllm", "context": "114000", "requests": "4"}
    old = watch(query={**asked, "engine_version": "0.19"})
    current = watch(query=asked)
    assert old.query["engine_version"] == "0.19"
    assert current.query["engine_version"] == DEFAULT_VERSION  # a later default keeps its meaning
    catalog.machine()

    evaluation_result = evaluate_watches(now=timezone.now() + timedelta(minutes=1))

    assert [Firing.objects.get(pk=pk).watch_id for pk in evaluation_result.fired] == [current.pk]


def test_the_migration_keeps_a_saved_vllm_watch_on_the_release_it_was_sized_on(db):
    """On both databases (a JSON lookup on the saved query)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from tests.helpers import migrate

    old = migrate([("watches", "0003_below_median")])
    try:
        OldWatch = old.get_model("watches", "Watch")
        owner = make_user()
        vllm = {**QUERY, "engine": "vllm", "kv_cache": "16", "sort": "price"}
        saved, plain = (
            OldWatch.objects.create(owner_id=owner.pk, query=query, query_key=services.query_key(query),
                                    secret=f"s{index}", feed_token=f"f{index}", unsubscribe_token=f"u{index}")
            for index, query in enumerate((vllm, QUERY)))
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("watches"))
    kept = Watch.objects.get(pk=saved.pk)
    assert kept.query == {**vllm, "engine_version": "0.19"}
    assert kept.query_key == services.query_key(kept.query) and "engine_version=0.19" in kept.query_key
    assert Watch.objects.get(pk=plain.pk).query == QUERY
    assert services.watch_query(kept).vllm_release.version.text == "0.19"
