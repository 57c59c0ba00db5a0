# SQL here is assembled from this module's constants, our own table's name and the ORM's compiled
# query; every value travels as a parameter (ruff's S608 cannot tell).
# ruff: noqa: S608
"""The price and stock history the refreshes keep (`PriceHistory`): a sample of the whole fleet written
in one statement, aggregated in SQL, by at most one refresh every PRICE_HISTORY_SAMPLE_SECONDS; pruned
past its retention by a periodic task.

Writes only; the reads are `history_selectors`.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, IntegerField, Q, Value, When

from catalog import database
from catalog.availability import stale_cutoff
from catalog.markets import market_prices
from catalog.models import Machine

from .models import ALL_COUNTRIES, HistorySampling, PriceHistory


def hour_of(moment: datetime) -> datetime:
    """The start of the hour `moment` falls in: the key of its history rows."""
    return moment.replace(minute=0, second=0, microsecond=0)


def _offers_sql(now: datetime) -> tuple[str, tuple]:
    """The live offers of the whole fleet, one row per machine and market it is offered in:
    (gpu_type_id, country, h_market, h_price, h_stock), as SQL and its parameters. Live: in the fleet,
    its provider active, heard from within the stale window; in stock: available with a free GPU."""
    seen = Q(gone_at__isnull=True, provider_is_active=True, last_seen_at__gte=stale_cutoff(now))
    in_stock = Case(When(Q(is_available=True, free_gpus__gte=1), then=Value(1)), default=Value(0),
                    output_field=IntegerField())
    parts = [
        Machine.objects.filter(seen & market.where).order_by()
        .annotate(h_market=Value(market.market), h_price=market.price, h_stock=in_stock)
        .values_list("gpu_type_id", "country", "h_market", "h_price", "h_stock")
        for market in market_prices()
    ]
    union = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
    sql, params = union.query.sql_with_params()
    return sql, tuple(params)


# Each offer ranked by price within its GPU type, market and country ({by_country}: or every country).
_RANKED = (
    "SELECT gpu_type_id, h_market, {country} AS country, h_price, h_stock, "
    "ROW_NUMBER() OVER (PARTITION BY gpu_type_id, h_market{by_country} ORDER BY h_price) AS rn, "
    "COUNT(*) OVER (PARTITION BY gpu_type_id, h_market{by_country}) AS n FROM offers"
)
# The median is the mean of the middle price (n odd) or the two middle prices (n even). "WHERE true"
# keeps SQLite from reading ON CONFLICT as a join's ON. {lower}: the lower of two values, per database.
# The rows are written (and locked) in one order, so two providers' refreshes committing at once never
# wait on each other's rows in a cycle.
_UPSERT = """
    WITH offers AS ({offers})
    INSERT INTO {table} (gpu_type_id, market, country, hour, cheapest_per_gpu_hour, median_per_gpu_hour,
                         offers, offers_in_stock, refreshes, refreshes_with_stock, updated_at)
    SELECT gpu_type_id, h_market, country, %s, MIN(h_price),
           AVG(CASE WHEN rn IN ((n + 1) / 2, (n + 2) / 2) THEN h_price END),
           COUNT(*), SUM(h_stock), 1, MAX(h_stock), %s
    FROM ({ranked}) AS ranked
    WHERE true
    GROUP BY gpu_type_id, h_market, country
    ORDER BY gpu_type_id, h_market, country
    ON CONFLICT (gpu_type_id, market, country, hour) DO UPDATE SET
        cheapest_per_gpu_hour = {lower}({table}.cheapest_per_gpu_hour, excluded.cheapest_per_gpu_hour),
        median_per_gpu_hour = excluded.median_per_gpu_hour,
        offers = excluded.offers,
        offers_in_stock = excluded.offers_in_stock,
        refreshes = {table}.refreshes + 1,
        refreshes_with_stock = {table}.refreshes_with_stock + excluded.refreshes_with_stock,
        updated_at = excluded.updated_at
"""


def sample_price_history(now: datetime) -> bool:
    """Records the history (`record_price_history`) unless a refresh did within the last
    PRICE_HISTORY_SAMPLE_SECONDS; returns whether this call did. Called inside a refresh's transaction:
    the sampling row stays locked until it commits, and a refresh that finds it locked leaves the
    sample to that one (PostgreSQL's SKIP LOCKED; SQLite has one writer at a time)."""
    HistorySampling.objects.get_or_create(pk=1)
    with transaction.atomic():
        sampling = HistorySampling.objects.select_for_update(skip_locked=True).filter(pk=1).first()
        interval = timedelta(seconds=settings.PRICE_HISTORY_SAMPLE_SECONDS)
        if sampling is None or (sampling.sampled_at is not None and now - sampling.sampled_at < interval):
            return False
        record_price_history(now)
        sampling.sampled_at = now
        sampling.save(update_fields=["sampled_at"])
        return True


def record_price_history(now: datetime) -> None:
    """Adds the fleet's live offers now to the hour's history rows: one row per GPU type, market and
    country (and one for every country at once), inserted or updated by one statement."""
    offers, params = _offers_sql(now)
    per_country = _RANKED.format(country="country", by_country=", country")
    every_country = _RANKED.format(country=f"'{ALL_COUNTRIES}'", by_country="")
    sql = _UPSERT.format(
        offers=offers, table=PriceHistory._meta.db_table, ranked=f"{per_country} UNION ALL {every_country}",
        lower=database.lower_of_two(),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, (*params, hour_of(now), now))  # nosec B608


def retention() -> timedelta:
    return timedelta(days=settings.PRICE_HISTORY_RETENTION_DAYS)


def prune_price_history(now: datetime) -> int:
    """Deletes the history rows of hours older than the retention, in one statement; returns how many."""
    deleted, _ = PriceHistory.objects.filter(hour__lt=hour_of(now) - retention()).delete()
    return deleted
