"""The markets a machine is offered in, and what each one's price means, written once.

A provider may offer the same machine in up to three markets (SPEC §4, issue 44):

- ``on_demand``: today's price, paid by the hour while the machine runs; nobody takes it back.
- ``interruptible``: a lower price (a spot price, or the floor of a bid, as Vast's ``min_bid``) for a
  machine the provider may take back, after the notice it gives (seconds; 0 = none) and as often as
  it says.
- ``reserved``: a prepaid or committed price per GPU-hour for a term (days).

The catalog keeps the listed price (``price_per_gpu_hour``) and whether the listing is itself
interruptible (``interruptible``, the flag machines had before markets). A machine listed
interruptible has no on-demand price: its listed price *is* its interruptible price, and the
catalog keeps the two equal (`interruptible_price`). The names are those the price history uses.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

ON_DEMAND = "on_demand"
INTERRUPTIBLE = "interruptible"
RESERVED = "reserved"
MARKETS: tuple[str, ...] = (ON_DEMAND, INTERRUPTIBLE, RESERVED)

# Stock levels a feed may report (`catalog.models.Machine.stock`); "" = the feed does not say.
STOCK_LEVELS: tuple[str, ...] = ("high", "medium", "low", "in_stock", "out")


@dataclass(frozen=True)
class MarketPrice:
    """One market a machine is offered in, with its price per GPU-hour (USD) and terms."""

    market: str
    price_per_gpu_hour: Decimal
    # Interruptible: the notice before the machine is taken back (None: the provider does not say)
    # and how often it is, in the provider's words ("" = not said).
    notice_seconds: int | None = None
    frequency: str = ""
    # Reserved: the term the price is paid for, in days.
    term_days: int | None = None


def price_text(price: Decimal) -> str:
    """A price per GPU-hour as a console shows it: to the cent, with more places only where it has them
    (2.49, 0.4006)."""
    cents = price.quantize(Decimal("0.01"))
    return f"{cents:f}" if cents == price else f"{price.normalize():f}"


def interruptible_price(
    listed_price: Decimal, listed_interruptible: bool, interruptible_price_per_gpu_hour: Decimal | None
) -> Decimal | None:
    """The machine's interruptible price: a listing that is interruptible is offered there at its
    listed price; any other at the interruptible price given (None: not offered interruptible)."""
    return listed_price if listed_interruptible else interruptible_price_per_gpu_hour


def market_prices(
    *,
    price_per_gpu_hour: Decimal,
    interruptible: bool,
    interruptible_price_per_gpu_hour: Decimal | None = None,
    interruption_notice_seconds: int | None = None,
    interruption_frequency: str = "",
    reserved_price_per_gpu_hour: Decimal | None = None,
    reserved_term_days: int | None = None,
) -> tuple[MarketPrice, ...]:
    """The markets a machine is offered in, in `MARKETS`' order."""
    found = []
    if not interruptible:
        found.append(MarketPrice(ON_DEMAND, price_per_gpu_hour))
    spot = interruptible_price(price_per_gpu_hour, interruptible, interruptible_price_per_gpu_hour)
    if spot is not None:
        found.append(MarketPrice(INTERRUPTIBLE, spot, interruption_notice_seconds, interruption_frequency))
    if reserved_price_per_gpu_hour is not None and reserved_term_days is not None:
        found.append(MarketPrice(RESERVED, reserved_price_per_gpu_hour, term_days=reserved_term_days))
    return tuple(found)


def market_problems(
    *,
    price_per_gpu_hour: Decimal | None,
    interruptible: bool,
    interruptible_price_per_gpu_hour: Decimal | None,
    interruption_notice_seconds: int | None,
    interruption_frequency: str,
    reserved_price_per_gpu_hour: Decimal | None,
    reserved_term_days: int | None,
) -> dict[str, str]:
    """What is wrong with a machine's market terms, by the field to show it beside ({} when right).
    The admin and the feeds say it in these words; the table's checks hold the same rules."""
    problems: dict[str, str] = {}
    offered_interruptible = interruptible or interruptible_price_per_gpu_hour is not None
    if (
        interruptible
        and interruptible_price_per_gpu_hour is not None
        and price_per_gpu_hour is not None
        and interruptible_price_per_gpu_hour != price_per_gpu_hour
    ):
        problems["interruptible_price_per_gpu_hour"] = (
            f"This machine is listed interruptible, so its interruptible price is its price per GPU-hour "
            f"({price_text(price_per_gpu_hour)}); leave this empty or give the same figure."
        )
    if not offered_interruptible and (interruption_notice_seconds is not None or interruption_frequency):
        given = interruption_notice_seconds is not None
        problems["interruption_notice_seconds" if given else "interruption_frequency"] = (
            "Interruption terms need an interruptible price (or an interruptible listing); "
            "give the price or clear the terms."
        )
    if (reserved_price_per_gpu_hour is None) != (reserved_term_days is None):
        if reserved_price_per_gpu_hour is None:
            problems["reserved_price_per_gpu_hour"] = "A reserved term needs its reserved price per GPU-hour."
        else:
            problems["reserved_term_days"] = "A reserved price needs its term in days (e.g. 30)."
    return problems


def reliability_problem(reliability: Decimal | None, measures: str) -> str:
    """Why a reliability figure and its description disagree ("" when they agree): a figure is kept
    only with what it measures, as the feed defines it."""
    if reliability is not None and not measures.strip():
        return "Say what the reliability figure measures (e.g. “Vast.ai reliability2 of the host”)."
    if reliability is None and measures.strip():
        return "What the reliability measures is given but no reliability figure; give it or clear this."
    return ""
