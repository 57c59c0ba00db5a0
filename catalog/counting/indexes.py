"""The partial indexes the wizard's band walks read (`catalog.counting.fleet_machines`), with their
condition compiled from the availability rule: they hold the machines its flag checks let through
(not gone, the machine and its provider offered). Those checks take no value from the query; the
figures the rule checks next (memory, free GPUs) are what a walk filters on the index entries."""
from __future__ import annotations

from catalog import availability
from catalog.market_columns import MARKET_PRICE_COLUMNS
from sizing.availability import IS_FALSE, IS_SET, RULE
from sizing.markets import DEFAULT_MARKET

# Tests whose checks the indexes' condition holds, and the condition each passes on.
INDEXED_TESTS = {IS_SET: "{column} IS NULL", IS_FALSE: "{column}"}
# What a band walk reads of a machine besides its price: in the index, it filters on the entries alone
# (the GPU type for the workloads fitted by kind of GPU, `catalog.counting.gpu_kinds`).
WALK_COLUMNS = ("memory_per_gpu_mib", "free_gpus", "tier", "country", "last_seen_at", "provider_id",
                "provider_machine_id", "id", "reliability", "gpu_type_id")


def indexed_condition() -> str:
    """The rule's flag checks as the condition they let a machine through on, in the rule's order."""
    parts = [
        INDEXED_TESTS[check.test].format(column=availability.COLUMNS[check.field])
        for check in RULE
        if check.test in INDEXED_TESTS
    ]
    return " AND ".join(parts)


def install_sql() -> list[str]:
    """The band walks' indexes: by price (any choice of countries), and by country then price (a few),
    for the price of each market preference (`catalog.models.MARKET_PRICE_COLUMNS`; on demand only
    reads the listed price, whose indexes keep their names). The default market's walks also read by
    tier then price: a walk that keeps one tier of a set of countries (Secure in the EU) otherwise reads
    every machine of its band in those countries from the table and sorts them, or passes over the other
    tier's machines in price order; by tier it reads its own tier's in price order and stops at its
    limit. The other markets are asked far less and keep to two indexes, as every index is written on
    each refresh of a machine."""
    condition = indexed_condition()
    statements = []
    for choice, price in MARKET_PRICE_COLUMNS.items():
        prefix = "catalog_machine" if choice == DEFAULT_MARKET else f"catalog_machine_{choice}"
        statements += [
            f"CREATE INDEX {prefix}_offer_cover_idx ON catalog_machine ({price}) "
            f"INCLUDE ({', '.join(WALK_COLUMNS)}) WHERE {condition}",
            _leading("country", f"{prefix}_country_price_idx", price, condition),
        ]
        if choice == DEFAULT_MARKET:
            statements.append(_leading("tier", f"{prefix}_tier_price_idx", price, condition))
    return statements


def _leading(column: str, name: str, price: str, condition: str) -> str:
    """A walk index led by `column`, then the price, carrying the rest of what a walk reads."""
    rest = ", ".join(walked for walked in WALK_COLUMNS if walked != column)
    return f"CREATE INDEX {name} ON catalog_machine ({column}, {price}) INCLUDE ({rest}) WHERE {condition}"
