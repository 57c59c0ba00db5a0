"""The watches' figure: how long evaluating every stored watch takes after a refresh, over the fleet the
benchmark generated (`python -m tests.bench --watches 10000`, the issue's 10,000 watches).

Watches are stored as users make them (every default written out), spread over the benchmark's
queries varied by price limit and countries, so many watches share a query as they do in life and
evaluation reads each distinct query once through the fleet reader.
"""
from __future__ import annotations

import itertools
import time

from .queries import QUERIES

WATCHES_PER_USER = 50
MAX_PRICES = ("", "1", "2.5", "5", "10", "20", "40", "80")
COUNTRIES = ("", "DE", "EU", "US", "FR,DE", "CH")
CONDITIONS = (("appears", None, None), ("cheapest_below", "3.00", None), ("at_least", None, 5))


def distinct_queries(count: int) -> list[dict[str, str]]:
    """`count` different watch queries: the benchmark's, varied by price limit and countries."""
    from django.http import QueryDict

    from nodelodge.recommendations.query import parse_query
    from nodelodge.watches.services import explicit_query

    found = []
    for (_name, query_string), max_price, countries in itertools.product(QUERIES, MAX_PRICES, COUNTRIES):
        data = {key: value for key, value in QueryDict(query_string).items()}
        if max_price:
            data["max_price"] = max_price
        if countries:
            data["countries"] = countries
        found.append(explicit_query(parse_query(data)))
        if len(found) == count:
            break
    return found


def store_watches(watches: int, queries: int) -> int:
    """Replaces every watch with `watches` active ones over `queries` distinct queries; returns how many
    distinct queries they ask."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from nodelodge.watches.models import Firing, Watch, new_secret
    from nodelodge.watches.services import query_key

    Firing.objects.all().delete()
    Watch.objects.all().delete()
    users = get_user_model().objects
    users.filter(username__startswith="bench-watcher-").delete()
    owners = users.bulk_create([
        get_user_model()(username=f"bench-watcher-{number}", email=f"bench-watcher-{number}@example.com")
        for number in range(-(-watches // WATCHES_PER_USER))
    ])
    params = distinct_queries(queries)
    now = timezone.now()
    rows = []
    for number in range(watches):
        query = params[number % len(params)]
        condition, price, machines = CONDITIONS[number % len(CONDITIONS)]
        rows.append(Watch(
            secret=new_secret(), feed_token=new_secret(), unsubscribe_token=new_secret(),
            owner=owners[number // WATCHES_PER_USER], query=query, query_key=query_key(query),
            condition=condition, price_per_hour=price, machines=machines, email=False, next_check_at=now,
        ))
    Watch.objects.bulk_create(rows, batch_size=2000)
    return len({row.query_key for row in rows})


def time_watch_evaluation(watches: int, queries: int, fleet: str, report, target_seconds: float | None) -> dict:
    """Stores the watches, then times one evaluation of all of them (the one after a refresh), with
    the firings it records; delivery is queued, not timed. Adds the figure to `report`."""
    from nodelodge.watches import evaluation as checks

    delivered = []
    queue = checks._queue_delivery
    checks._queue_delivery = delivered.append  # delivery runs in its own tasks; counted, not sent
    try:
        asked = store_watches(watches, queries)
        # The first check of watches just made: every one whose condition holds fires and records the
        # machines it saw (a whole answer per query). Then the check after a refresh as it usually is:
        # watches remember they match, most fire nothing, and the counts alone answer them.
        started = time.perf_counter()
        first = checks.evaluate_watches()
        first_seconds = time.perf_counter() - started
        started = time.perf_counter()
        evaluation = checks.evaluate_watches()
        seconds = time.perf_counter() - started
    finally:
        checks._queue_delivery = queue
    report.add(
        f"watch evaluation, first check of new watches ({len(first.fired):,} fire), {watches:,} watches "
        f"({asked:,} distinct queries)", fleet, first_seconds, "s",
    )
    report.add(
        f"watch evaluation after a refresh, {watches:,} watches ({asked:,} distinct queries)", fleet, seconds, "s",
        f"≤ {target_seconds:g} s" if target_seconds else "",
        (seconds <= target_seconds) if target_seconds else None,
    )
    return {"seconds": seconds, "first_seconds": first_seconds, "watches": evaluation.watches,
            "queries": evaluation.queries, "fired": len(first.fired) + len(evaluation.fired),
            "queued": len(delivered)}


# The delivery figure: countries the generated fleet has no machine in, one per probe watch, so each
# probe fires exactly when the refresh of its round brings the first machine there.
PROBE_COUNTRIES = ("IS", "LU", "MT", "CY", "EE", "LV", "LT", "SI", "SK", "HR",
                   "BG", "RO", "PT", "GR", "DK", "BE", "CZ", "HU", "NZ", "KR")
PROBE_PROVIDER = "bench-watch-probe"


def _celery(role: str, environment: dict, schedule_dir: str):
    import subprocess
    import sys

    arguments = [sys.executable, "-m", "celery", "-A", "nodelodge", role, "--loglevel=INFO"]
    if role == "worker":
        arguments += ["--concurrency", "2", "--without-gossip", "--without-mingle"]
    else:
        arguments += ["-s", f"{schedule_dir}/beat-schedule"]
    log = open(f"{schedule_dir}/{role}.log", "wb")  # noqa: SIM115 - the process holds it until it ends
    return subprocess.Popen(arguments, env=environment,  # noqa: S603 - our own interpreter and module
                            stdout=log, stderr=subprocess.STDOUT)


def time_watch_delivery(fleet: str, report, environment: dict, rounds: int = len(PROBE_COUNTRIES),
                        target_seconds: float | None = None) -> dict:
    """With the stored watches in place and a real worker and beat on Redis: `rounds` provider refreshes
    on the worker, each bringing a machine one probe watch waits for; each round timed from the end of
    the refresh that caused the firing to the signed webhook arriving at a receiver on loopback (the
    evaluation of every stored watch, the firing and the delivery in between). Adds the p95."""
    import tempfile
    from pathlib import Path

    from catalog.models import Provider
    from nodelodge.refresh import tasks as refresh_tasks
    from nodelodge.watches.services import WatchRequest, create_watch
    from tests.webhooks import Receiver

    from .feed import FeedServer
    from .queries import QUERIES
    from .runner import p95

    if not environment.get("REDIS_URL"):
        report.notes.append("watch delivery not measured: it needs Redis (REDIS_URL) for the worker and beat")
        return {}
    from django.contrib.auth import get_user_model
    from django.http import QueryDict
    from django.test import override_settings

    Provider.objects.filter(slug=PROBE_PROVIDER).delete()
    owner, _ = get_user_model().objects.get_or_create(username="bench-watch-probe",
                                                      defaults={"email": "probe@example.com"})
    base = dict(QueryDict(QUERIES[0][1]).items())
    latencies: list[float] = []
    receiver = Receiver()
    environment = {**environment, "WATCH_WEBHOOK_ALLOW_LOOPBACK": "1",
                   "WATCH_WEBHOOK_ALLOWED_PORTS": str(receiver.port),
                   "PROVIDER_REFRESH_INTERVAL_SECONDS": "86400"}
    # The receiver is on loopback, on a port of its own: allowed here and in the worker only by
    # these explicit settings.
    with override_settings(WATCH_WEBHOOK_ALLOW_LOOPBACK=True, WATCH_WEBHOOK_ALLOWED_PORTS=[receiver.port]), \
            FeedServer() as feed_server, \
            tempfile.TemporaryDirectory() as schedule_dir:
        provider = Provider.objects.create(name="Bench watch probe", slug=PROBE_PROVIDER, tier="secure",
                                           feed_url=feed_server.url, feed_format="nodelodge-v1")
        probes = [
            create_watch(owner, WatchRequest(query={**base, "countries": country}, email=False,
                                             webhook_url=receiver.url(f"probe-{country}")))
            for country in PROBE_COUNTRIES[:rounds]
        ]
        processes = [_celery("worker", environment, schedule_dir), _celery("beat", environment, schedule_dir)]
        try:
            records = []
            for number, (probe, country) in enumerate(zip(probes, PROBE_COUNTRIES, strict=False)):
                records.append(_probe_record(number, country))
                feed_server.body = _probe_feed(records)
                arrived_before = len(receiver.received)
                outcome = refresh_tasks.refresh_provider.delay(provider.pk).get(timeout=300)
                refreshed = time.monotonic()
                if outcome["status"] not in ("ok", "partial"):
                    raise RuntimeError(f"the probe refresh failed: {outcome}")
                path = f"/probe-{country}"
                deadline = refreshed + 300
                while time.monotonic() < deadline:
                    if any(call.path == path for call in receiver.received[arrived_before:]):
                        break
                    receiver.wait_for(len(receiver.received) + 1, timeout=1)
                else:
                    worker_log = Path(schedule_dir, "worker.log").read_text(errors="replace")[-4000:]
                    raise RuntimeError(f"probe watch {probe.pk} was not delivered within 300 s; the worker "
                                       f"said:\n{worker_log}")
                latencies.append(time.monotonic() - refreshed)
                print(f"    round {number + 1}: delivered {latencies[-1]:.2f} s after the refresh", flush=True)
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=30)
                except Exception:  # noqa: BLE001 - a worker that will not stop is killed
                    process.kill()
            receiver.close()
            Provider.objects.filter(slug=PROBE_PROVIDER).delete()
            get_user_model().objects.filter(pk=owner.pk).delete()
    value = p95(latencies)
    report.add(
        f"watch delivery after a refresh, p95 of {len(latencies)} refreshes (real worker and beat, "
        "signed webhook on loopback)", fleet, value, "s",
        f"≤ {target_seconds:g} s" if target_seconds else "", (value <= target_seconds) if target_seconds else None,
    )
    return {"latencies": latencies, "p95": value}


def _probe_record(number: int, country: str) -> dict:
    return {
        "id": f"probe-{number:02d}", "gpu_type": "H100 SXM 80GB", "gpu_count": 1, "free_gpus": 1,
        "memory_mib": 81_559, "available": True, "country": country, "region": "Probe",
        "price_per_gpu_hour": "9.990", "interruptible": False, "booking_limit_hours": None,
    }


def _probe_feed(records: list[dict]) -> bytes:
    import json

    return json.dumps({"provider": PROBE_PROVIDER, "generated_at": "2025-03-01T12:00:00Z",
                       "machines": records}).encode()
