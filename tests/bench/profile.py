"""Where an answer's time goes: `python -m tests.bench.profile [--runs N] [--api] [--query NAME]`.

Each of the benchmark's queries is asked of the result panel (or the API) through the Django test
client, warmed up once, then asked N times under cProfile. The self time of every function is added
up by the part of the code it belongs to (the sizing engine, the catalog, the console's answer, its
rows and words, Django's templates, the database driver, …), so the table says how much of the
median request each part costs, and the functions of our own code that cost most (with what they
call) follow it. DATABASE_URL names the fleet (`generate_fleet`); the answers are not cached.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from collections import defaultdict

# Buckets by the file a function lives in: the first prefix that matches wins.
PARTS: list[tuple[str, tuple[str, ...]]] = [
    ("sizing engine", ("/sizing/",)),
    ("catalog: fleet reader and rows", ("/catalog/",)),
    ("answer: query, preferences, relax", ("/nodelodge/recommendations/",)),
    ("page: views, rows, tags", ("/nodelodge/wizard/",)),
    ("rest of the console", ("/nodelodge/",)),
    ("templates (Django)", ("/django/template/", "/template_partials/", "/django/templatetags/")),
    ("database (Django ORM and psycopg)", ("/django/db/", "/psycopg/", "/sqlite3/")),
    ("i18n and formats (Django)", ("/django/utils/translation/", "/django/utils/formats.py",
                                   "/django/utils/numberformat.py")),
    ("forms (Django)", ("/django/forms/",)),
    ("request handling (Django, middleware)", ("/django/", "/django_htmx/", "/csp/", "/axes/", "/whitenoise/")),
    ("Python's standard library", ("/lib/python3",)),
]


def part_of(filename: str) -> str:
    for name, prefixes in PARTS:
        if any(prefix in filename for prefix in prefixes):
            return name
    return "builtins and other" if filename.startswith("~") or filename.startswith("<") else "other"


def profile(client, path: str, headers: dict, runs: int) -> tuple[pstats.Stats, list[float]]:
    client.get(path, **headers)  # warm-up: the first answer fills the process's caches
    profiler = cProfile.Profile()
    elapsed = []
    for _ in range(runs):
        started = time.perf_counter()
        profiler.enable()
        response = client.get(path, **headers)
        profiler.disable()
        elapsed.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    return pstats.Stats(profiler), elapsed


def by_part(stats: pstats.Stats, runs: int) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for (filename, _line, _name), (_cc, _nc, self_time, _cum, _callers) in stats.stats.items():
        totals[part_of(filename)] += self_time * 1000 / runs
    return dict(totals)


def ours(stats: pstats.Stats, runs: int, most: int, total_ms: float) -> list[tuple[float, float, str]]:
    """(cumulative ms, self ms, where) per request of our own functions, the dearest first, leaving
    out the middleware and the view that wrap the whole request (more than 80 % of it)."""
    rows = []
    for (filename, line, name), (_cc, _nc, self_time, cumulative, _callers) in stats.stats.items():
        for root in ("/sizing/", "/catalog/", "/nodelodge/"):
            if root in filename:
                where = root.strip("/") + "/" + filename.split(root, 1)[1] + f":{line} {name}"
                if cumulative * 1000 / runs <= 0.8 * total_ms:
                    rows.append((cumulative * 1000 / runs, self_time * 1000 / runs, where))
    return sorted(rows, reverse=True)[:most]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="profiled requests per query")
    parser.add_argument("--api", action="store_true", help="the API rather than the result panel")
    parser.add_argument("--query", action="append", help="only the queries with these names (repeatable)")
    parser.add_argument("--functions", type=int, default=12, help="our dearest functions listed per query")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodelodge.settings")
    os.environ.update(API_RATE_LIMIT="off", PAGE_RATE_LIMIT="off", ANSWER_CACHE_SECONDS="0")
    import django

    django.setup()
    from django.test import Client

    from .queries import QUERIES
    from .runner import HTMX, shown_query

    client = Client()
    overall: dict[str, float] = defaultdict(float)
    chosen = [(name, query) for name, query in QUERIES if not args.query or name in args.query]
    for name, query in chosen:
        if args.api:
            path, headers = f"/api/v1/recommendations?{query}", {}
        else:
            path, headers = "/?" + shown_query(query), HTMX
        stats, elapsed = profile(client, path, headers, args.runs)
        parts = by_part(stats, args.runs)
        total = sum(parts.values())
        elapsed.sort()
        print(f"\n## {name}: {elapsed[len(elapsed) // 2]:.1f} ms median under the profiler "
              f"({total:.1f} ms of self time counted)")
        for part, ms in sorted(parts.items(), key=lambda item: -item[1]):
            overall[part] += ms / len(chosen)
            print(f"  {part:<40} {ms:7.1f} ms  {ms / total:6.1%}")
        print("  our dearest functions (cumulative / self ms per request):")
        for cumulative, self_ms, where in ours(stats, args.runs, args.functions, total):
            print(f"    {cumulative:7.1f} {self_ms:6.1f}  {where}")
    total = sum(overall.values())
    print(f"\n## Every query, mean per request ({total:.1f} ms profiled)")
    for part, ms in sorted(overall.items(), key=lambda item: -item[1]):
        print(f"  {part:<40} {ms:7.1f} ms  {ms / total:6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
