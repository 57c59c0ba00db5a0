"""The markets a machine is offered in, and its price per GPU-hour in each.

The one place that derives them from a machine's fields (`market_prices`): the price history keys its
rows by market, and whoever gives a machine several markets (on-demand, interruptible, reserved prices
on one offer) changes this function and nothing else there.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _


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
    """Today a machine has one price and a yes/no "interruptible": an interruptible machine is
    offered in the interruptible market at its price, any other on demand at its price. No machine is
    in the reserved market yet."""
    return (
        MarketPrice(Market.ON_DEMAND, Q(interruptible=False), F("price_per_gpu_hour"),
                    lambda machine: not machine.interruptible, lambda machine: machine.price_per_gpu_hour),
        MarketPrice(Market.INTERRUPTIBLE, Q(interruptible=True), F("price_per_gpu_hour"),
                    lambda machine: bool(machine.interruptible), lambda machine: machine.price_per_gpu_hour),
    )


def markets_of(machine: Any) -> list[tuple[str, Decimal]]:
    """(market, price per GPU-hour) of each market `machine` (a Machine or a MachineOffer) is offered in."""
    return [(each.market, each.price_of(machine)) for each in market_prices() if each.offered(machine)]
