"""Words and helpers every part of the engine's wording shares: sources of a memory figure, tiers,
counts, a price per hour."""
from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, TypeVar

from ..i18n import TranslatedWords, format_number, gettext, gettext_noop, ngettext
from ..units import (
    money_text,
    whole_down,
)

if TYPE_CHECKING:
    pass

MEMORY_SOURCE_WORDS = TranslatedWords({
    "datacenter": gettext_noop("datacenter figure"),
    "datasheet": gettext_noop("manufacturer datasheet"),
    "host": gettext_noop("reported by the host, not checked by Node Lodge"),
    "unknown": gettext_noop("source not recorded"),
})
# The same sources in a table cell.
MEMORY_SOURCE_SHORT = TranslatedWords({
    "datacenter": gettext_noop("datacenter"),
    "datasheet": gettext_noop("datasheet"),
    "host": gettext_noop("host-reported"),
    "unknown": gettext_noop("source not recorded"),
})
TIER_WORDS = TranslatedWords({
    "secure": gettext_noop("Secure"),
    "community": gettext_noop("Community"),
    "both": gettext_noop("Secure and Community"),
})

def machines_words(count: int) -> str:
    """"1 machine", "3 machines" in the active language."""
    return ngettext("%(count)s machine", "%(count)s machines", count) % {"count": count_text(count)}


def count_text(count: int) -> str:
    return format_number(count, grouping=False)


def minutes(budget: Decimal, hourly_price: Decimal) -> int:
    return whole_down(budget * 60 / hourly_price)


def count_words(value: object) -> str:
    return format_number(value) if isinstance(value, int) else str(value)


_Value = TypeVar("_Value")


def first_of(mapping: Mapping[str, _Value | None], *keys: str) -> _Value | None:
    for key in keys:
        value = mapping.get(key)
        if value is not None:
            return value
    return None


def per_hour(amount: Decimal) -> str:
    """A price per hour for people: "$0.098/h" ("0,098 $/h" in German)."""
    return f"{money_text(amount)}/h"


def bits_words(bits: int) -> str:
    """"16-bit" ("16-Bit" in German)."""
    return gettext("%(bits)s-bit") % {"bits": bits}


def tokens_words(count: object) -> str:
    return gettext("%(count)s tokens") % {"count": count_words(count)}
