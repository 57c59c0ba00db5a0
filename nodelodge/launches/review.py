"""The review step before Launch books: what Confirm will book, from the machines' figures now."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext

from catalog import rows as catalog_rows
from catalog.models import Machine
from nodelodge.recommendations.clusters import cluster_interruption_note
from nodelodge.recommendations.fleet import preferences_for, stale_cutoff
from nodelodge.recommendations.throughput import plan_interruption_note, tokens_per_second_text
from sizing.availability import unavailable_reason
from sizing.fit import fit_on_machine
from sizing.markets import (
    INTERRUPTIBLE,
    MarketPrice,
    bid_ceiling,
    market_name,
    reliability_text,
    stock_text,
    terms_text,
)
from sizing.units import money_amount
from sizing.wording import budget_cover, constraints_applied

from .booking import check_request, machines_by_id
from .models import ALONE, LaunchGroup
from .refusals import (
    LaunchRefused,
    booked_market,
    estimate_or_refuse,
    parse_query,
    refuse_machines,
    result_url_for,
)


@dataclass(frozen=True)
class Review:
    """What Confirm will book: each machine with its GPUs, the price per hour now, what the budget
    covers and the workload it was sized for; `problem` says why Confirm would be refused now."""

    kind: str
    machines: list[tuple[Machine | None, int, int]]  # (machine or None when unknown, its id, GPUs)
    price_per_hour: Decimal  # the machines found, now
    shown_price_per_hour: Decimal
    budget_text: str | None
    workload_title: str
    result_url: str
    problem: str | None  # why Confirm would be refused now, in words; None when it can book
    hours_covered: Decimal | None = None
    # The constraints the result applied, in words (not the workload's own line, which
    # `workload_title` says); for a machine alone.
    workload: tuple[tuple[str, str], ...] = ()
    target_text: str | None = None  # a throughput plan's target, in words ("9,000 tokens/s")
    # A machine alone: the market Confirm books (its listed price's) with its terms, and the reliability
    # and stock its provider reports ("not reported" where it does not), in words.
    market: str | None = None  # its code (`sizing.markets`), which Confirm sends back
    market_text: str | None = None
    reliability_text: str | None = None
    stock_text: str | None = None
    price_per_gpu_hour: Decimal | None = None  # in the market Confirm books
    # Booked interruptible: the least bid that runs the machine (its floor, the interruptible price, the
    # bid's default) and the most it may be (its on-demand price; None where it has none).
    bid_floor: Decimal | None = None
    bid_ceiling: Decimal | None = None
    # Whether what the budget covers is worked out at the bid typed (above the floor), as Confirm books
    # it; otherwise at the price per hour above, the floor where a bid is offered.
    budget_at_bid: bool = False
    # The market each machine found is booked in, with its price (`booked_market`), by machine id.
    booked: dict[int, MarketPrice] = field(default_factory=dict)

    @property
    def rows(self) -> list[tuple[Machine | None, int, int, MarketPrice | None, str]]:
        """Each machine as a group's review lists it: (machine or None, its id, GPUs, the market booked
        with its price, that market with its terms in words)."""
        found = []
        for machine, machine_id, gpus in self.machines:
            booked = self.booked.get(machine_id)
            found.append((machine, machine_id, gpus, booked, market_words(booked) if booked else ""))
        return found

    @property
    def booked_alone(self) -> MarketPrice | None:
        """The market and price a machine alone is booked at (a group's first; None when not found)."""
        return self.booked.get(self.machines[0][1])

    @property
    def markets_value(self) -> str:
        """The markets Confirm books, as a group's form sends them ("12:interruptible,13:on_demand")."""
        return ",".join(f"{machine_id}:{booked.market}" for machine_id, booked in sorted(self.booked.items()))

    @property
    def interruption_note(self) -> str | None:
        """A group's: what happens when one of its interruptible machines is taken back (None: none is)."""
        interruptible = sum(booked.market == INTERRUPTIBLE for booked in self.booked.values())
        if self.kind == LaunchGroup.Kind.CLUSTER:
            return cluster_interruption_note(interruptible, len(self.machines))
        if self.kind == LaunchGroup.Kind.PLAN:
            return plan_interruption_note(interruptible, len(self.machines))
        return None

    @property
    def machine(self) -> Machine | None:
        """The machine of a Launch alone (a group's first)."""
        return self.machines[0][0]

    @property
    def gpus(self) -> int:
        return sum(gpus for _machine, _id, gpus in self.machines)

    @property
    def price_changed(self) -> bool:
        return money_amount(self.price_per_hour) != money_amount(self.shown_price_per_hour)


def review(kind: str, machines, shown_price_per_hour: Decimal, query_string: str,
           *, now: datetime | None = None, bid: Decimal | None = None) -> Review:
    """The review of `machines` ((machine id, GPUs) pairs) booked as `kind`. Raises GroupInputError for
    unreadable input, and LaunchRefused when the result cannot be read (or a machine alone is gone).
    `bid`: the bid per GPU-hour Confirm came back with, for a machine alone booked interruptible; above
    the floor, the budget's cover is worked out at it, as the booking stores its hours."""
    pairs = check_request(kind, machines)
    query = parse_query(query_string)
    result_url = result_url_for(query)
    breakdown, _model_row = estimate_or_refuse(query, result_url)
    found = machines_by_id([machine_id for machine_id, _gpus in pairs], lock=False)
    now = now or timezone.now()
    if kind == ALONE:
        problem = _problem_alone(found.get(pairs[0][0]), pairs[0][1], query, breakdown, result_url, now)
    else:
        problem = None
        try:
            refuse_machines(kind, pairs, found, shown_price_per_hour, query, breakdown, result_url, now)
        except LaunchRefused as refusal:
            problem = refusal.message
    booked = {machine_id: booked_market(found[machine_id], query) for machine_id, _gpus in pairs
              if machine_id in found}
    price = sum((booked[i].price_per_gpu_hour * gpus for i, gpus in pairs if i in booked), Decimal(0))
    limits = [limit for i, _g in pairs if i in found and (limit := found[i].booking_limit_hours)]
    alone = booked.get(pairs[0][0]) if kind == ALONE else None
    at_bid = (bid is not None and alone is not None and alone.market == INTERRUPTIBLE
              and bid > alone.price_per_gpu_hour)
    # The hourly price the budget pays: the bid's where Confirm books at it (`booking._book_locked`).
    paid = bid * pairs[0][1] if at_bid and bid is not None else price
    cover = None
    if price or kind == ALONE:
        cover = budget_cover(query.budget, paid, min(limits) if limits else None)
    return Review(
        kind=kind,
        machines=[(found.get(machine_id), machine_id, gpus) for machine_id, gpus in pairs],
        price_per_hour=price,
        shown_price_per_hour=shown_price_per_hour,
        budget_text=cover.text if cover else None,
        hours_covered=cover.hours_of_one_booking if cover is not None else None,
        workload_title=breakdown.title,
        workload=_workload_lines(query, breakdown) if kind == ALONE else (),
        result_url=result_url,
        problem=problem,
        target_text=tokens_per_second_text(query.target_tokens) if query.target_tokens else None,
        booked=booked,
        budget_at_bid=at_bid,
        **(_reported(found[pairs[0][0]], booked[pairs[0][0]]) if kind == ALONE and pairs[0][0] in found
           else {}),
    )


def _reported(machine: Machine, booked: MarketPrice) -> dict:
    """The market a Launch of `machine` books (`booked`: its row's under the query's market preference,
    by default the listed price's, on demand, or interruptible for a listing that is), with its price,
    terms and the bounds of a bid there, and the reliability and stock its provider reports, in words."""
    bids = booked.market == INTERRUPTIBLE
    return {
        "market": booked.market,
        "price_per_gpu_hour": booked.price_per_gpu_hour,
        "bid_floor": booked.price_per_gpu_hour if bids else None,
        "bid_ceiling": bid_ceiling(machine.market_prices()) if bids else None,
        "market_text": market_words(booked),
        "reliability_text": reliability_text(machine.reliability, machine.reliability_measures),
        "stock_text": stock_text(machine.stock),
    }


def market_words(booked: MarketPrice) -> str:
    """A market booked in words, with its terms where it has any: "interruptible: taken back with 30
    seconds' notice"."""
    terms = terms_text(booked)
    return f"{market_name(booked.market)}: {terms}" if terms else market_name(booked.market)


def _problem_alone(machine, gpus, query, breakdown, result_url, now) -> str | None:
    """Why Confirm would be refused now for a machine alone, in the review's own words; a machine
    no longer offered is refused at once (LaunchRefused)."""
    if machine is None or machine.gone_at is not None:
        raise LaunchRefused(
            LaunchRefused.GONE, gettext("This machine is no longer offered by its provider."),
            result_url=result_url,
        )
    offer = catalog_rows.machine_offer(machine)
    reason = unavailable_reason(offer, stale_cutoff=stale_cutoff(now), countries=query.countries)
    if reason is not None:
        return gettext(
            "This machine is not available now (%(reason)s); go back to the result for another."
        ) % {"reason": reason}
    fit = fit_on_machine(breakdown, offer)
    if fit is None or fit.gpus_used != gpus:
        return gettext("The machine's figures changed and the workload no longer fits it as shown.")
    return None


def _workload_lines(query, breakdown) -> tuple[tuple[str, str], ...]:
    preferences = preferences_for(query)
    stale_minutes = settings.MACHINE_STALE_AFTER_SECONDS // 60
    applied = constraints_applied(breakdown, preferences, {}, stale_minutes)
    # Which lines describe the workload is read from their English labels, whatever the page's language.
    with translation.override("en"):
        english = constraints_applied(breakdown, preferences, {}, stale_minutes)
    return tuple(
        pair for pair, (label, _value) in zip(applied, english, strict=True)
        if str(label) not in ("Availability", "Not recommended", "Workload")
    )
