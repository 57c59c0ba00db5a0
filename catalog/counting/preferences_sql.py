"""The preferences (`sizing.preferences.RULE`) and the listing order (`sizing.preferences.ORDER`)
compiled into the SQL fragments of the counting queries. Nothing here decides what a preference
means: it translates the rule's entries, in the rule's order, over whatever a statement calls the
machine's tier and hourly price (the hourly price in dollars over the machines, in units of price
over the kept counts); the tests hold the forms to agree."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal

from sizing.preferences import (
    HOURLY_OVER,
    MACHINE_TESTS,
    ORDER,
    OTHER_TIER,
    UNDER_MINIMUM,
    Preference,
    chosen,
)


def _as_is(value: Decimal) -> tuple[str, list]:
    return "%s", [value]


def meets_one_sql(
    preference: Preference,
    value,
    hourly: str,
    hourly_params: list | tuple = (),
    *,
    tier: str = "m.tier",
    reliability: str = "m.reliability",
    limit: Callable[[Decimal], tuple[str, list]] = _as_is,
) -> tuple[str, list]:
    """Meets one chosen preference, as a SQL condition. `hourly` is the statement's hourly price
    (with `hourly_params`); `limit(value)` gives a price limit's SQL in the same units. The condition is
    true or false, never NULL, so that its NOT holds the machines that break it."""
    if preference.test == OTHER_TIER:
        return f"{tier} = %s", [value]
    if preference.test == UNDER_MINIMUM:  # a machine reporting none never meets a minimum
        return f"({reliability} IS NOT NULL AND {reliability} >= %s)", [value]
    if preference.test == HOURLY_OVER:
        limit_sql, limit_params = limit(value)
        return f"{hourly} <= {limit_sql}", [*hourly_params, *limit_params]
    raise ValueError(f"unknown preference test {preference.test!r}")


def meets_sql(
    settings,
    hourly: str,
    hourly_params: list | tuple = (),
    *,
    tier: str = "m.tier",
    reliability: str = "m.reliability",
    limit: Callable[[Decimal], tuple[str, list]] = _as_is,
    tests: tuple[str, ...] = (*MACHINE_TESTS, HOURLY_OVER),
) -> tuple[str, list]:
    """Meets every preference `settings` chooses (of those making one of `tests`), as a SQL
    condition ("TRUE" when none is chosen), and its values."""
    parts, params = ["TRUE"], []
    for preference, value in chosen(settings):
        if preference.test in tests:
            sql, found = meets_one_sql(
                preference, value, hourly, hourly_params, tier=tier, reliability=reliability, limit=limit
            )
            parts.append(sql)
            params += found
    return " AND ".join(parts), params


def tier_sql(settings, tier: str = "m.tier", reliability: str = "m.reliability") -> tuple[str, list]:
    """Meets the preferences that read the machine's own values alone, the tier and the minimum
    reliability (the statements that weigh prices apart)."""
    return meets_sql(settings, "", tier=tier, reliability=reliability, tests=MACHINE_TESTS)


def breaks_sql(
    settings, hourly: str, hourly_params: list | tuple = (), **options
) -> list[tuple[str, str, list]]:
    """(code, condition that the preference is broken, its values) for every chosen preference, in
    the order broken preferences are reported."""
    found = []
    for preference, value in chosen(settings):
        sql, params = meets_one_sql(preference, value, hourly, hourly_params, **options)
        found.append((preference.code, f"NOT ({sql})", params))
    return found


def order_by_sql(columns: Mapping[str, str], implied: tuple[str, ...] = ()) -> str:
    """The listing order as an ORDER BY list over a statement's `columns` (order name -> SQL).
    `implied` names order columns the statement need not sort by, as the rest imply their order
    (within one band of GPUs used, the hourly price is a fixed multiple of the price per GPU-hour)."""
    missing = [name for name in ORDER if name not in columns and name not in implied]
    if missing:
        raise ValueError(f"no column for the listing order's {missing}")
    return ", ".join(columns[name] for name in ORDER if name not in implied)
