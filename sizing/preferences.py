"""The user's preferences and the listing order (SPEC §4), each written once.

Preferences
    A machine that fits but is the wrong tier, reports a reliability under the minimum chosen (or none
    at all: a figure is never assumed), costs more per hour than the price limit, or whose hourly
    price the budget does not cover for one hour is an *alternative*, never a recommendation.
    Each preference is an entry of `RULE`: the code it is reported by when broken, the setting it
    reads (an attribute of `sizing.offers.Preferences`, and of every query that carries the
    preferences under the same names) and the test it makes. `RULE`'s order is the order broken
    preferences are reported in. This module applies the rule to plain values (the engine); the
    catalog compiles the same entries into SQL (`catalog.counting.preferences_sql`) and the ORM
    (`catalog.preferences`). Tests hold the forms to agree.

Order
    Cheapest hourly price (GPUs used × price per GPU-hour) first; ties broken by price per GPU-hour,
    then provider name, provider's machine id and our id (`ORDER`). The key is total, so the order
    never depends on the order the machines came in.

Adding a preference: an entry in `RULE` (with a test below, or a new one compiled in each form),
its setting on `Preferences` and the queries, and, where it reads a machine's column the kept counts
do not group by yet, that column on the counts' shape (`catalog.counting.fleet_counts`).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from operator import attrgetter
from typing import cast

from .limits import PRICE_UNITS
from .reasons import BREAK_BUDGET, BREAK_MAX_PRICE, BREAK_RELIABILITY, BREAK_TIER

ANY_TIER = "both"  # the tier setting that chooses none

# Tests a preference can make; each is compiled into every form (engine, ORM, SQL).
OTHER_TIER = "other_tier"  # broken when a tier is chosen and the machine's is another
HOURLY_OVER = "hourly_over"  # broken when a limit is set and the hourly price is over it
# Broken when a minimum is set and the machine's value is under it or not reported (None).
UNDER_MINIMUM = "under_minimum"
# The tests that read the machine's own values rather than its price.
MACHINE_TESTS: tuple[str, ...] = (OTHER_TIER, UNDER_MINIMUM)
# Places of a minimum reliability (0.95): the kept counts hold each machine's reliability rounded down
# to as many places, so a minimum compares alike there and on the machine (`catalog.counting.fleet_counts`).
RELIABILITY_PLACES = 2


@dataclass(frozen=True)
class Preference:
    code: str  # the break code (`sizing.reasons.BREAK_*`)
    setting: str  # the attribute holding the user's choice, on `Preferences` and the queries
    test: str
    # The machine's value it compares (a `MachineOffer` attribute), besides the hourly price: the
    # kept counts group machines by it (their shape key).
    machine_field: str | None = None


RULE: tuple[Preference, ...] = (
    Preference(BREAK_TIER, "tier", OTHER_TIER, machine_field="tier"),
    Preference(BREAK_RELIABILITY, "min_reliability", UNDER_MINIMUM, machine_field="reliability"),
    Preference(BREAK_MAX_PRICE, "max_price_per_hour", HOURLY_OVER),
    # Budgets and limits are positive (`sizing.limits`), so a free machine never breaks either.
    Preference(BREAK_BUDGET, "budget", HOURLY_OVER),
)
CODES: tuple[str, ...] = tuple(preference.code for preference in RULE)
# The machine's values the preferences compare, besides the hourly price, in the rule's order.
MACHINE_FIELDS: tuple[str, ...] = tuple(
    dict.fromkeys(preference.machine_field for preference in RULE if preference.machine_field)
)


def is_chosen(preference: Preference, value: object) -> bool:
    """Whether the user's `value` for this preference can rule a machine out."""
    if preference.test == OTHER_TIER:
        return value != ANY_TIER
    if preference.test in (HOURLY_OVER, UNDER_MINIMUM):
        return value is not None
    raise ValueError(f"unknown preference test {preference.test!r}")


def under_minimum(value: object, minimum: object) -> bool:
    """Whether a machine's `value` breaks a `minimum`: under it, or not reported (None)."""
    return value is None or cast(Decimal, value) < cast(Decimal, minimum)


def machine_breaks(preference: Preference, value: object, machine: object) -> bool:
    """Whether `machine` breaks a chosen preference that reads its own values (`MACHINE_TESTS`); a
    machine given as None was chosen by them already."""
    if machine is None:
        return False
    own = getattr(machine, cast(str, preference.machine_field))
    if preference.test == OTHER_TIER:
        return bool(own != value)
    if preference.test == UNDER_MINIMUM:
        return under_minimum(own, value)
    raise ValueError(f"not a test of the machine's values: {preference.test!r}")


def chosen(settings: object) -> list[tuple[Preference, object]]:
    """(preference, the user's value) for every preference `settings` (a `Preferences`, or a query
    carrying the same attributes) sets, in the rule's order."""
    found = []
    for preference in RULE:
        value = getattr(settings, preference.setting)
        if is_chosen(preference, value):
            found.append((preference, value))
    return found


def price_limits(settings: object) -> list[tuple[Preference, Decimal]]:
    """The limits on the hourly price that `settings` sets, in the rule's order."""
    return [(preference, cast(Decimal, value)) for preference, value in chosen(settings)
            if preference.test == HOURLY_OVER]


def tier_chosen(settings: object) -> str | None:
    """The tier `settings` asks for, or None for any."""
    for preference, value in chosen(settings):
        if preference.test == OTHER_TIER:
            return cast(str, value)
    return None


def breaks(
    settings: object, machine: object, hourly_over: Callable[[Preference, Decimal], bool]
) -> tuple[str, ...]:
    """The codes of the preferences a fitting machine breaks, in the order they are reported.
    `machine` holds the values the preferences compare (`MACHINE_FIELDS`, as attributes: an offer, a
    count row, a speed row), or is None for a machine taken to meet them (callers that chose by them
    already). `hourly_over(preference, limit)` says whether its hourly price is over a limit (the
    engine compares prices; the counts compare price bands)."""
    found = []
    for preference, value in chosen(settings):
        if preference.test in MACHINE_TESTS:
            broken = machine_breaks(preference, value, machine)
        elif preference.test == HOURLY_OVER:
            broken = hourly_over(preference, cast(Decimal, value))
        else:
            raise ValueError(f"unknown preference test {preference.test!r}")
        if broken:
            found.append(preference.code)
    return tuple(found)


def breaks_checker(settings: object) -> Callable[[object, Decimal], tuple[str, ...]]:
    """`preference_breaks` for one set of settings, worked out once: check(machine, hourly_price)
    (the engine calls it for every fitting machine)."""
    tests = [
        (preference, preference.test == HOURLY_OVER, value) for preference, value in chosen(settings)
    ]
    if not tests:
        return lambda machine, hourly_price: ()

    def check(machine: object, hourly_price: Decimal) -> tuple[str, ...]:
        return tuple(
            preference.code
            for preference, priced, value in tests
            if (hourly_price > cast(Decimal, value) if priced else machine_breaks(preference, value, machine))
        )

    return check


def preference_breaks(machine: object, hourly_price: Decimal, settings: object) -> tuple[str, ...]:
    """The preferences a fitting machine costing `hourly_price` per hour breaks, in the order they
    are reported (see `breaks` for `machine`)."""
    return breaks(settings, machine, lambda preference, limit: hourly_price > limit)


def first_price_over(limit: Decimal, gpus: int) -> Decimal:
    """The lowest price per GPU-hour (prices have 4 places) whose hourly price on `gpus` GPUs is over
    `limit`: price × gpus > limit exactly when price >= this. Exact, through integers of 1/10,000."""
    units = Fraction(limit) * PRICE_UNITS / gpus
    return Decimal(math.floor(units) + 1) / PRICE_UNITS


# The listing order, most significant first: names of a machine's values (`MachineOffer`'s
# attributes), the hourly price first.
HOURLY_PRICE = "hourly_price"
ORDER: tuple[str, ...] = (HOURLY_PRICE, "price_per_gpu_hour", "provider", "provider_machine_id", "id")


def order_key_of(**renamed: str) -> Callable[[Decimal, object], tuple[object, ...]]:
    """The listing order's key for machines whose values are attributes of the same names, or of the
    names `renamed` gives (a speed row's `id` is `machine_id`): key(hourly_price, machine)."""
    values = attrgetter(*(renamed.get(name, name) for name in ORDER[1:]))
    return lambda hourly_price, machine: (hourly_price, *values(machine))


# The key of a `MachineOffer` (or anything with its attribute names).
order_key = order_key_of()
