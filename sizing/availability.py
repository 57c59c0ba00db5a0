"""What "available now" means (SPEC §4), written once.

A machine is considered only when every check below passes; the first check it fails is the
reason it was left out. The rule is data: this module applies it to plain values (the engine, and
Launch's re-check under the row lock), and the catalog compiles the same checks into an ORM filter
and into the SQL of the counting query (`catalog.availability`). Tests hold the three to agree.

A machine that has left its provider's feed ("gone") is no longer part of the fleet: it is left out
without being counted as excluded.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from .reasons import MEMORY_UNKNOWN, NO_FREE_GPUS, OFFLINE, OUTSIDE_COUNTRIES, STALE

GONE = "gone"

# Tests a check can make on one field; each is compiled three ways (here, ORM, SQL).
IS_SET = "is_set"  # unavailable when the field holds a value (gone_at)
IS_FALSE = "is_false"  # unavailable when the flag is off
BEFORE_CUTOFF = "before_cutoff"  # unavailable when never seen or seen before the stale cutoff
OUTSIDE = "outside"  # unavailable when the location is unknown or not among the chosen countries
MISSING = "missing"  # unavailable when the figure is unknown
BELOW_ONE = "below_one"  # unavailable when fewer than one


@dataclass(frozen=True)
class Check:
    reason: str
    field: str  # the attribute on a plain machine value (`sizing.offers.MachineOffer`)
    test: str
    counted: bool = True  # False: left out without being counted as excluded


RULE: tuple[Check, ...] = (
    Check(GONE, "gone", IS_SET, counted=False),
    Check(OFFLINE, "is_available", IS_FALSE),
    Check(OFFLINE, "provider_active", IS_FALSE),
    Check(STALE, "last_seen", BEFORE_CUTOFF),
    Check(OUTSIDE_COUNTRIES, "country", OUTSIDE),
    Check(MEMORY_UNKNOWN, "memory_per_gpu_mib", MISSING),
    Check(NO_FREE_GPUS, "free_gpus", BELOW_ONE),
)

# The reasons the rule counts, in the order it applies them.
COUNTED_REASONS: tuple[str, ...] = tuple(dict.fromkeys(c.reason for c in RULE if c.counted))


class MachineState(Protocol):
    """What the availability rule reads of a machine (read only: offers are frozen)."""

    @property
    def gone(self) -> bool: ...
    @property
    def is_available(self) -> bool: ...
    @property
    def provider_active(self) -> bool: ...
    @property
    def last_seen(self) -> datetime | None: ...
    @property
    def country(self) -> str | None: ...
    @property
    def memory_per_gpu_mib(self) -> int | None: ...
    @property
    def free_gpus(self) -> int: ...


def _fails(check: Check, value: Any, stale_cutoff: datetime | None, countries: frozenset[str] | None) -> bool:
    test = check.test
    if test == IS_SET:
        return bool(value)
    if test == IS_FALSE:
        return not value
    if test == BEFORE_CUTOFF:
        return stale_cutoff is not None and (value is None or value < stale_cutoff)
    if test == OUTSIDE:
        return not value or (countries is not None and value not in countries)
    if test == MISSING:
        return value is None or value <= 0
    if test == BELOW_ONE:
        return bool(value < 1)
    raise ValueError(f"unknown availability test {test!r}")


def unavailable_reason(
    machine: MachineState, *, stale_cutoff: datetime | None, countries: frozenset[str] | None
) -> str | None:
    """The first check `machine` fails (a reason from `sizing.reasons`, or GONE), or None when it
    is available now in the chosen countries (None = anywhere). Without a `stale_cutoff` the
    staleness check is skipped (for callers that screened for it already)."""
    for check in RULE:
        if _fails(check, getattr(machine, check.field), stale_cutoff, countries):
            return check.reason
    return None
