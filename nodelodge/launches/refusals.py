"""Why a Launch does not book, in words: the refusals, and the checks that raise them.

Every machine of a Launch, whether it books one machine alone, a cluster or a throughput plan, is
checked by the same rules (`refuse_unbookable`: offered, online, fresh, in the countries asked, the
GPUs free), then by its kind's (`refuse_machines`): one alone must still fit the workload on the GPUs
shown, a cluster's machines must be whole, identical and fit for a cluster, a plan's must each fit
the workload in copies of the GPUs asked. Last, the price per hour must be the one shown.
A machine alone is refused with LaunchRefused; a group's refusals (GroupRefused) also name the
machine that failed.
"""
from __future__ import annotations

from decimal import Decimal
from typing import cast

from django.conf import settings
from django.http import QueryDict
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext, ngettext

from catalog import rows as catalog_rows
from catalog.models import Machine
from nodelodge.recommendations.estimate import estimate_for
from nodelodge.recommendations.fleet import stale_cutoff
from nodelodge.recommendations.query import QueryError, WorkloadQuery
from nodelodge.recommendations.query import parse_query as parse_workload_query
from sizing import reasons
from sizing.availability import GONE, unavailable_reason
from sizing.cluster_sites import can_join_cluster
from sizing.fit import fit_on_machine
from sizing.markets import INTERRUPTIBLE, MarketPrice, bid_ceiling, market_name, priced_in
from sizing.results import RecommendedMachine
from sizing.units import money_amount, money_text

from .holding import gpus_held
from .models import ALONE, LaunchGroup


class LaunchRefused(Exception):
    """Launch did not book. `code` says why (one of the constants below), `message` in words.

    `result_url` leads back to the result (recomputed when opened); `alternative` is the next-cheapest
    machine that fits the same workload, when the refusal is about this machine and there is one.
    """

    INVALID_QUERY = "invalid_query"
    GONE = "gone"
    OFFLINE = "offline"
    STALE = "stale"
    OUTSIDE_COUNTRIES = "outside_countries"
    TAKEN = "taken"
    NO_LONGER_FITS = "no_longer_fits"
    PRICE_CHANGED = "price_changed"
    MARKET_CHANGED = "market_changed"

    def __init__(
        self,
        code: str,
        message: str,
        *,
        result_url: str = "/",
        alternative: RecommendedMachine | None = None,
        new_price_per_hour: Decimal | None = None,
    ):
        super().__init__(message)
        self.code = code
        self.message = message
        self.result_url = result_url
        self.alternative = alternative
        self.new_price_per_hour = new_price_per_hour


class GroupRefused(LaunchRefused):
    """The group was not booked, none of it. `machine` names the machine that failed (its provider
    and the provider's machine id) and `machine_id` is its id; both None when the refusal is about
    the group as a whole (its inputs, its total price)."""

    NOT_WHOLE = "not_whole"
    NOT_IDENTICAL = "not_identical"
    NOT_CLUSTERABLE = "not_clusterable"
    UNAVAILABLE = "unavailable"

    def __init__(self, code: str, message: str, *, machine: str | None = None,
                 machine_id: int | None = None, provider_machine_id: str | None = None, **extra):
        super().__init__(code, message, **extra)
        self.machine = machine
        self.machine_id = machine_id
        self.provider_machine_id = provider_machine_id


class GroupInputError(ValueError):
    """The group asked for cannot be read (bad input, not a refusal): `errors` by field, in words."""

    def __init__(self, errors: dict[str, str]):
        super().__init__(errors)
        self.errors = errors


# The field of an interruptible Launch's bid, USD per GPU-hour (the form's, the API's, the errors').
BID_FIELD = "bid_per_gpu_hour"


class BidRefused(GroupInputError):
    """The bid cannot book this machine as asked (a conflict, said beside the bid's field): below its
    floor or above its on-demand price now, or a bid on a market that takes none. Nothing was booked."""


def machine_name(machine: Machine) -> str:
    return f"{machine.provider.name} {machine.provider_machine_id}"


def refuser(kind: str, result_url: str, machine: Machine | None = None, machine_id: int | None = None):
    """What raises a refusal for this Launch: LaunchRefused for a machine alone; for a group, a
    GroupRefused naming `machine` (or the group as a whole when there is none)."""
    def refuse(code: str, message: str, **extra) -> LaunchRefused:
        if kind == ALONE:
            return LaunchRefused(code, message, result_url=result_url, **extra)
        return GroupRefused(
            code, message, machine=machine_name(machine) if machine is not None else None,
            machine_id=machine_id, result_url=result_url,
            provider_machine_id=machine.provider_machine_id if machine is not None else None, **extra,
        )
    return refuse


# --- The result a Launch was made from -------------------------------------------------------------


def result_url_for(query: WorkloadQuery) -> str:
    """The result's address in the language of the page that asks."""
    return f"{reverse('wizard:start')}?{query.as_query_string()}"


def stored_result_url(query: WorkloadQuery) -> str:
    """The result's address as a booking keeps it: the default language's; My launches shows it in
    the language of the page that lists it."""
    with translation.override(settings.LANGUAGE_CODE):
        return result_url_for(query)


def parse_query(query_string: str) -> WorkloadQuery:
    """The wizard's query from a result's query string, validated as the wizard validates it."""
    try:
        return parse_workload_query(QueryDict(query_string or ""))
    except QueryError as error:
        problems = "; ".join(
            f"{name}: {message}" if name != "__all__" else message for name, message in error.errors.items()
        )
        raise LaunchRefused(
            LaunchRefused.INVALID_QUERY,
            gettext(
                "The inputs of this result are not valid any more (%(problems)s). "
                "Start again from the wizard."
            )
            % {"problems": problems},
        ) from error


def estimate_or_refuse(query: WorkloadQuery, result_url: str):
    """The workload's breakdown and model row, or LaunchRefused when the result cannot be computed any
    more (a model or GPU type since removed, figures that no longer go together)."""
    try:
        return estimate_for(query)
    except QueryError as error:
        raise LaunchRefused(
            LaunchRefused.INVALID_QUERY,
            gettext("This result cannot be computed any more: %(problems)s. Start again from the wizard.")
            % {"problems": "; ".join(error.errors.values())},
            result_url=result_url,
        ) from error


# --- Each machine: what every Launch checks --------------------------------------------------------


def refuse_unbookable(machine, gpus, query, result_url, now):
    """Raises LaunchRefused when `machine` (read with its provider and GPU type, or None) cannot be
    booked now for `gpus` GPUs whatever the workload: gone, offline, stale, outside the query's
    countries or without the free GPUs. Otherwise returns its offer and why it is unavailable (None,
    or a reason fit_on_machine settles)."""
    refuse = refuser(ALONE, result_url)
    if machine is None:
        raise refuse(LaunchRefused.GONE, gettext("This machine is no longer offered by its provider."))
    name = machine_name(machine)
    offer = catalog_rows.machine_offer(machine)
    # The availability rule the answer applied, applied again (under the lock when booking).
    reason = unavailable_reason(offer, stale_cutoff=stale_cutoff(now), countries=query.countries)
    if reason == GONE:
        raise refuse(LaunchRefused.GONE, gettext("This machine is no longer offered by its provider."))
    if reason == reasons.OFFLINE:
        raise refuse(
            LaunchRefused.OFFLINE,
            gettext("%(machine)s went offline or out of stock since the result was shown.")
            % {"machine": name},
        )
    if reason == reasons.STALE:
        minutes = settings.MACHINE_STALE_AFTER_SECONDS // 60
        raise refuse(
            LaunchRefused.STALE,
            ngettext(
                "%(machine)s has not been heard from for over %(minutes)s minute, "
                "so it no longer counts as available.",
                "%(machine)s has not been heard from for over %(minutes)s minutes, "
                "so it no longer counts as available.",
                minutes,
            ) % {"machine": name, "minutes": minutes},
        )
    if reason == reasons.OUTSIDE_COUNTRIES:
        if query.countries is not None:
            message = gettext("%(machine)s is outside the countries you chose.")
        else:
            message = gettext("%(machine)s is of unknown location.")
        raise refuse(LaunchRefused.OUTSIDE_COUNTRIES, message % {"machine": name})
    if reason in (reasons.NO_FREE_GPUS, None) and machine.free_gpus < gpus:
        raise _too_few_free(machine, gpus, refuse)
    return offer, reason


def _too_few_free(machine, gpus, refuse) -> LaunchRefused:
    """Worded by its cause: where the GPUs the running bookings hold would make room for those asked,
    a booking took them ("someone else booked first"); where even they would not, the provider's feed
    reports fewer free GPUs. A machine read under its lock counts them afresh."""
    name = machine_name(machine)
    held = getattr(machine, "held_by_bookings", None)
    if held is None:
        held = gpus_held(Machine.objects.filter(pk=machine.pk)).get(machine.pk, 0)
    if machine.free_gpus + held < gpus:
        return refuse(
            LaunchRefused.TAKEN,
            ngettext(
                "%(machine)s no longer has %(gpus)s free GPU (%(free)s free now): "
                "its provider's feed reports fewer free GPUs since the result.",
                "%(machine)s no longer has %(gpus)s free GPUs (%(free)s free now): "
                "its provider's feed reports fewer free GPUs since the result.",
                gpus,
            ) % {"machine": name, "gpus": gpus, "free": machine.free_gpus},
        )
    return refuse(
        LaunchRefused.TAKEN,
        ngettext(
            "%(machine)s no longer has %(gpus)s free GPU (%(free)s free now): "
            "someone else booked first.",
            "%(machine)s no longer has %(gpus)s free GPUs (%(free)s free now): "
            "someone else booked first.",
            gpus,
        ) % {"machine": name, "gpus": gpus, "free": machine.free_gpus},
    )


def taken_meanwhile(machine, gpus, refuse) -> LaunchRefused:
    """The last word under the lock: the GPUs went below those asked after all."""
    return refuse(
        LaunchRefused.TAKEN,
        gettext("%(machine)s no longer has %(gpus)s free GPUs: someone else booked first.")
        % {"machine": machine_name(machine), "gpus": gpus},
    )


def _refuse_in_group(machine, machine_id, gpus, query, result_url, now, refuse):
    """`refuse_unbookable` for a machine of a group: the same refusal, naming the machine."""
    try:
        return refuse_unbookable(machine, gpus, query, result_url, now)
    except LaunchRefused as refusal:
        message = refusal.message
        if refusal.code == LaunchRefused.GONE:
            if machine is not None:
                message = gettext("%(machine)s is no longer offered by its provider.") % {
                    "machine": machine_name(machine)
                }
            else:
                message = gettext("Machine %(id)s is no longer offered.") % {"id": machine_id}
        raise refuse(refusal.code, message) from None


# --- Each machine: what its kind checks -------------------------------------------------------------


def _refuse_alone_misfit(machine, gpus, offer, reason, breakdown, refuse) -> None:
    fit = fit_on_machine(breakdown, offer) if reason is None else None
    if fit is not None and fit.gpus_used == gpus:
        return
    if fit is None:
        why = gettext("it does not fit on this machine's free GPUs any more")
    else:
        why = ngettext(
            "it now takes %(used)s GPU, not %(gpus)s", "it now takes %(used)s GPUs, not %(gpus)s",
            fit.gpus_used,
        ) % {"used": fit.gpus_used, "gpus": gpus}
    raise refuse(
        LaunchRefused.NO_LONGER_FITS,
        gettext(
            "The machine's figures changed and your workload no longer fits %(machine)s "
            "as shown: %(why)s."
        )
        % {"machine": machine_name(machine), "why": why},
    )


def _refuse_plan_misfit(machine, gpus, offer, reason, breakdown, refuse) -> None:
    fit = fit_on_machine(breakdown, offer) if reason is None else None
    if fit is None or gpus % fit.gpus_used:
        raise refuse(
            LaunchRefused.NO_LONGER_FITS,
            gettext("The machine's figures changed and your workload no longer fits %(machine)s "
                    "as the plan shows.") % {"machine": machine_name(machine)},
        )


def _refuse_cluster_member(machine, gpus, reason, first, refuse) -> Machine:
    """A cluster takes each machine whole, identical to the first (by id) and fit for a cluster
    (`sizing.cluster_sites`), whatever the client sent. Returns the cluster's first machine."""
    name = machine_name(machine)
    if reason is not None:
        raise refuse(
            GroupRefused.UNAVAILABLE,
            gettext("%(machine)s is not available now (%(reason)s).") % {"machine": name, "reason": reason},
        )
    if not can_join_cluster(tier=machine.tier, site=machine.site, interconnect=machine.interconnect,
                            interconnect_gbps=machine.interconnect_gbps):
        raise refuse(
            GroupRefused.NOT_CLUSTERABLE,
            gettext("%(machine)s cannot be part of a cluster: it needs a Secure machine at a named "
                    "site with a fast RDMA interconnect.") % {"machine": name},
        )
    first = first or machine
    if _shape(machine) != _shape(first):
        raise refuse(
            GroupRefused.NOT_IDENTICAL,
            gettext("%(machine)s is not identical to %(first)s (provider, site, GPU type, GPU count "
                    "and memory must all match).")
            % {"machine": name, "first": machine_name(first)},
        )
    if gpus != machine.gpu_count or machine.free_gpus < machine.gpu_count:
        raise refuse(
            GroupRefused.NOT_WHOLE,
            ngettext(
                "%(machine)s is not entirely free: a cluster takes all %(count)s GPU of each "
                "machine (%(free)s free now).",
                "%(machine)s is not entirely free: a cluster takes all %(count)s GPUs of each "
                "machine (%(free)s free now).",
                machine.gpu_count,
            ) % {"machine": name, "count": machine.gpu_count, "free": machine.free_gpus},
        )
    return first


def _shape(machine: Machine) -> tuple:
    return (machine.provider_id, machine.site, machine.gpu_type_id, machine.gpu_count,
            machine.memory_per_gpu_mib)


def _refuse_cluster_that_does_not_hold(query, machine: Machine, count: int, refuse) -> None:
    """A cluster is booked only where its machines serve the workload together, as the planner sized it."""
    from nodelodge.recommendations.clusters import cluster_does_not_hold

    _breakdown, model_row = estimate_for(query)
    why = cluster_does_not_hold(query, model_row, gpu_type=machine.gpu_type.name,
                                gpus_per_machine=machine.gpu_count,
                                # a cluster's members have their memory known (`_refuse_cluster_member`)
                                memory_per_gpu_mib=cast(int, machine.memory_per_gpu_mib), machines=count)
    if why is not None:
        raise refuse(LaunchRefused.NO_LONGER_FITS, why)


def _refuse_price_change(shown_price_per_hour, price_per_hour, refuse) -> None:
    """The page shows and sends the exact price; any difference is a price change."""
    shown = money_amount(shown_price_per_hour)
    if money_amount(price_per_hour) != shown:
        raise refuse(
            LaunchRefused.PRICE_CHANGED,
            gettext("The price changed from %(shown)s/h to %(now)s/h; check and launch again.")
            % {"shown": money_text(shown), "now": money_text(price_per_hour)},
            new_price_per_hour=price_per_hour,
        )


def booked_market(machine: Machine, query: WorkloadQuery) -> MarketPrice:
    """The market a Launch of `machine` books, with its price: the one the answer priced it in under the
    query's market preference (`sizing.markets.priced_in`: the listed price's by default), whether it is
    booked alone, in a cluster or in a plan, as each of those answers prices its machines."""
    return priced_in(machine.market_prices(), query.market)


def refuse_market_change(shown_market: str, machine: Machine, refuse, query: WorkloadQuery,
                         kind: str = ALONE) -> None:
    """Launch books the market its review named: a machine now priced in another under the query's
    market preference (on demand become interruptible, an interruptible price gone or now dearer than
    the listed one, or back) is refused, whatever its price; a group's refusal names the machine."""
    market = booked_market(machine, query).market
    if market == shown_market:
        return
    words = {"now": market_name(market), "shown": market_name(shown_market)}
    if kind == ALONE:
        message = gettext("This machine is now offered %(now)s, not %(shown)s as the review showed; check "
                          "and launch again.") % words
    else:
        message = gettext("%(machine)s is now offered %(now)s, not %(shown)s as the review showed; nothing "
                          "was booked: check and launch again.") % {**words, "machine": machine_name(machine)}
    raise refuse(LaunchRefused.MARKET_CHANGED, message)


def refuse_bid_market(market: str) -> None:
    """A bid is for the interruptible market alone: one on a Launch in another is a conflict."""
    if market != INTERRUPTIBLE:
        raise BidRefused({BID_FIELD: gettext(
            "Only an interruptible machine takes a bid; this one is booked %(market)s, at its price. "
            "Leave the bid out."
        ) % {"market": market_name(market)}})


def refuse_bid(bid: Decimal, machine: Machine, query: WorkloadQuery) -> None:
    """The bid against `machine` now (read under its lock): its market must be interruptible, the bid at
    least the floor (the interruptible price: below it the machine would not run) and at most its
    on-demand price where it has one (`sizing.markets.bid_ceiling`)."""
    booked = booked_market(machine, query)
    refuse_bid_market(booked.market)
    if bid < booked.price_per_gpu_hour:
        raise BidRefused({BID_FIELD: gettext("Bid at least %(floor)s per GPU-hour, this machine's floor.")
                          % {"floor": money_text(booked.price_per_gpu_hour)}})
    ceiling = bid_ceiling(machine.market_prices())
    if ceiling is not None and bid > ceiling:
        raise BidRefused({BID_FIELD: gettext(
            "Bid at most %(ceiling)s per GPU-hour, this machine's on-demand price, at which nobody takes "
            "it back."
        ) % {"ceiling": money_text(ceiling)}})


def refuse_machines(kind, pairs, machines: dict[int, Machine], shown_price_per_hour, query, breakdown,
                    result_url, now) -> Decimal:
    """Raises the refusal for the first machine (by id) that cannot be booked as `kind` asks now, or
    for the total price when it changed; returns the total price per hour otherwise. `pairs` are
    (machine id, GPUs), sorted by id; `machines` those found, by id. `shown_price_per_hour` None: the
    price is a bid, checked against the floor instead (`refuse_bid`)."""
    total = Decimal(0)
    first = None
    for machine_id, gpus in pairs:
        machine = machines.get(machine_id)
        refuse = refuser(kind, result_url, machine, machine_id)
        if kind == ALONE:
            offer, reason = refuse_unbookable(machine, gpus, query, result_url, now)
            _refuse_alone_misfit(machine, gpus, offer, reason, breakdown, refuse)
        else:
            offer, reason = _refuse_in_group(machine, machine_id, gpus, query, result_url, now, refuse)
            if kind == LaunchGroup.Kind.CLUSTER:
                first = _refuse_cluster_member(machine, gpus, reason, first, refuse)
            else:
                _refuse_plan_misfit(machine, gpus, offer, reason, breakdown, refuse)
        # a missing machine was refused above
        total += booked_market(cast(Machine, machine), query).price_per_gpu_hour * gpus
    refuse_whole = refuser(kind, result_url)
    if kind == LaunchGroup.Kind.CLUSTER:
        # a cluster's first machine was kept by `_refuse_cluster_member` (pairs are never empty)
        _refuse_cluster_that_does_not_hold(query, cast(Machine, first), len(pairs), refuse_whole)
    if shown_price_per_hour is not None:
        _refuse_price_change(shown_price_per_hour, total, refuse_whole)
    return total
