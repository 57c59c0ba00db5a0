"""The performance benchmark: `python -m tests.bench [--quick | --smoke] [--out BENCHMARKS.md]`.

On PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/nodelodge_bench; the
database is created and migrated when missing) it generates fleets of 1,000, 10,000, 100,000 and
1,000,000 machines (the fleet counts kept as they are written) and, for each, times the wizard queries of queries.py through Django's test client and a
real gunicorn on loopback, the HTMX result panel and the JSON API alike, counts SQL queries per
request and times the request's heaviest SQL statement alone (the floor), and times the same answer
counted by scanning the fleet (the path before the kept counts). It then times provider refreshes
of 10,000, 100,000 and 1,000,000 machines from feeds served on loopback. At 100,000 machines
(`--load-size`) it runs the sustained load through the production layout (nginx over HTTPS in front of
gunicorn's 3 workers, the answer cache on; `run_load`, the mix in locustfile.py): 50 clients for 60 s
(targets: at least 40 req/s, p95 at most 1 s, no error), 200 clients (no error, no connection reset),
and a normal API call alone and beside four clients looping on deep pages (its p95 at most twice the
quiet one). `--load-only` runs the load alone. Per-query timings compute every answer
(`ANSWER_CACHE_SECONDS=0`). The table goes to BENCHMARKS.md; the exit status is 1 when a target is missed.

`--smoke` (used by the unit suite) runs 1,000 machines and a few queries in-process only, with no
targets; it expects Django to be set up already when called through `run()`.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import math
import os
import platform
import re
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from .queries import CLUSTER_COST, CLUSTER_COST_TARGET_MS, PLAN_QUERIES, QUERIES
from .swap import HEADING as SWAP_HEADING
from .swap import NOTES_HEADING

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/nodelodge_bench"
FLEET_SEED = 20250301
SIZES = (1_000, 10_000, 100_000, 1_000_000)
TARGET_SIZE = 100_000
REFRESH_SIZES = (10_000, 100_000, 1_000_000)
LOAD_SIZE = 100_000  # the fleet the sustained load runs on
LOAD_PHASE_SECONDS = 60
# Targets per fleet size: request median and p95 (ms), median growth over 1,000 machines, refresh (s).
TARGETS = {
    100_000: {"median": 100, "p95": 250, "growth": 3, "refresh": 30},
    1_000_000: {"median": 50, "p95": 120, "growth": 2, "refresh": 300},
}
# A provider's feed is capped (refresh.fetching.MAX_FEED_BYTES); larger refreshes take several
# providers of this many machines each, one after another, as the periodic refresh does.
MACHINES_PER_FEED = 100_000
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "result"}
# The deep-page clients' own address: any of 127/8 reaches the loopback, and the console's limits
# count per address.
DEEP_PAGE_SOURCE = "127.0.0.2"
LIMIT_WINDOW_SECONDS = 60  # the production API_RATE_LIMIT and PAGE_RATE_LIMIT are per minute
# A request's statements over the fleet, of which the slowest run alone is its floor.
FLOOR_TABLES = ("catalog_machine", "catalog_fleetshape", "catalog_latestspeed")
# Settings for every process the benchmark starts, and for itself: production-like, no HTTPS on loopback.
SERVER_ENV = {
    "DEBUG": "0",
    "SECRET_KEY": "benchmark-only-secret-key-not-for-production-0123456789abcdef",
    "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
    "SECURE_SSL_REDIRECT": "0",
    "API_RATE_LIMIT": "1000000/min",
    "PAGE_RATE_LIMIT": "1000000/min",
    "LOG_LEVEL": "ERROR",
    # Each timed request computes its answer (the load's server serves answers again, as production does).
    "ANSWER_CACHE_SECONDS": "0",
    "DJANGO_SETTINGS_MODULE": "nodelodge.settings",  # the console's own, also when pytest starts it
}


@dataclass
class Options:
    sizes: tuple[int, ...] = SIZES
    queries: int = len(QUERIES)
    plans: int = len(PLAN_QUERIES)
    warmup: int = 3
    runs: int = 15
    floor_runs: int = 5
    gunicorn: bool = True
    hostile: bool = False
    refresh_sizes: tuple[int, ...] = REFRESH_SIZES
    load_seconds: int = LOAD_PHASE_SECONDS
    load_users: int = 50
    load_size: int = LOAD_SIZE
    crowd_users: int = 200
    crowd_seconds: int = LOAD_PHASE_SECONDS
    burst_users: int = 50  # the mix without think time (#41)
    burst_seconds: int = LOAD_PHASE_SECONDS
    quiet_seconds: int = 30
    load_workers: int = 3
    targets: bool = True
    out: Path | None = REPO / "BENCHMARKS.md"
    analyze_with_vacuum: bool = True
    watches: int = 10_000  # watches evaluated over the largest fleet (tests/bench/watches.py; 0: none)
    watch_queries: int = 500  # distinct queries they ask
    reuse_fleet: bool = False  # a fleet of the asked size already in the database is measured as it is
    watch_delivery_rounds: int = 20  # refreshes timed to the webhook they cause (0: none; needs REDIS_URL)
    history: bool = True  # the price history page over the largest fleet's 90 days (tests/bench/history.py)


@dataclass
class Row:
    figure: str
    fleet: str
    value: float | None
    unit: str
    target: str = ""
    passed: bool | None = None  # None: no target
    floor: float | None = None  # the same figure for the request's slowest SQL statement run alone

    def value_text(self) -> str:
        if self.value is None:
            return "n/a"
        if self.unit == "ms":
            return f"{self.value:,.1f} ms"
        if self.unit == "s":
            return f"{self.value:,.2f} s"
        if self.unit == "×":
            return f"{self.value:.2f} ×"
        if self.unit == "req/s":
            return f"{self.value:,.1f} req/s"
        return f"{self.value:,.0f}{(' ' + self.unit) if self.unit else ''}"


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    details: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, figure, fleet, value, unit, target="", passed=None, floor=None) -> Row:
        row = Row(figure, fleet, value, unit, target, passed, floor)
        self.rows.append(row)
        print(f"  {figure} [{fleet}]: {row.value_text()}" + (f"  (target {target}: {'pass' if passed else 'FAIL'})"
              if passed is not None else ""), flush=True)
        return row

    @property
    def failed(self) -> list[Row]:
        return [row for row in self.rows if row.passed is False]


# --- statistics -----------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def timed_ms(call, warmup: int, runs: int) -> list[float]:
    for _ in range(warmup):
        call()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


# --- the fleet ------------------------------------------------------------------------------------


def prepare_fleet(machines: int, options: Options) -> float:
    """Replaces every machine with a generated fleet; returns the generation's seconds (None where
    `--reuse-fleet` found the fleet of that size a run left in the database)."""
    from django.db import connection

    from catalog.fleets import generate_fleet
    from catalog.models import Machine

    if options.reuse_fleet and Machine.objects.count() == machines:
        return None

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE catalog_machine CASCADE")
    started = time.perf_counter()
    generate_fleet(machines=machines, seed=FLEET_SEED)
    seconds = time.perf_counter() - started
    with connection.cursor() as cursor:
        # Fresh statistics, as autovacuum would leave them on a live database: for the machines and
        # for the fleet counts (without them the planner takes the counts' few thousand rows for
        # about a hundred thousand and sorts on disk), and for the speeds and the latest speeds the
        # writes keep (without them it takes tens of thousands of rows for one and joins by loops).
        for table in ("catalog_machine", "catalog_fleetshape", "catalog_measuredspeed", "catalog_latestspeed"):
            cursor.execute(f"VACUUM ANALYZE {table}" if options.analyze_with_vacuum else f"ANALYZE {table}")
    return seconds


def shown_query(query_string: str) -> str:
    """The query string the result panel's own form sends (with `shown`, so it is not retargeted)."""
    from django.http import QueryDict

    from nodelodge.wizard.views import _form_values

    values, row = _form_values(QueryDict(query_string))
    return f"{query_string}&shown={values['workload']}:{row.kind if row is not None else ''}:ok"


# --- in-process measurement -----------------------------------------------------------------------


@dataclass
class QueryFigures:
    label: str
    html_ms: list[float]
    api_ms: list[float]
    html_queries: int
    api_queries: int
    floor_ms: float
    floor_sql: str
    server_html_ms: list[float] = field(default_factory=list)
    server_api_ms: list[float] = field(default_factory=list)
    scan_ms: list[float] = field(default_factory=list)  # the whole answer, counted by the scan
    scan_floor_ms: float = 0.0


def _check(response, what: str) -> None:
    if response.status_code != 200:
        raise RuntimeError(f"{what} answered {response.status_code}: {response.content[:300]!r}")
    if response.headers.get("HX-Retarget"):
        raise RuntimeError(f"{what} was retargeted to {response['HX-Retarget']}; the `shown` value is wrong")


def floor_of(captured: list[dict], runs: int) -> tuple[float, str]:
    """The slowest catalog_machine statement of a request, run alone: median ms and its SQL."""
    from django.db import connection

    slowest, slowest_sql = 0.0, ""
    with connection.cursor() as cursor:
        for query in captured:
            sql = query["sql"]
            if not any(table in sql for table in FLOOR_TABLES) or not sql.lstrip().upper().startswith(("SELECT", "(SELECT", "WITH")):
                continue
            times = []
            for _ in range(runs + 1):
                started = time.perf_counter()
                cursor.execute(sql)
                cursor.fetchall()
                times.append((time.perf_counter() - started) * 1000)
            figure = median(times[1:])
            if figure > slowest:
                slowest, slowest_sql = figure, sql
    return slowest, slowest_sql


def measure_in_process(options: Options, queries: list[tuple[str, str]] | None = None) -> list[QueryFigures]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    figures = []
    for label, query_string in QUERIES[: options.queries] if queries is None else queries:
        html_url = "/?" + shown_query(query_string)
        api_url = "/api/v1/recommendations?" + query_string

        def html(url=html_url):
            _check(client.get(url, **HTMX), url)

        def api(url=api_url):
            _check(client.get(url), url)

        html_ms = timed_ms(html, options.warmup, options.runs)
        api_ms = timed_ms(api, options.warmup, options.runs)
        with CaptureQueriesContext(connection) as html_capture:
            html()
        with CaptureQueriesContext(connection) as api_capture:
            api()
        floor_ms, floor_sql = floor_of(html_capture.captured_queries, options.floor_runs)
        figure = QueryFigures(label, html_ms, api_ms, len(html_capture), len(api_capture), floor_ms, floor_sql)
        figure.scan_ms, figure.scan_floor_ms = time_scanned_answer(query_string, options)
        figures.append(figure)
    return figures


def time_scanned_answer(query_string: str, options: Options) -> tuple[list[float], float]:
    """The whole answer (recommendation_for) with the fleet counted by the scan instead of the kept
    counts, and its slowest statement alone: the same figure before and after, on the same fleet."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from catalog.counting import fleet as catalog_fleet
    from nodelodge.recommendations.answer import recommendation_for
    from nodelodge.recommendations.query import WorkloadQuery, WorkloadQueryForm
    from tests.catalog import scan_oracle

    form = WorkloadQueryForm(dict(part.split("=", 1) for part in query_string.split("&")))
    if not form.is_valid():
        raise RuntimeError(f"{query_string}: {form.errors}")
    query = WorkloadQuery.from_form(form)
    kept = catalog_fleet.counted_fleet
    catalog_fleet.counted_fleet = scan_oracle.counted_fleet
    try:
        times = timed_ms(lambda: recommendation_for(query), 1, max(3, options.runs // 3))
        with CaptureQueriesContext(connection) as capture:
            recommendation_for(query)
    finally:
        catalog_fleet.counted_fleet = kept
    return times, floor_of(capture.captured_queries, options.floor_runs)[0]


# --- gunicorn on loopback -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env() -> dict[str, str]:
    env = {**os.environ, **SERVER_ENV}
    env["PYTHONPATH"] = str(REPO)
    return env


class Gunicorn:
    def __init__(self, workers: int = 2):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.workers = workers
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Gunicorn:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "nodelodge.wsgi", "--bind", f"127.0.0.1:{self.port}",
             "--workers", str(self.workers), "--log-level", "warning", "--timeout", "120"],
            cwd=REPO, env=server_env(),
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.base + "/api/v1/models", timeout=5) as response:  # noqa: S310
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.__exit__(None, None, None)
        raise RuntimeError("gunicorn did not start within 60 s")

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def get(self, path: str, headers: dict[str, str] | None = None) -> bytes:
        request = urllib.request.Request(self.base + path, headers=headers or {})
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - loopback only
            body = response.read()
            if response.status != 200 or response.headers.get("HX-Retarget"):
                raise RuntimeError(f"{path} answered {response.status} {response.headers.get('HX-Retarget')}")
            return body


def measure_server(
    figures: list[QueryFigures], options: Options, server: Gunicorn, queries: list[tuple[str, str]] | None = None
) -> None:
    headers = {"HX-Request": "true", "HX-Target": "result"}
    for figure, (_, query_string) in zip(figures, QUERIES if queries is None else queries, strict=False):
        html_path = "/?" + shown_query(query_string)
        api_path = "/api/v1/recommendations?" + query_string
        # Both workers warm up: every run is a new connection, so requests alternate between them.
        figure.server_html_ms = timed_ms(lambda p=html_path: server.get(p, headers), options.warmup + 2, options.runs)
        figure.server_api_ms = timed_ms(lambda p=api_path: server.get(p), options.warmup + 2, options.runs)


# --- provider refresh -----------------------------------------------------------------------------


def time_refresh(machines: int, report: Report, options: Options) -> None:
    """Refreshes of `machines` machines from feeds on loopback (one provider per MACHINES_PER_FEED),
    timed from the first fetch to the last commit, the fleet counts kept as they go."""
    from catalog.models import Provider
    from nodelodge.refresh.services import refresh_provider

    from .feed import FeedServer, feed_document

    feeds = math.ceil(machines / MACHINES_PER_FEED)
    slugs = [f"bench-feed-{number}" for number in range(feeds)]
    Provider.objects.filter(slug__in=slugs).delete()
    servers = [FeedServer() for _ in slugs]
    for server in servers:
        server.__enter__()
    try:
        providers = [
            Provider.objects.create(name=f"Bench Feed {number}", slug=slug, tier="secure", feed_url=server.url,
                                    feed_format="nodelodge-v1")
            for number, (slug, server) in enumerate(zip(slugs, servers, strict=True))
        ]
        target = TARGETS.get(machines, {}).get("refresh") if options.targets else None
        for label, changed in (("first refresh (all new)", 0.0), ("next refresh (30 % changed)", 0.3)):
            for number, (provider, server) in enumerate(zip(providers, servers, strict=True)):
                size = min(MACHINES_PER_FEED, machines - number * MACHINES_PER_FEED)
                server.body = feed_document(provider.slug, size, seed=7 + number, changed_fraction=changed)
            started = time.perf_counter()
            for provider in providers:
                run = refresh_provider(provider.pk)
                if run.status not in ("ok", "partial"):
                    raise RuntimeError(f"refresh failed: {run.status} {run.error}")
            seconds = time.perf_counter() - started
            fleet = f"{machines:,}" + (f" ({feeds} feeds)" if feeds > 1 else "")
            report.add(f"provider refresh, {label}", fleet, seconds, "s", f"≤ {target} s" if target else "",
                       (seconds <= target) if target else None)
    finally:
        for server in servers:
            server.__exit__(None, None, None)
    Provider.objects.filter(slug__in=slugs).delete()


# --- sustained load -------------------------------------------------------------------------------


# Targets of the load through nginx and gunicorn at `load_size` machines (the issue's): the mix at 50
# clients, the crowd of 200, and a normal API call while four clients loop on deep pages.
# The mix (with think time): at least this throughput, p95 at most 250 ms (#41); the burst (the same
# mix, its clients asking again as soon as answered): at least 150 req/s, p95 at most 500 ms (#41).
LOAD_TARGETS = {"throughput": 40.0, "p95": 250.0, "deep_ratio": 2.0, "burst_throughput": 150.0,
                "burst_p95": 500.0}
RESET_WORDS = ("ConnectionResetError", "RemoteDisconnected", "Connection aborted", "ConnectionRefused",
               "reset by peer")


@dataclass
class LoadFigures:
    requests: int
    failures: int
    resets: int
    throughput: float
    p95: float
    by_name: dict[str, dict[str, str]]
    failure_kinds: list[str] = field(default_factory=list)  # "name: error (×N)", as locust wrote them


def _locust(base: str, user_classes: list[str], users: int, seconds: int, env: dict[str, str]) -> LoadFigures:
    """One headless locust run of `user_classes` against `base`; its aggregated figures and per name."""
    locust = Path(sys.executable).with_name("locust")
    with tempfile.TemporaryDirectory() as folder:
        prefix = str(Path(folder) / "load")
        command = [
            str(locust), "-f", str(Path(__file__).with_name("locustfile.py")), "--headless",
            "-u", str(users), "-r", str(max(1, users // 5)), "--run-time", f"{seconds}s", "--stop-timeout", "5",
            "--host", base, "--csv", prefix, "--only-summary", "--loglevel", "ERROR", *user_classes,
        ]
        finished = subprocess.run(command, env=env, timeout=seconds + 120, cwd=REPO,
                                  capture_output=True, text=True, check=False)
        if not Path(prefix + "_stats.csv").exists():
            raise RuntimeError(f"locust wrote no statistics: {finished.stderr[-2000:]}")
        with open(prefix + "_stats.csv", newline="") as handle:
            rows = {row["Name"]: row for row in csv.DictReader(handle)}
        resets, kinds = 0, []
        if Path(prefix + "_failures.csv").exists():
            with open(prefix + "_failures.csv", newline="") as handle:
                for row in csv.DictReader(handle):
                    if any(word in row.get("Error", "") for word in RESET_WORDS):
                        resets += int(row.get("Occurrences") or 0)
                    kinds.append(f"{row.get('Name')}: {row.get('Error', '')[:200]} (×{row.get('Occurrences')})")
    total = rows["Aggregated"]
    return LoadFigures(int(total["Request Count"]), int(total["Failure Count"]), resets,
                       float(total["Requests/s"]), float(total["95%"]), rows, kinds)


def quiet_count(figures: LoadFigures) -> int:
    """The normal API call's requests among a run's."""
    return int(figures.by_name.get("probe: API call", {}).get("Request Count") or 0)


def _warm_up(base: str, queries: list[str], rounds: int) -> None:
    """Each worker loads its code and connections before anything is timed: a few of every path."""
    import ssl

    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # our own certificate, on loopback
    for number in range(rounds):
        query = queries[number % len(queries)]
        for path in (f"/?{query}", f"/de/?{query}", f"/api/v1/recommendations?{query}", "/calculators/"):
            with urllib.request.urlopen(base + path, timeout=60, context=context) as response:  # noqa: S310
                response.read()


def _p95_of(figures: LoadFigures, name: str) -> float:
    row = figures.by_name.get(name)
    return float(row["95%"]) if row and int(row["Request Count"]) else float("nan")


@contextlib.contextmanager
def _production_layout(env: dict[str, str], workers: int, one_address_crowd: bool = False):
    """gunicorn (deploy/gunicorn.conf.py) behind nginx (deploy/nginx.conf) over HTTPS: yields its address.
    `one_address_crowd`: nginx's per-address limits lifted (else as shipped)."""
    from tests.hardening.servers import Gunicorn as LayoutGunicorn
    from tests.hardening.servers import Nginx, temporary_folder

    folder = temporary_folder()
    app = LayoutGunicorn(folder, env, workers=workers)
    try:
        proxy = Nginx(folder, app.port, one_address_crowd=one_address_crowd)
    except BaseException:
        app.stop()
        raise
    try:
        yield f"https://127.0.0.1:{proxy.https_port}"
    finally:
        proxy.stop()
        app.stop()
        shutil.rmtree(folder, ignore_errors=True)


def run_load(options: Options, report: Report, size: int) -> None:
    """The production layout (nginx with deploy/nginx.conf over HTTPS, gunicorn with
    deploy/gunicorn.conf.py and its 3 workers, the answer cache on, Redis when REDIS_URL or
    BENCH_REDIS_URL names one) over the fleet as generated, then five locust runs: one normal API call
    alone (its quiet p95), the mix at `load_users` clients, the burst (the mix at `burst_users` clients
    without think time), the crowd at `crowd_users`, and the normal call again beside four clients
    looping on deep pages."""
    from tests.hardening.servers import HOST

    queries = [query for _, query in QUERIES]
    env = {
        **server_env(),
        "ANSWER_CACHE_SECONDS": "60",
        "TRUSTED_PROXY_COUNT": "1",
        "DB_CONN_MAX_AGE": "600",
        "ALLOWED_HOSTS": f"127.0.0.1,localhost,{HOST}",
    }
    redis = os.environ.get("BENCH_REDIS_URL") or os.environ.get("REDIS_URL")
    if redis:
        env["REDIS_URL"] = redis
    locust_env = {
        **os.environ,
        "BENCH_SHOWN_QUERIES": "\n".join(shown_query(query) for query in queries),
        "BENCH_API_QUERIES": "\n".join(queries),
        "BENCH_PROBE_QUERY": queries[0],
    }
    print(f"load through nginx and gunicorn ({options.load_workers} workers), {size:,} machines", flush=True)
    # The mix's and the crowd's clients all come from one address: nginx's per-address limits, like the
    # console's rate limits, are lifted for them.
    with _production_layout(env, options.load_workers, one_address_crowd=True) as base:
        _warm_up(base, queries, rounds=3 * options.load_workers)
        mix = _locust(base, ["MixUser"], options.load_users, options.load_seconds, locust_env)
        burst = _locust(base, ["MixUser"], options.burst_users, options.burst_seconds,
                        {**locust_env, "BENCH_WAIT": "0,0"})
        crowd = _locust(base, ["MixUser"], options.crowd_users, options.crowd_seconds, locust_env)
    # The deep pages as the console runs: the per-address limits (rates and nginx's cap on requests in
    # flight) at their production values (the mix above comes from one address, so it runs without
    # them), the four deep-page clients on another address than the normal call's.
    limited = {key: value for key, value in env.items() if key not in ("API_RATE_LIMIT", "PAGE_RATE_LIMIT")}
    # The mix's requests were counted in this address's windows (a minute each) too: they end first.
    time.sleep(LIMIT_WINDOW_SECONDS + 1)
    with _production_layout(limited, options.load_workers) as base:
        _warm_up(base, queries, rounds=3 * options.load_workers)
        quiet = _locust(base, ["ProbeUser"], 1, options.quiet_seconds, locust_env)
        deep = _locust(base, ["DeepPageUser", "ProbeUser"], 5, options.quiet_seconds,
                       {**locust_env, "BENCH_DEEP_SOURCE": DEEP_PAGE_SOURCE})
    fleet = f"{size:,}"
    users, crowd_users = options.load_users, options.crowd_users
    report.add(f"load: {users} clients, {options.load_seconds} s, requests", fleet, mix.requests, "")
    report.add(f"load: {users} clients: throughput", fleet, mix.throughput, "req/s",
               f"≥ {LOAD_TARGETS['throughput']:.0f} req/s", mix.throughput >= LOAD_TARGETS["throughput"])
    report.add(f"load: {users} clients: p95", fleet, mix.p95, "ms", f"≤ {LOAD_TARGETS['p95']:.0f} ms",
               mix.p95 <= LOAD_TARGETS["p95"])
    report.add(f"load: {users} clients: errors", fleet, mix.failures, "", "0", mix.failures == 0)
    for name in ("result page", "HTMX result", "HTMX model list", "German page", "API recommendations",
                 "API estimate", "API models", "calculators"):
        report.add(f"load: {users} clients: {name} p95", fleet, _p95_of(mix, name), "ms")
    burst_users = options.burst_users
    report.add(f"load: {burst_users} clients without think time, {options.burst_seconds} s: throughput", fleet,
               burst.throughput, "req/s", f"≥ {LOAD_TARGETS['burst_throughput']:.0f} req/s",
               burst.throughput >= LOAD_TARGETS["burst_throughput"])
    report.add(f"load: {burst_users} clients without think time: p95", fleet, burst.p95, "ms",
               f"≤ {LOAD_TARGETS['burst_p95']:.0f} ms", burst.p95 <= LOAD_TARGETS["burst_p95"])
    report.add(f"load: {burst_users} clients without think time: errors", fleet, burst.failures, "", "0",
               burst.failures == 0)
    report.add(f"load: {crowd_users} clients, {options.crowd_seconds} s: throughput", fleet, crowd.throughput,
               "req/s")
    report.add(f"load: {crowd_users} clients: p95", fleet, crowd.p95, "ms")
    report.add(f"load: {crowd_users} clients: errors", fleet, crowd.failures, "", "0", crowd.failures == 0)
    report.add(f"load: {crowd_users} clients: connection resets", fleet, crowd.resets, "", "0", crowd.resets == 0)
    quiet_p95 = _p95_of(quiet, "probe: API call")
    loaded_p95 = _p95_of(deep, "probe: API call")
    report.add("load: normal API call alone: p95", fleet, quiet_p95, "ms")
    report.add("load: normal API call beside 4 deep-page clients: p95", fleet, loaded_p95, "ms")
    ratio = loaded_p95 / quiet_p95 if quiet_p95 and quiet_p95 == quiet_p95 else float("nan")
    report.add("load: normal API call's p95, deep pages ÷ quiet", fleet, ratio, "×",
               f"≤ {LOAD_TARGETS['deep_ratio']:.0f} ×", ratio <= LOAD_TARGETS["deep_ratio"])
    report.add("load: deep-page clients: errors", fleet, deep.failures, "", "0", deep.failures == 0)
    # What failed, so a red figure says why (each phase's errors, as locust wrote them).
    for phase, figures in (("mix", mix), ("burst", burst), ("crowd", crowd), ("normal call alone", quiet),
                           ("deep pages", deep)):
        report.notes += [f"load, {phase}: failed {kind}" for kind in figures.failure_kinds]
    for name in ("deep page (page 40 of 25)", "deep API page (page 10 of 100)", "page past the window"):
        report.add(f"load: {name} p95", fleet, _p95_of(deep, name), "ms")
    refused = deep.by_name.get("deep-page clients: refused by the per-address limit", {})
    report.add("load: deep-page requests refused by the per-address limit (429)", fleet,
               int(refused.get("Request Count") or 0), f"of {deep.requests - quiet_count(deep)}")
    shed = deep.by_name.get("deep-page clients: shed, 503 with Retry-After", {})
    report.add("load: deep-page requests shed, every slot for dear answers taken (503)", fleet,
               int(shed.get("Request Count") or 0), f"of {deep.requests - quiet_count(deep)}")


HOSTILE_SOURCES = "127.0.0.2,127.0.0.3"
HOSTILE_TARGETS = {"slowest_ms": 2000.0, "ratio": 2.0}


def run_hostile(options: Options, report: Report, size: int) -> None:
    """Every request bounded (tests/bench/hostile.py): through nginx and gunicorn (3 workers, answers
    not served again), each visitor's request with its parameters at the schema's limits timed twice
    and the slowest of each operation kept; then, at the production per-address limits, a normal API
    call's p95 alone and beside four clients from two addresses looping on the dearest of them."""
    from .hostile import slowest_per_operation

    env = {**server_env(), "ANSWER_CACHE_SECONDS": "0", "TRUSTED_PROXY_COUNT": "1", "DB_CONN_MAX_AGE": "600",
           "ALLOWED_HOSTS": "127.0.0.1,localhost",
           # The workers share their rate counts and plan-search slots in Redis, as in production.
           "REDIS_URL": os.environ.get("BENCH_REDIS_URL") or os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"}
    queries = [query for _, query in QUERIES]
    fleet = f"{size:,}"
    print(f"every request bounded, through nginx and gunicorn, {size:,} machines", flush=True)
    with _production_layout(env, options.load_workers, one_address_crowd=True) as base:
        _warm_up(base, queries, rounds=2 * options.load_workers)
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # our own certificate

        def get(path: str) -> int:
            try:
                with urllib.request.urlopen(base + path, timeout=60, context=context) as response:  # noqa: S310
                    response.read()
                    return response.status
            except urllib.error.HTTPError as error:
                error.read()
                return error.code

        slowest = slowest_per_operation(get)
    dearest = []
    for operation, ms, status, path in sorted(slowest, key=lambda row: -row[1]):
        report.add(f"slowest request: {operation} (HTTP {status})", fleet, ms, "ms",
                   f"≤ {HOSTILE_TARGETS['slowest_ms']:.0f} ms", ms <= HOSTILE_TARGETS["slowest_ms"])
        report.notes.append(f"slowest request of {operation}: `{path}`")
        if len(dearest) < 3:
            dearest.append(path)
    limited = {key: value for key, value in env.items() if key not in ("API_RATE_LIMIT", "PAGE_RATE_LIMIT")}
    locust_env = {**os.environ, "BENCH_PROBE_QUERY": queries[0], "BENCH_HOSTILE_PATHS": "\n".join(dearest),
                  "BENCH_HOSTILE_SOURCES": HOSTILE_SOURCES}
    time.sleep(LIMIT_WINDOW_SECONDS + 1)  # the timings above counted in this address's windows
    with _production_layout(limited, options.load_workers) as base:
        _warm_up(base, queries, rounds=2 * options.load_workers)
        quiet = _locust(base, ["ProbeUser"], 1, options.quiet_seconds, locust_env)
        hostile = _locust(base, ["HostileUser", "ProbeUser"], 5, options.quiet_seconds, locust_env)
    quiet_p95, loaded_p95 = _p95_of(quiet, "probe: API call"), _p95_of(hostile, "probe: API call")
    ratio = loaded_p95 / quiet_p95 if quiet_p95 and quiet_p95 == quiet_p95 else float("nan")
    report.add("hostile: normal API call alone: p95", fleet, quiet_p95, "ms")
    report.add("hostile: normal API call beside 4 hostile clients from 2 addresses: p95", fleet, loaded_p95, "ms")
    report.add("hostile: normal API call's p95, hostile ÷ alone", fleet, ratio, "×",
               f"≤ {HOSTILE_TARGETS['ratio']:.0f} ×", ratio <= HOSTILE_TARGETS["ratio"])
    answered = int(hostile.by_name.get("hostile request", {}).get("Request Count") or 0)
    refused = int(hostile.by_name.get("hostile clients: refused by the per-address limit", {})
                  .get("Request Count") or 0)
    shed = int(hostile.by_name.get("hostile clients: shed, 503 with Retry-After", {}).get("Request Count") or 0)
    report.add("hostile: dearest requests answered / refused by the per-address limit (429) / shed (503)",
               fleet, answered, f"/ {refused} / {shed}")
    report.add("hostile: errors (5xx, resets)", fleet, hostile.failures, "", "0", hostile.failures == 0)


# --- the run --------------------------------------------------------------------------------------


@dataclass
class ClusterCost:
    """The same answer with its clusters shown and without (`queries.CLUSTER_COST`), timed in turns
    (with, without, with, …) so that a machine slowing down meanwhile weighs on both alike: per path
    (result panel, API; test client, gunicorn), each side's times."""

    times: dict[tuple[str, str], tuple[list[float], list[float]]] = field(default_factory=dict)


CLUSTER_COST_RUNS = 40  # turns per path: a difference of two medians wants more runs than a median


def measure_cluster_cost(options: Options, server: Gunicorn | None) -> ClusterCost:
    from django.test import Client

    labels = dict(QUERIES)
    with_clusters, without = (labels[label] for label in CLUSTER_COST)
    client, cost = Client(), ClusterCost()
    paths = {
        "result panel": lambda query: ("/?" + shown_query(query), HTMX, {"HX-Request": "true", "HX-Target": "result"}),
        "API": lambda query: ("/api/v1/recommendations?" + query, {}, None),
    }
    for name, path_of in paths.items():
        (with_path, extra, headers), (without_path, _, _) = path_of(with_clusters), path_of(without)
        requesters = [("test client", lambda path, extra=extra: _check(client.get(path, **extra), path))]
        if server is not None:
            requesters.append(("gunicorn", lambda path, headers=headers: server.get(path, headers)))
        for where, request in requesters:
            times: tuple[list[float], list[float]] = ([], [])
            for turn in range(options.warmup + 2 + CLUSTER_COST_RUNS):
                for side, path in enumerate((with_path, without_path)):
                    started = time.perf_counter()
                    request(path)
                    if turn >= options.warmup + 2:
                        times[side].append((time.perf_counter() - started) * 1000)
            cost.times[name, where] = times
    return cost


def _cluster_cost_rows(size: int, cost: ClusterCost | None, report: Report, options: Options) -> None:
    """What planning clusters adds to an answer (`measure_cluster_cost`): the median with its clusters
    minus the median without; the issue allows 20 ms at 1,000,000 machines."""
    if cost is None:
        return
    limit = CLUSTER_COST_TARGET_MS if options.targets and size == 1_000_000 else None
    for (name, where), (with_times, without_times) in cost.times.items():
        added = median(with_times) - median(without_times)
        report.add(f"cluster search's cost, {name}, {where}: median with clusters − without "
                   f"({len(with_times)} turns; {median(with_times):.1f} − {median(without_times):.1f} ms)",
                   f"{size:,}", added, "ms", f"≤ {limit} ms" if limit else "", added <= limit if limit else None)


def _query_rows(size: int, figures: list[QueryFigures], report: Report, options: Options,
                cost: ClusterCost | None = None) -> dict[str, float]:
    fleet = f"{size:,}"
    targets = TARGETS.get(size, {}) if options.targets else {}
    at_target = options.targets and size == TARGET_SIZE
    all_html = [t for f in figures for t in f.html_ms]
    all_api = [t for f in figures for t in f.api_ms]
    floors = [f.floor_ms for f in figures]
    summary = {"html": median(all_html), "api": median(all_api)}

    def timing(name: str, values: list[float]) -> None:
        for statistic, figure in (("median", median), ("p95", p95)):
            limit = targets.get(statistic)
            report.add(f"{name}: {statistic}", fleet, figure(values), "ms", f"≤ {limit} ms" if limit else "",
                       figure(values) <= limit if limit else None, floor=figure(floors))

    timing("result panel, test client", all_html)
    timing("API, test client", all_api)
    scanned = [t for f in figures for t in f.scan_ms]
    if scanned:
        report.add("result by scanning the fleet (the count before kept counts): median", fleet, median(scanned),
                   "ms", floor=median([f.scan_floor_ms for f in figures]))
    if figures and figures[0].server_html_ms:
        timing("result panel, gunicorn", [t for f in figures for t in f.server_html_ms])
        timing("API, gunicorn", [t for f in figures for t in f.server_api_ms])
    floor_total = sum(f.floor_ms for f in figures)
    report.add("bare main query (slowest SQL statement alone): median", fleet, median([f.floor_ms for f in figures]),
               "ms")
    for name, key in (("result panel", "html_ms"), ("API", "api_ms")):
        ratio = sum(median(getattr(f, key)) for f in figures) / floor_total if floor_total else None
        report.add(f"{name} ÷ bare main query (sum of per-query medians)", fleet, ratio, "×",
                   "≤ 3 ×" if at_target else "", (ratio is not None and ratio <= 3) if at_target else None)
    most = max(max(f.html_queries, f.api_queries) for f in figures)
    report.add("SQL queries per request (most, result panel or API)", fleet, most, "",
               "≤ 12" if options.targets else "", most <= 12 if options.targets else None)
    _cluster_cost_rows(size, cost, report, options)
    for f in figures:
        report.details.append([
            f.label, fleet,
            f"{median(f.html_ms):.1f} / {p95(f.html_ms):.1f}",
            f"{median(f.server_html_ms):.1f} / {p95(f.server_html_ms):.1f}" if f.server_html_ms else "–",
            f"{median(f.api_ms):.1f} / {p95(f.api_ms):.1f}",
            f"{median(f.server_api_ms):.1f} / {p95(f.server_api_ms):.1f}" if f.server_api_ms else "–",
            f"{f.html_queries} / {f.api_queries}",
            f"{f.floor_ms:.1f}",
        ])
    return summary


def _plan_rows(size: int, figures: list[QueryFigures], report: Report, options: Options) -> dict[str, float]:
    """The throughput plans and the price-per-million sort, against the result panel's targets."""
    fleet = f"{size:,}"
    at_target = options.targets and size == TARGET_SIZE
    floors = [f.floor_ms for f in figures]

    def timing(name: str, values: list[float]) -> None:
        report.add(f"{name}: median", fleet, median(values), "ms", "≤ 100 ms" if at_target else "",
                   median(values) <= 100 if at_target else None, floor=median(floors))
        report.add(f"{name}: p95", fleet, p95(values), "ms", "≤ 250 ms" if at_target else "",
                   p95(values) <= 250 if at_target else None, floor=p95(floors))

    timing("throughput plan, result panel, test client", [t for f in figures for t in f.html_ms])
    timing("throughput plan, API, test client", [t for f in figures for t in f.api_ms])
    if figures[0].server_html_ms:
        timing("throughput plan, result panel, gunicorn", [t for f in figures for t in f.server_html_ms])
        timing("throughput plan, API, gunicorn", [t for f in figures for t in f.server_api_ms])
    most = max(max(f.html_queries, f.api_queries) for f in figures)
    report.add("throughput plan: SQL queries per request (most)", fleet, most, "",
               "≤ 12" if options.targets else "", most <= 12 if options.targets else None)
    for f in figures:
        report.details.append([
            f.label, fleet,
            f"{median(f.html_ms):.1f} / {p95(f.html_ms):.1f}",
            f"{median(f.server_html_ms):.1f} / {p95(f.server_html_ms):.1f}" if f.server_html_ms else "–",
            f"{median(f.api_ms):.1f} / {p95(f.api_ms):.1f}",
            f"{median(f.server_api_ms):.1f} / {p95(f.server_api_ms):.1f}" if f.server_api_ms else "–",
            f"{f.html_queries} / {f.api_queries}",
            f"{f.floor_ms:.1f}",
        ])
    return {"html": median([t for f in figures for t in f.html_ms]), "api": median([t for f in figures for t in f.api_ms])}


def run(options: Options) -> Report:
    """Runs the benchmark on the configured database (Django set up, migrated)."""
    from catalog.services import load_catalog

    report = Report()
    report.notes.append(f"load average at start: {_load_average()}")
    load_catalog(fleet=False)
    medians: dict[int, dict[str, float]] = {}
    plan_medians: dict[int, dict[str, float]] = {}
    query_counts: dict[int, list[tuple[int, int]]] = {}
    for size in options.sizes:
        print(f"fleet of {size:,} machines", flush=True)
        seconds = prepare_fleet(size, options)
        if seconds is None:
            report.notes.append(f"the fleet of {size:,} machines an earlier run generated was measured again "
                                f"(machines count as fresh for {os.environ['MACHINE_STALE_AFTER_SECONDS']} s)")
        else:
            at_target = options.targets and size == TARGET_SIZE
            report.add("generate fleet (fleet counts kept)", f"{size:,}", seconds, "s",
                       "≤ 60 s" if at_target else "", seconds <= 60 if at_target else None)
        figures = measure_in_process(options) if options.queries else []
        plans = PLAN_QUERIES[: options.plans]
        plan_figures = measure_in_process(options, plans) if plans else []
        server = Gunicorn() if options.gunicorn else None
        # The cluster search's cost wants both of its queries (the last of QUERIES and an earlier one).
        costed = options.queries >= len(QUERIES)
        cost = measure_cluster_cost(options, None) if costed and server is None else None
        if server is not None:
            with server:
                if figures:
                    measure_server(figures, options, server)
                if plan_figures:
                    measure_server(plan_figures, options, server, plans)
                if costed:
                    cost = measure_cluster_cost(options, server)
        if figures:
            medians[size] = _query_rows(size, figures, report, options, cost)
        if size == options.load_size and options.load_seconds:
            run_load(options, report, size)
        if size == options.load_size and options.hostile:
            run_hostile(options, report, size)
        if plan_figures:
            plan_medians[size] = _plan_rows(size, plan_figures, report, options)
        if figures or plan_figures:
            query_counts[size] = [(f.html_queries, f.api_queries) for f in [*figures, *plan_figures]]
    smallest, largest = min(options.sizes), max(options.sizes)
    if largest != smallest:
        for size in sorted(options.sizes):
            if size == smallest or (size != largest and size not in TARGETS):
                continue
            limit = TARGETS.get(size, {}).get("growth") if options.targets and smallest == 1_000 else None
            for name, key, found in (("result panel", "html", medians), ("API", "api", medians),
                                     ("throughput plan, result panel", "html", plan_medians),
                                     ("throughput plan, API", "api", plan_medians)):
                if size not in found:
                    continue
                ratio = found[size][key] / found[smallest][key]
                report.add(f"{name} median growth, {size:,} ÷ {smallest:,} machines", "", ratio, "×",
                           f"≤ {limit} ×" if limit else "", ratio <= limit if limit else None)
        # A band with few machines is read at its own prices (one statement more), and a small fleet
        # has more of those: a query may need one statement fewer at a larger size, never one more.
        ordered = [query_counts[size] for size in sorted(query_counts)]
        constant = all(
            later <= earlier
            for smaller, larger in zip(ordered, ordered[1:])
            for before, after in zip(smaller, larger, strict=True)
            for earlier, later in zip(before, after, strict=True)
        )
        report.add("SQL queries per request never more at a larger fleet", "", float(constant), "(1 = yes)",
                   "yes" if options.targets else "", constant if options.targets else None)
    if options.watches:
        from .watches import time_watch_evaluation

        last = options.sizes[-1]  # the fleet generated last is the one in the database now
        print(f"{options.watches:,} watches over {last:,} machines", flush=True)
        target = 10 if options.targets and last == 1_000_000 and options.watches == 10_000 else None
        time_watch_evaluation(options.watches, options.watch_queries, f"{last:,}", report, target)
        if options.watch_delivery_rounds:
            from .watches import time_watch_delivery

            print(f"watch delivery, {options.watch_delivery_rounds} refreshes on a worker", flush=True)
            time_watch_delivery(f"{last:,}", report, server_env(), options.watch_delivery_rounds,
                                60 if target else None)
    if options.history:
        from .history import time_history_page

        last = options.sizes[-1]
        print(f"price history over {last:,} machines", flush=True)
        time_history_page(f"{last:,}", report, options.runs, options.warmup,
                          options.targets and last == 1_000_000)
    for size in options.refresh_sizes:
        print(f"refresh of {size:,} machines", flush=True)
        time_refresh(size, report, options)
    report.notes.append(f"load average at end: {_load_average()}")
    return report


# --- the report -----------------------------------------------------------------------------------


def _load_average() -> str:
    try:
        return ", ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def machine_description() -> list[tuple[str, str]]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        pass
    commit = "unknown"
    if shutil.which("git"):
        result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True)
        commit = result.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        postgres = cursor.fetchone()[0]
    return [
        ("Date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("Commit", commit),
        ("CPU", f"{cpu}, {os.cpu_count()} cores (nproc)"),
        ("Memory", memory),
        ("PostgreSQL", postgres),
        ("Python", platform.python_version()),
    ]


def render(report: Report, options: Options) -> str:
    lines = ["# Benchmarks", "", "Written by `python -m tests.bench` (tests/bench/runner.py says what each figure is).", ""]
    lines += ["| | |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in machine_description()]
    lines += [f"| Runs | {options.warmup} warm-up + {options.runs} timed per query and path |"]
    lines += [f"| Note | {note} |" for note in report.notes]
    lines += ["", "## Figures", "",
              "Floor: for a request figure, the same statistic of the requests' slowest SQL statement run "
              "alone.", "",
              "| Figure | Fleet | Value | Floor | Target | Result |", "|---|---|---|---|---|---|"]
    for row in report.rows:
        result = "" if row.passed is None else ("pass" if row.passed else "**FAIL**")
        floor = "" if row.floor is None else f"{row.floor:,.1f} ms"
        lines.append(f"| {row.figure} | {row.fleet} | {row.value_text()} | {floor} | {row.target} | {result} |")
    lines += ["", "## Per query", "",
              "Median / p95 in ms; SQL queries for the result panel / the API; floor = the request's slowest "
              "SQL statement run alone (ms).", "",
              "| Query | Fleet | Panel, test client | Panel, gunicorn | API, test client | API, gunicorn "
              "| SQL queries | Floor |",
              "|---|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(detail) + " |" for detail in report.details]
    return "\n".join(lines) + "\n"


def carried_over(previous: str) -> str:
    """What a rewrite keeps of the file: the browser's swap figures (python -m tests.bench.swap, another
    run's) and the hand-written notes."""
    kept = ""
    swap = re.search(rf"{re.escape(SWAP_HEADING)}\n.*?(?=\n## |\Z)", previous, flags=re.S)
    if swap:
        kept += "\n" + swap.group(0).rstrip("\n") + "\n"
    if NOTES_HEADING in previous:
        kept += "\n" + previous[previous.index(NOTES_HEADING):]
    return kept


def write_report(report: Report, options: Options) -> None:
    if options.out is None:
        return
    text = render(report, options)
    if options.out.exists():
        text += carried_over(options.out.read_text())
    options.out.write_text(text)


# --- command line ---------------------------------------------------------------------------------


def parse(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, 20 s of load: a few minutes less")
    parser.add_argument("--smoke", action="store_true", help="1,000 machines, three queries, in-process, no targets")
    parser.add_argument("--sizes", help="comma-separated fleet sizes (default 1000,10000,100000)")
    parser.add_argument("--queries", type=int, help=f"use the first N of the {len(QUERIES)} queries (0: none)")
    parser.add_argument("--plans", type=int, help=f"use the first N of the {len(PLAN_QUERIES)} plan queries (0: none)")
    parser.add_argument("--only-plans", action="store_true", help="the plan queries only (same as --queries 0)")
    parser.add_argument("--runs", type=int, help="timed runs per query and path")
    parser.add_argument("--warmup", type=int, help="warm-up runs per query and path")
    parser.add_argument("--no-gunicorn", action="store_true", help="in-process only (no server, no load)")
    parser.add_argument("--no-refresh", action="store_true", help="skip the provider refresh")
    parser.add_argument("--refresh-sizes", help="comma-separated refresh sizes (default 10000,100000,1000000)")
    parser.add_argument("--no-load", action="store_true", help="skip the sustained load")
    parser.add_argument("--hostile", action="store_true",
                        help="time every visitor's request at the schema's limits through nginx, and hostile clients")
    parser.add_argument("--load-only", action="store_true",
                        help="the sustained load alone (no per-query timing, plans or refresh)")
    parser.add_argument("--load-size", type=int, help=f"the fleet the load runs on (default {LOAD_SIZE})")
    parser.add_argument("--load-users", type=int, help="clients of the mix (default 50)")
    parser.add_argument("--load-seconds", type=int, help=f"seconds of the mix (default {LOAD_PHASE_SECONDS})")
    parser.add_argument("--burst-users", type=int, help="clients of the mix without think time (default 50)")
    parser.add_argument("--burst-seconds", type=int,
                        help=f"seconds of the mix without think time (default {LOAD_PHASE_SECONDS})")
    parser.add_argument("--crowd-users", type=int, help="clients of the crowd (default 200)")
    parser.add_argument("--crowd-seconds", type=int, help=f"seconds of the crowd (default {LOAD_PHASE_SECONDS})")
    parser.add_argument("--quiet-seconds", type=int,
                        help="seconds of the normal API call alone, and beside the deep pages (default 30)")
    parser.add_argument("--watches", type=int, help="watches evaluated over the largest fleet (default 10000; 0: none)")
    parser.add_argument("--watch-delivery-rounds", type=int,
                        help="refreshes timed to the webhook they deliver (default 20; 0: none; needs REDIS_URL)")
    parser.add_argument("--reuse-fleet", action="store_true",
                        help="measure a fleet of the asked size that an earlier run left in the database")
    parser.add_argument("--history-only", action="store_true",
                        help="the price history page alone, over 1,000,000 machines' 90 days of history")
    parser.add_argument("--no-history", action="store_true", help="skip the price history page")
    parser.add_argument("--out", default=str(REPO / "BENCHMARKS.md"), help="where the table goes ('-': nowhere)")
    args = parser.parse_args(argv)
    options = Options()
    if args.quick:
        options.warmup, options.runs = 2, 7
        options.load_seconds = options.crowd_seconds = options.burst_seconds = options.quiet_seconds = 20
    if args.smoke:
        options = Options(sizes=(1_000,), queries=3, plans=1, warmup=1, runs=3, floor_runs=2, gunicorn=False,
                          refresh_sizes=(), load_seconds=0, targets=False, analyze_with_vacuum=False,
                          watches=0, watch_delivery_rounds=0, history=False)
    if args.sizes:
        options.sizes = tuple(int(size) for size in args.sizes.split(","))
    for name in ("queries", "plans", "runs", "warmup"):
        if getattr(args, name) is not None:
            setattr(options, name, getattr(args, name))
    if args.watches is not None:
        options.watches = args.watches
    if args.watch_delivery_rounds is not None:
        options.watch_delivery_rounds = args.watch_delivery_rounds
    if args.only_plans:
        options.queries = 0
    if args.no_gunicorn:
        options.gunicorn, options.load_seconds = False, 0
    if args.refresh_sizes:
        options.refresh_sizes = tuple(int(size) for size in args.refresh_sizes.split(","))
    if args.no_refresh:
        options.refresh_sizes = ()
    if args.no_load:
        options.load_seconds = 0
    if args.load_only:
        options.queries, options.plans, options.refresh_sizes, options.gunicorn = 0, 0, (), False
        options.watches, options.history = 0, False
        options.sizes = (args.load_size or options.load_size,)
    for name in ("load_size", "load_users", "load_seconds", "burst_users", "burst_seconds", "crowd_users",
                 "crowd_seconds", "quiet_seconds"):
        if getattr(args, name) is not None:
            setattr(options, name, getattr(args, name))
    if args.no_history:
        options.history = False
    if args.history_only:
        options.queries, options.plans, options.refresh_sizes, options.gunicorn = 0, 0, (), False
        options.watches, options.load_seconds, options.history = 0, 0, True
        options.sizes = tuple(int(size) for size in args.sizes.split(",")) if args.sizes else (1_000_000,)
    options.reuse_fleet = args.reuse_fleet
    options.hostile = args.hostile
    if options.reuse_fleet:
        # A fleet generated by an earlier run was last seen then: it is measured as if seen just now
        # (every process of the run, the servers and workers included, reads this), else it would be
        # stale and every answer empty.
        os.environ.setdefault("MACHINE_STALE_AFTER_SECONDS", str(10 * 24 * 3600))
    options.out = None if args.out == "-" else Path(args.out)
    return options


def setup_django() -> None:
    os.environ.setdefault("DATABASE_URL", DEFAULT_DATABASE_URL)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodelodge.settings")
    for key, value in SERVER_ENV.items():
        os.environ.setdefault(key, value)
    _create_database(os.environ["DATABASE_URL"])
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    if not (REPO / "staticfiles" / "staticfiles.json").exists():
        # DEBUG=0 serves hashed static names from the manifest collectstatic writes.
        call_command("collectstatic", interactive=False, verbosity=0)


def _create_database(url: str) -> None:
    import dj_database_url
    import psycopg

    config = dj_database_url.parse(url)
    if "postgresql" not in config["ENGINE"]:
        raise SystemExit(f"The benchmark runs on PostgreSQL; DATABASE_URL names {config['ENGINE']}.")
    params = {"host": config["HOST"] or "127.0.0.1", "port": config["PORT"] or 5432, "user": config["USER"],
              "password": config["PASSWORD"] or None, "dbname": "postgres", "autocommit": True}
    with psycopg.connect(**{k: v for k, v in params.items() if v is not None}) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [config["NAME"]]).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{config["NAME"]}"')


def main(argv: list[str] | None = None) -> int:
    options = parse(sys.argv[1:] if argv is None else argv)
    setup_django()
    started = time.perf_counter()
    report = run(options)
    report.notes.append(f"whole run: {time.perf_counter() - started:.0f} s")
    write_report(report, options)
    if options.out is not None:
        print(f"wrote {options.out}")
    for row in report.failed:
        print(f"target missed: {row.figure} [{row.fleet}] = {row.value_text()} (target {row.target})")
    return 1 if report.failed else 0
