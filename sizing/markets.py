"""The markets a machine is offered in, and what each one's price means, written once.

A provider may offer the same machine in up to three markets (SPEC §4, issue 44):

- ``on_demand``: today's price, paid by the hour while the machine runs; nobody takes it back.
- ``interruptible``: a lower price (a spot price, or the floor of a bid, as Vast's ``min_bid``) for a
  machine the provider may take back, after the notice it gives (seconds; 0 = none) and as often as
  it says. A Launch in it may bid: the machine runs while the bid is at least that floor, so a bid
  above it keeps the machine when the floor rises (`bid_ceiling` bounds it).
- ``reserved``: a prepaid or committed price per GPU-hour for a term (days).

The catalog keeps the listed price (``price_per_gpu_hour``) and whether the listing is itself
interruptible (``interruptible``, the flag machines had before markets). A machine listed
interruptible has no on-demand price: its listed price *is* its interruptible price, and the
catalog keeps the two equal (`interruptible_price`). The names are those the price history uses.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from .i18n import format_number, gettext, gettext_noop, ngettext
from .offers import MachineOffer

ON_DEMAND = "on_demand"
INTERRUPTIBLE = "interruptible"
RESERVED = "reserved"
MARKETS: tuple[str, ...] = (ON_DEMAND, INTERRUPTIBLE, RESERVED)

# The wizard's `market` preference (issue 44): which markets a row's price may come from. On demand only
# (the default) prices every machine at its listed price, as before markets were a choice (a machine
# listed interruptible is offered there alone); interruptible allowed prices a machine at the cheaper of
# its listed and interruptible prices; any lets a reserved price in too.
ANY_MARKET = "any"
MARKET_CHOICES: tuple[str, ...] = (ON_DEMAND, INTERRUPTIBLE, ANY_MARKET)
DEFAULT_MARKET = ON_DEMAND
_ALLOWED_BESIDES_LISTED = {
    ON_DEMAND: (), INTERRUPTIBLE: (INTERRUPTIBLE,), ANY_MARKET: (INTERRUPTIBLE, RESERVED),
}


def wider_choices(choice: str) -> tuple[str, ...]:
    """The market choices that let in more prices than `choice`, narrowest first (`MARKET_CHOICES` is
    in that order): each prices the same machines, some of them cheaper."""
    return MARKET_CHOICES[MARKET_CHOICES.index(choice) + 1:]


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


def bid_ceiling(prices: tuple[MarketPrice, ...]) -> Decimal | None:
    """The most a bid on a machine's interruptible market may be (`market_prices`): its on-demand price
    where it has one, since a higher bid would pay more than the machine costs where nobody takes it
    back; None for a machine offered interruptible only, whose bids `limits.MAX_BID_PER_GPU_HOUR`
    alone bounds."""
    return next((price.price_per_gpu_hour for price in prices if price.market == ON_DEMAND), None)


def priced_in(prices: tuple[MarketPrice, ...], choice: str) -> MarketPrice:
    """The market a machine is priced in under the user's market `choice`, of its `prices` (`market_prices`,
    whose first is always the listed price's): the listed price's, or a cheaper one of the markets the
    choice lets in; on a tie the listed price's (then `MARKETS`' order)."""
    allowed = _ALLOWED_BESIDES_LISTED[choice]
    best = prices[0]
    for price in prices[1:]:
        if price.market in allowed and price.price_per_gpu_hour < best.price_per_gpu_hour:
            best = price
    return best


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


# --- A machine's markets as a row shows them ------------------------------------------------------

# The market names in words, read where shown (`gettext_noop`: translated at display).
MARKET_WORDS = {
    ON_DEMAND: gettext_noop("on demand"),
    INTERRUPTIBLE: gettext_noop("interruptible"),
    RESERVED: gettext_noop("reserved"),
}
STOCK_WORDS = {
    "high": gettext_noop("high"),
    "medium": gettext_noop("medium"),
    "low": gettext_noop("low"),
    "in_stock": gettext_noop("in stock"),
    "out": gettext_noop("out of stock"),
}


def offer_markets(offer: MachineOffer) -> tuple[MarketPrice, ...]:
    """The markets a machine on offer is offered in (`market_prices` of its fields)."""
    return market_prices(
        price_per_gpu_hour=offer.price_per_gpu_hour,
        interruptible=offer.interruptible,
        interruptible_price_per_gpu_hour=offer.interruptible_price_per_gpu_hour,
        interruption_notice_seconds=offer.interruption_notice_seconds,
        interruption_frequency=offer.interruption_frequency,
        reserved_price_per_gpu_hour=offer.reserved_price_per_gpu_hour,
        reserved_term_days=offer.reserved_term_days,
    )


def offer_price(offer: MachineOffer, choice: str) -> tuple[str, Decimal]:
    """(market, price per GPU-hour) a machine on offer is priced at under the market `choice`
    (`priced_in`); on demand only reads the listed price alone, as every answer did before."""
    if choice == DEFAULT_MARKET:
        return (INTERRUPTIBLE if offer.interruptible else ON_DEMAND), offer.price_per_gpu_hour
    chosen = priced_in(offer_markets(offer), choice)
    return chosen.market, chosen.price_per_gpu_hour


def market_name(market: str) -> str:
    return gettext(MARKET_WORDS[market])


def terms_text(price: MarketPrice) -> str:
    """A market's terms in words: the notice and frequency of an interruptible offer (what the provider
    says of them, "not said" where it says nothing), the term of a reserved one; "" on demand."""
    if price.market == INTERRUPTIBLE:
        if price.notice_seconds is None:
            notice = gettext("notice before it is taken back: not said by the provider")
        elif price.notice_seconds == 0:
            notice = gettext("taken back without notice")
        else:
            notice = ngettext(
                "taken back with %(seconds)s second's notice", "taken back with %(seconds)s seconds' notice",
                price.notice_seconds,
            ) % {"seconds": format_number(price.notice_seconds)}
        if price.frequency:
            notice += "; " + gettext("how often, as the provider says: %(frequency)s") % {
                "frequency": price.frequency
            }
        return notice
    if price.market == RESERVED and price.term_days is not None:
        return ngettext(
            "paid for a term of %(days)s day", "paid for a term of %(days)s days", price.term_days
        ) % {"days": format_number(price.term_days)}
    return ""


def reliability_text(reliability: Decimal | None, measures: str) -> str:
    """The reliability as a row shows it: the figure as a percentage with what it measures, or "not
    reported" (never estimated)."""
    if reliability is None:
        return gettext("reliability not reported")
    return gettext("reliability %(percent)s (%(measures)s)") % {
        "percent": reliability_percent(reliability), "measures": measures
    }


def reliability_percent(reliability: Decimal) -> str:
    """A reliability (four places from 0 to 1) as the exact percentage: 0.9981 is "99.81 %"."""
    value = reliability * 100
    shown: Decimal | int = int(value) if value == value.to_integral_value() else value.normalize()
    return f"{format_number(shown, grouping=False)} %"


def stock_text(stock: str) -> str:
    if not stock:
        return gettext("stock not reported")
    return gettext("stock: %(level)s") % {"level": gettext(STOCK_WORDS[stock])}
