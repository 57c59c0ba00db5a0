"""The preferences (`sizing.preferences.RULE`) and the listing order (`sizing.preferences.ORDER`)
compiled for the ORM, as `catalog.availability` compiles the availability rule. A price limit on a
machine using a given number of GPUs is a bound on its price per GPU-hour: the first price over the
limit (`sizing.preferences.first_price_over`), worked out once per limit and GPU count. The SQL form
is `catalog.counting.preferences_sql`."""
from __future__ import annotations

from django.db.models import F, Q

from sizing.preferences import (
    HOURLY_OVER,
    HOURLY_PRICE,
    MACHINE_TESTS,
    ORDER,
    OTHER_TIER,
    UNDER_MINIMUM,
    Preference,
    chosen,
    first_price_over,
)

# The field of catalog_machine behind each value the rule and the order read.
COLUMNS = {"tier": "tier", "reliability": "reliability"}  # `Preference.machine_field` -> column
TIER_FIELD = COLUMNS["tier"]
PRICE_FIELD = "price_per_gpu_hour"
ORDER_FIELDS = {
    "price_per_gpu_hour": PRICE_FIELD,
    "provider": "provider__name",
    "provider_machine_id": "provider_machine_id",
    "id": "id",
}


def meets_one_q(preference: Preference, value, gpus: int) -> Q:
    """Machines using `gpus` GPUs that meet one chosen preference, as an ORM filter."""
    if preference.test == OTHER_TIER:
        return Q(**{TIER_FIELD: value})
    if preference.test == UNDER_MINIMUM:  # a machine reporting none never meets a minimum (NULL >= x)
        return Q(**{f"{COLUMNS[str(preference.machine_field)]}__gte": value})
    if preference.test == HOURLY_OVER:
        return Q(**{f"{PRICE_FIELD}__lt": first_price_over(value, gpus)})
    raise ValueError(f"unknown preference test {preference.test!r}")


def meets_q(settings, gpus: int, tests: tuple[str, ...] = (*MACHINE_TESTS, HOURLY_OVER)) -> Q:
    """Machines using `gpus` GPUs that meet every preference `settings` chooses (of those making one
    of `tests`), as an ORM filter."""
    q = Q()
    for preference, value in chosen(settings):
        if preference.test in tests:
            q &= meets_one_q(preference, value, gpus)
    return q


def tier_q(settings) -> Q:
    """Machines meeting the preferences that read the machine's own values, its price apart: of the
    chosen tier (any without one), with at least the minimum reliability chosen."""
    return meets_q(settings, 1, tests=MACHINE_TESTS)


def band_order_by() -> list:
    """The listing order for machines using one number of GPUs, as `order_by` arguments (their
    hourly price is their price per GPU-hour times that number, so it follows that price). Names
    compare as the database's collation has them; the engine and the counting SQL compare code
    points."""
    return [F(ORDER_FIELDS[name]).asc() for name in ORDER if name != HOURLY_PRICE]
