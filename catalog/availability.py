"""The availability rule (`sizing.availability.RULE`) compiled for the ORM, with the columns it reads
and the status numbers the counts use. Nothing here decides what "available" means; it only
translates the rule's checks, in the rule's order, so the forms cannot drift apart (the SQL form
is `catalog.counting.availability_sql`)."""
from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
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

# The column of catalog_machine behind each field the rule reads (see `catalog.rows.machine_offer`).
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


def stale_cutoff(now: datetime) -> datetime:
    """Machines last seen before this are stale at `now` (the rule's BEFORE_CUTOFF check)."""
    return now - timedelta(seconds=settings.MACHINE_STALE_AFTER_SECONDS)


def fails_q(check: Check, stale_cutoff: datetime | None, countries: frozenset[str] | None) -> Q:
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


def counted_checks() -> list[tuple[int, Check]]:
    """(status number, check) for every check whose failures are counted, in the rule's order."""
    return [(STATUS_OF_REASON[check.reason], check) for check in RULE if check.counted]
