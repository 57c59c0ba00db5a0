"""The availability rule (`sizing.availability.RULE`) compiled into the SQL fragments of the
counting queries, over `catalog_machine m` or any table with its columns of the same names (the kept
counts and speeds). It translates the rule's checks, in the rule's order, as `catalog.availability`
does for the ORM; the tests hold the forms to agree."""
from __future__ import annotations

from datetime import datetime

from catalog.availability import COLUMNS, SCREENED, STATUS_OF_REASON
from sizing.availability import (
    BEFORE_CUTOFF,
    BELOW_ONE,
    IS_FALSE,
    IS_SET,
    MISSING,
    OUTSIDE,
    RULE,
    Check,
)


def fails_sql(check: Check, stale_cutoff: datetime, countries: frozenset[str] | None) -> tuple[str, list]:
    """Machines failing one check, as a SQL condition over `catalog_machine m`, and its values."""
    column = f"m.{COLUMNS[check.field]}"
    if check.test == IS_SET:
        return f"{column} IS NOT NULL", []
    if check.test == IS_FALSE:
        return f"NOT {column}", []
    if check.test == BEFORE_CUTOFF:
        return f"({column} IS NULL OR {column} < %s)", [stale_cutoff]
    if check.test == OUTSIDE:
        if countries is None:
            return f"{column} = ''", []
        return f"({column} = '' OR NOT ({column} = ANY(%s)))", [sorted(countries)]
    if check.test == MISSING:
        return f"({column} IS NULL OR {column} <= 0)", []
    if check.test == BELOW_ONE:
        return f"{column} < 1", []
    raise ValueError(f"unknown availability test {check.test!r}")


def in_fleet_sql() -> str:
    """The same as `in_fleet_q`, as SQL over `catalog_machine m` (these checks take no values)."""
    parts = [f"NOT ({fails_sql(check, datetime.min, None)[0]})" for check in RULE if not check.counted]
    return " AND ".join(parts) or "TRUE"


def status_sql(stale_cutoff: datetime, countries: frozenset[str] | None) -> tuple[str, list]:
    """CASE expression over `catalog_machine m`: the status number of the first counted check a
    machine fails, or SCREENED. Use on machines `in_fleet_sql` lets through."""
    whens, params = [], []
    for check in RULE:
        if not check.counted:
            continue
        sql, check_params = fails_sql(check, stale_cutoff, countries)
        whens.append(f"WHEN {sql} THEN {STATUS_OF_REASON[check.reason]}")
        params += check_params
    return f"(CASE {' '.join(whens)} ELSE {SCREENED} END)", params


def available_sql(stale_cutoff: datetime, countries: frozenset[str] | None) -> tuple[str, list]:
    """Machines the rule lets through, as a SQL condition over `catalog_machine m`."""
    parts, params = [], []
    for check in RULE:
        sql, check_params = fails_sql(check, stale_cutoff, countries)
        parts.append(f"NOT ({sql})")
        params += check_params
    return " AND ".join(parts), params
