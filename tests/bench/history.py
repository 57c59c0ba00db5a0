"""The price history page's figure: a GPU type's 30 days drawn from the history a fleet's refreshes
keep (`python -m tests.bench --history-only`, the issue's 1,000,000 machines).

The history is built as the refreshes build it: a sample writes the current hour's rows
(`record_price_history`, over every machine), and those rows are copied back over the
other 719 hours of the 30 days (and the 60 days before them, which the retention keeps and the page must
not read), prices varied by the hour. Every GPU type, country and market the fleet offers then has 90
days of hourly rows, as after three months of refreshes.
"""
from __future__ import annotations

import statistics
import time

HISTORY_TARGET_MS = 40  # the wizard's target for a page (its median through the test client)
KEPT_DAYS = 90


def build_history() -> int:
    """Replaces the history with 90 days of the fleet's hourly rows; returns the rows kept."""
    from django.db import connection
    from django.utils import timezone

    from nodelodge.refresh.history import hour_of, record_price_history
    from nodelodge.refresh.models import PriceHistory

    now = timezone.now()
    PriceHistory.objects.all().delete()
    record_price_history(now)
    with connection.cursor() as cursor:
        # Each earlier hour: the current hour's row, its prices moved by up to ±10 per cent with the hour of day.
        cursor.execute(
            """
            INSERT INTO refresh_pricehistory (gpu_type_id, market, country, hour, cheapest_per_gpu_hour,
                median_per_gpu_hour, offers, offers_in_stock, refreshes, refreshes_with_stock, updated_at)
            SELECT gpu_type_id, market, country, hour - make_interval(hours => age),
                   round(cheapest_per_gpu_hour * (0.9 + (age %% 24) / 120.0), 4),
                   round(median_per_gpu_hour * (0.9 + (age %% 24) / 120.0), 5),
                   offers, offers_in_stock, refreshes, refreshes_with_stock,
                   updated_at
            FROM refresh_pricehistory CROSS JOIN generate_series(1, %s) AS age
            WHERE hour = %s
            """,
            [KEPT_DAYS * 24 - 1, hour_of(now)],
        )
        cursor.execute("ANALYZE refresh_pricehistory")
    return PriceHistory.objects.count()


def time_history_page(fleet: str, report, runs: int, warmup: int, target: bool) -> None:
    """Times the history page of the GPU type with the most history (every country, and its busiest
    country) and its API through Django's test client; adds the rows to `report`."""
    from django.db import connection
    from django.db.models import Count
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from catalog.models import GpuType
    from nodelodge.refresh.models import ALL_COUNTRIES, PriceHistory

    started = time.perf_counter()
    kept = build_history()
    report.add(f"price history built: {kept:,} hourly rows (90 days)", fleet, time.perf_counter() - started, "s")
    busiest = (PriceHistory.objects.exclude(country=ALL_COUNTRIES).values("gpu_type_id")
               .annotate(rows=Count("id")).order_by("-rows", "gpu_type_id").first())
    if busiest is None:
        return
    gpu_type = GpuType.objects.get(pk=busiest["gpu_type_id"])
    country = (PriceHistory.objects.filter(gpu_type=gpu_type).exclude(country=ALL_COUNTRIES)
               .values("country").annotate(rows=Count("id")).order_by("-rows", "country").first()["country"])
    client = Client()
    for name, path in (
        ("history page", f"/gpus/{gpu_type.slug}/history/"),
        ("history page, German, one country", f"/de/gpus/{gpu_type.slug}/history/?country={country}"),
        ("history page, HTMX filter", f"/gpus/{gpu_type.slug}/history/?market=interruptible"),
        ("history API", f"/api/v1/gpu-types/{gpu_type.slug}/history"),
    ):
        headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "history"} if "HTMX" in name else {}
        timings = []
        for number in range(warmup + runs):
            begun = time.perf_counter()
            with CaptureQueriesContext(connection) as statements:
                response = client.get(path, **headers)
            elapsed = (time.perf_counter() - begun) * 1000
            if response.status_code != 200:
                raise SystemExit(f"{name}: HTTP {response.status_code}")
            if number >= warmup:
                timings.append(elapsed)
        median = statistics.median(timings)
        shown = f"{name} ({gpu_type.name}, {len(statements)} SQL statements)"
        report.add(f"{shown}, median", fleet, median, "ms", f"≤ {HISTORY_TARGET_MS} ms" if target else "",
                   median <= HISTORY_TARGET_MS if target else None)
        report.add(f"{shown}, p95", fleet, sorted(timings)[max(0, int(len(timings) * 0.95) - 1)], "ms")
