"""The availability rule (`sizing.availability.RULE`) compiled for the database: an ORM filter and
the SQL fragments of the counting query. Nothing here decides what "available" means; it only
translates the rule's checks, in the rule's order, so the three forms cannot drift apart."""
from __future__ import annotations

from datetime import datetime

from django.db.models import Q

from sizing.availability import (
    BEFORE_CUTOFF,
    BELOW_ONE,
    COUNTED_REASONS,
    IS_FALSE,
    IS_SET,
    MISSING,
    OUTSIDE,
    RULE,
    Check,
)

# The column of catalog_machine behind each field the rule reads (see `selectors.machine_offer`).
COLUMNS = {
    "gone": "gone_at",
    "is_available": "is_available",
    "provider_active": "provider_is_active",
    "last_seen": "last_seen_at",
    "country": "country",  # "" = location unknown
    "memory_per_gpu_mib": "memory_per_gpu_mib",
    "free_gpus": "free_gpus",
}
# Status numbers in the counting query: a counted reason's place in the rule, or SCREENED.
STATUS_OF_REASON = {reason: number for number, reason in enumerate(COUNTED_REASONS)}
REASON_OF_STATUS = dict(enumerate(COUNTED_REASONS))
SCREENED = len(COUNTED_REASONS)


def fails_q(check: Check, stale_cutoff: datetime, countries: frozenset[str] | None) -> Q:
    """Machines failing one check, as an ORM filter."""
    column = COLUMNS[check.field]
    if check.test == IS_SET:
        return Q(**{f"{column}__isnull": False})
    if check.test == IS_FALSE:
        return Q(**{column: False})
    if check.test == BEFORE_CUTOFF:
        return Q(**{f"{column}__isnull": True}) | Q(**{f"{column}__lt": stale_cutoff})
    if check.test == OUTSIDE:
        unknown = Q(**{column: ""})
        return unknown if countries is None else unknown | ~Q(**{f"{column}__in": sorted(countries)})
    if check.test == MISSING:
        return Q(**{f"{column}__isnull": True}) | Q(**{f"{column}__lte": 0})
    if check.test == BELOW_ONE:
        return Q(**{f"{column}__lt": 1})
    raise ValueError(f"unknown availability test {check.test!r}")


def _fails_sql(check: Check, stale_cutoff: datetime, countries: frozenset[str] | None) -> tuple[str, list]:
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


def available_q(stale_cutoff: datetime, countries: frozenset[str] | None) -> Q:
    """Machines the rule lets through, as an ORM filter."""
    q = Q()
    for check in RULE:
        q &= ~fails_q(check, stale_cutoff, countries)
    return q


def in_fleet_q() -> Q:
    """Machines still part of the fleet: those the uncounted checks (gone) let through."""
    q = Q()
    for check in RULE:
        if not check.counted:
            q &= ~fails_q(check, datetime.min, None)
    return q


def in_fleet_sql() -> str:
    """The same as `in_fleet_q`, as SQL over `catalog_machine m` (these checks take no values)."""
    parts = [f"NOT ({_fails_sql(check, datetime.min, None)[0]})" for check in RULE if not check.counted]
    return " AND ".join(parts) or "TRUE"


def status_sql(stale_cutoff: datetime, countries: frozenset[str] | None) -> tuple[str, list]:
    """CASE expression over `catalog_machine m`: the status number of the first counted check a
    machine fails, or SCREENED. Use on machines `in_fleet_sql` lets through."""
    whens, params = [], []
    for check in RULE:
        if not check.counted:
            continue
        sql, check_params = _fails_sql(check, stale_cutoff, countries)
        whens.append(f"WHEN {sql} THEN {STATUS_OF_REASON[check.reason]}")
        params += check_params
    return f"(CASE {' '.join(whens)} ELSE {SCREENED} END)", params


def available_sql(stale_cutoff: datetime, countries: frozenset[str] | None) -> tuple[str, list]:
    """Machines the rule lets through, as a SQL condition over `catalog_machine m`."""
    parts, params = [], []
    for check in RULE:
        sql, check_params = _fails_sql(check, stale_cutoff, countries)
        parts.append(f"NOT ({sql})")
        params += check_params
    return " AND ".join(parts), params


def counted_checks() -> list[tuple[int, Check]]:
    """(status number, check) for every check whose failures are counted, in the rule's order."""
    return [(STATUS_OF_REASON[check.reason], check) for check in RULE if check.counted]
