"""The markets a machine is offered in, and its price per GPU-hour in each.

The one place that derives them from a machine's fields (`market_prices`): the price history keys its
rows by market, and whoever gives a machine several markets (on-demand, interruptible, reserved prices
on one offer) changes this function and nothing else there.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import models
from django.db.models import Case, F, Q, When
from django.utils.translation import gettext_lazy as _

from sizing import markets


class Market(models.TextChoices):
    ON_DEMAND = "on_demand", _("On-demand")
    INTERRUPTIBLE = "interruptible", _("Interruptible")
    RESERVED = "reserved", _("Reserved")


@dataclass(frozen=True)
class MarketPrice:
    """One market a machine may be offered in: which machines are (`where`, as an ORM filter, and
    `offered`, the same test on one machine's fields) and their price per GPU-hour there (`price`, an
    ORM expression, and `price_of`, the same on one machine)."""

    market: str
    where: Q
    price: Any  # an ORM expression over catalog_machine's columns
    offered: Callable[[Any], bool]
    price_of: Callable[[Any], Decimal]


def market_prices() -> tuple[MarketPrice, ...]:
    """The markets of `sizing.markets.market_prices` as ORM filters and prices: a machine not listed
    interruptible is on demand at its listed price; a listed interruptible one is in the interruptible
    market at that price, any other there at its interruptible price when it has one; a machine with a
    reserved price and term is in the reserved market at that price."""
    return (
        MarketPrice(Market.ON_DEMAND, Q(interruptible=False), F("price_per_gpu_hour"),
                    lambda machine: _offered(machine, Market.ON_DEMAND),
                    lambda machine: _price(machine, Market.ON_DEMAND)),
        MarketPrice(
            Market.INTERRUPTIBLE,
            Q(interruptible=True) | Q(interruptible_price_per_gpu_hour__isnull=False),
            Case(When(interruptible=True, then=F("price_per_gpu_hour")),
                 default=F("interruptible_price_per_gpu_hour")),
            lambda machine: _offered(machine, Market.INTERRUPTIBLE),
            lambda machine: _price(machine, Market.INTERRUPTIBLE),
        ),
        MarketPrice(
            Market.RESERVED,
            Q(reserved_price_per_gpu_hour__isnull=False, reserved_term_days__isnull=False),
            F("reserved_price_per_gpu_hour"),
            lambda machine: _offered(machine, Market.RESERVED),
            lambda machine: _price(machine, Market.RESERVED),
        ),
    )


def _markets(machine: Any) -> dict[str, Decimal]:
    """market -> price per GPU-hour of `machine` (a Machine or a MachineOffer), by the one rule."""
    from catalog.models import MARKET_FIELDS  # the models read this module's choices

    prices = markets.market_prices(**{name: getattr(machine, name) for name in MARKET_FIELDS})
    return {price.market: price.price_per_gpu_hour for price in prices}


def _offered(machine: Any, market: str) -> bool:
    return market in _markets(machine)


def _price(machine: Any, market: str) -> Decimal:
    return _markets(machine)[market]


def markets_of(machine: Any) -> list[tuple[str, Decimal]]:
    """(market, price per GPU-hour) of each market `machine` (a Machine or a MachineOffer) is offered in."""
    return [(each.market, each.price_of(machine)) for each in market_prices() if each.offered(machine)]


def priced(fields: Mapping[str, Any], choice: str) -> markets.MarketPrice:
    """The market a machine with these `MARKET_FIELDS` values is priced in under the market `choice`,
    with its price (`sizing.markets.priced_in`, the rule single rows are priced by)."""
    return markets.priced_in(markets.market_prices(**fields), choice)

