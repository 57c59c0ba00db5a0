"""Two checkouts timed in turns on the same database: `python -m tests.bench.turns BEFORE_FOLDER`.

Each checkout answers in a process of its own (the Django test client, as the benchmark's in-process
figures), and the requests alternate between them (A B B A …), so a machine slowing down meanwhile
weighs on both alike. Prints each path's median and 90th percentile per side, in milliseconds, and the
SQL statements each side ran. The paths are the benchmark's plan queries and two plain answers, or
those given with --path; DATABASE_URL names the database both read.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from .queries import PLAN_QUERIES, QUERIES

REPO = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodelodge.settings")
import django
django.setup()
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
client = Client()
for line in sys.stdin:
    path = line.strip()
    with CaptureQueriesContext(connection) as statements:
        started = time.perf_counter()
        response = client.get(path)
        elapsed = (time.perf_counter() - started) * 1000
    print(json.dumps([elapsed, response.status_code, len(statements)]), flush=True)
"""


def default_paths() -> list[tuple[str, str]]:
    """(name, path): the plan queries through the API and the page, and the first plain query."""
    paths = [(f"API, {name}", f"/api/v1/recommendations?{query}") for name, query in PLAN_QUERIES]
    paths += [(f"page, {name}", f"/?{query}") for name, query in PLAN_QUERIES[:3]]
    name, query = QUERIES[0]
    paths += [(f"API, {name}", f"/api/v1/recommendations?{query}"), (f"page, {name}", f"/?{query}")]
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="the other checkout's folder (e.g. a git worktree of the commit before)")
    parser.add_argument("--turns", type=int, default=15, help="timed requests per path and side")
    parser.add_argument("--path", action="append", help="a path to time (repeatable)")
    args = parser.parse_args(argv)
    env = {**os.environ, "API_RATE_LIMIT": "off", "PAGE_RATE_LIMIT": "off", "ANSWER_CACHE_SECONDS": "0"}
    sides = {}
    for name, folder in (("before", Path(args.before).resolve()), ("after", REPO)):
        sides[name] = subprocess.Popen(  # noqa: S603 - our own interpreter on our own script
            [sys.executable, "-c", CHILD], cwd=folder, env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )

    def ask(name: str, path: str) -> tuple[float, int, int]:
        side = sides[name]
        side.stdin.write(path + "\n")
        side.stdin.flush()
        return tuple(json.loads(side.stdout.readline()))

    print("| Request | before: median / p90 ms | after: median / p90 ms | after ÷ before | statements |")
    print("|---|---|---|---|---|")
    try:
        for label, path in [(path, path) for path in args.path or []] or default_paths():
            for name in sides:  # warm-up
                ask(name, path)
                ask(name, path)
            times = {name: [] for name in sides}
            statements = {}
            for turn in range(args.turns):
                order = ("before", "after") if turn % 2 == 0 else ("after", "before")
                for name in order:
                    elapsed, status, count = ask(name, path)
                    times[name].append(elapsed)
                    statements[name] = (status, count)

            def figure(name: str) -> str:
                values = sorted(times[name])
                return f"{statistics.median(values):.1f} / {values[int(0.9 * (len(values) - 1))]:.1f}"

            ratio = statistics.median(times["after"]) / statistics.median(times["before"])
            print(f"| {label} | {figure('before')} | {figure('after')} | {ratio:.2f} | "
                  f"{statements['before'][1]} → {statements['after'][1]} (HTTP {statements['after'][0]}) |",
                  flush=True)
    finally:
        for side in sides.values():
            side.stdin.close()
            side.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
