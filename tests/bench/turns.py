"""Checkouts timed in turns on the same database: `python -m tests.bench.turns FOLDER [FOLDER …]`.

This checkout and each other one (a git worktree of the commit before a change, of round two's main…)
answer in a process of their own (the Django test client, as the benchmark's in-process figures), and
the requests go round them in turns whose order rotates and reverses (A B C, C B A, B C A, …), so a
machine slowing down meanwhile weighs on every side alike. Prints each path's median and 90th
percentile per side in milliseconds, this checkout's median over each other's, and the SQL statements
each side ran. The paths are the benchmark's plan queries and two plain answers; with --all-queries,
every query's result panel (the HTMX request the page's form sends) and API answer; or those given
with --path. DATABASE_URL names the database every side reads; `--databases URL …` gives each side its own
(this checkout's first), for a change whose migration the commit before cannot read: each side then
reads a copy of the same fleet at its own schema (`createdb -T`, then migrate the copy).
"""
from __future__ import annotations

import argparse
import json
import math
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
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "result"}
for line in sys.stdin:
    path, panel = json.loads(line)
    with CaptureQueriesContext(connection) as statements:
        started = time.perf_counter()
        response = client.get(path, **(HTMX if panel else {}))
        elapsed = (time.perf_counter() - started) * 1000
    print(json.dumps([elapsed, response.status_code, len(statements)]), flush=True)
"""


def default_paths() -> list[tuple[str, str, bool]]:
    """(name, path, as the result panel): the plan queries through the API and the page, and the
    first plain query."""
    paths = [(f"API, {name}", f"/api/v1/recommendations?{query}", False) for name, query in PLAN_QUERIES]
    paths += [(f"page, {name}", f"/?{query}", False) for name, query in PLAN_QUERIES[:3]]
    name, query = QUERIES[0]
    paths += [(f"API, {name}", f"/api/v1/recommendations?{query}", False), (f"page, {name}", f"/?{query}", False)]
    return paths


def every_query() -> list[tuple[str, str, bool]]:
    """Every benchmark query's result panel (as its own form asks, `shown` included) and API answer."""
    from .runner import shown_query

    paths = [(f"panel, {name}", "/?" + shown_query(query), True) for name, query in QUERIES]
    return paths + [(f"API, {name}", f"/api/v1/recommendations?{query}", False) for name, query in QUERIES]


def side_name(folder: Path) -> str:
    """A side by its commit (and "+" where its checkout has changes), else by its folder."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=folder, capture_output=True,  # noqa: S607
                                text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=folder,  # noqa: S607
                                 capture_output=True, text=True, check=True).stdout.strip()
        return commit + ("+" if changed else "")
    except (OSError, subprocess.CalledProcessError):
        return folder.name


def rotation(names: list[str], turn: int) -> list[str]:
    """The order of one turn: rotated by the turn's number, reversed every other turn."""
    shift = (turn // 2) % len(names)
    order = names[shift:] + names[:shift]
    return order if turn % 2 == 0 else order[::-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("others", nargs="+", help="the other checkouts' folders (e.g. git worktrees of the "
                        "commit before and of round two's main)")
    parser.add_argument("--turns", type=int, default=15, help="timed requests per path and side")
    parser.add_argument("--path", action="append", help="a path to time (repeatable)")
    parser.add_argument("--all-queries", action="store_true", help="every query's result panel and API answer")
    parser.add_argument("--query", action="append", help="with --all-queries, only the queries whose name holds "
                        "this text (repeatable)")
    parser.add_argument("--databases", nargs="+", help="each side's DATABASE_URL, this checkout's first (default: "
                        "DATABASE_URL for every side)")
    args = parser.parse_args(argv)
    if args.databases and len(args.databases) != 1 + len(args.others):
        parser.error(f"--databases names {len(args.databases)} databases for {1 + len(args.others)} sides")
    if args.all_queries:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodelodge.settings")
        import django

        django.setup()
    env = {**os.environ, "API_RATE_LIMIT": "off", "PAGE_RATE_LIMIT": "off", "ANSWER_CACHE_SECONDS": "0"}
    folders = {side_name(REPO): REPO}
    for other in args.others:
        folder = Path(other).resolve()
        folders[side_name(folder) if side_name(folder) not in folders else str(folder)] = folder
    this, others = next(iter(folders)), list(folders)[1:]
    databases: list[str | None] = list(args.databases or [None] * len(folders))
    sides = {}
    for (name, folder), database in zip(folders.items(), databases, strict=True):
        sides[name] = subprocess.Popen(  # noqa: S603 - our own interpreter on our own script
            [sys.executable, "-c", CHILD], cwd=folder, env={**env, "DATABASE_URL": database} if database else env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )

    def ask(name: str, path: str, panel: bool) -> tuple[float, int, int]:
        side = sides[name]
        side.stdin.write(json.dumps([path, panel]) + "\n")
        side.stdin.flush()
        return tuple(json.loads(side.stdout.readline()))

    heads = [f"{name}: median / p90 ms" for name in folders] + [f"{this} ÷ {name}" for name in others]
    print(f"| Request | {' | '.join(heads)} | statements ({', '.join(folders)}) |")
    print("|---|" + "---|" * (len(heads) + 1))
    if args.path:
        paths = [(path, path, False) for path in args.path]
    else:
        paths = every_query() if args.all_queries else default_paths()
        if args.query:
            paths = [path for path in paths if any(text in path[0] for text in args.query)]
    try:
        for label, path, panel in paths:
            for name in sides:  # warm-up
                ask(name, path, panel)
                ask(name, path, panel)
            times: dict[str, list[float]] = {name: [] for name in sides}
            statements = {}
            for turn in range(args.turns):
                for name in rotation(list(sides), turn):
                    elapsed, status, count = ask(name, path, panel)
                    times[name].append(elapsed)
                    statements[name] = (status, count)

            def figure(name: str) -> str:
                values = sorted(times[name])
                return f"{statistics.median(values):.1f} / {values[max(0, math.ceil(0.9 * len(values)) - 1)]:.1f}"

            ratios = [f"{statistics.median(times[this]) / statistics.median(times[name]):.2f}" for name in others]
            counts = " / ".join(f"{count} (HTTP {status})" for status, count in statements.values())
            print(f"| {label} | {' | '.join(figure(name) for name in folders)} | {' | '.join(ratios)} | {counts} |",
                  flush=True)
    finally:
        for side in sides.values():
            side.stdin.close()
            side.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
