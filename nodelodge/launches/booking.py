"""Launch: one machine, a cluster or a throughput plan booked for a user, every machine or none.

A machine booked alone is a group of one (kind ALONE): the same pipeline reads the request, answers
a repeated idempotency key with the first booking, refuses at once on one cheap read what nobody can
book now, and books under the machines' row locks after checking each again (`refusals`). A cluster
or a plan also gets a LaunchGroup row; one machine alone does not.

Everything runs in one transaction with the machines locked in the order of their ids (so two
Launches that share machines queue behind each other instead of deadlocking), and changes free-GPU
counts only with UPDATE ... SET free_gpus = free_gpus - n guarded in the WHERE clause, so whatever
fails in between rolls back whole and the counts stay right. Lock order is always booking, then
machine (a Launch creates its bookings after locking the machines, and no other transaction can hold
a lock on a row that does not exist yet), so Launch and Stop never deadlock.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from catalog.models import Machine
from nodelodge.hardening.deadline import check_deadline
from sizing.limits import MAX_GPUS_PER_MACHINE
from sizing.units import figure_text
from sizing.wording import budget_cover

from .alternatives import next_cheapest
from .holding import with_held_gpus
from .models import ALONE, Booking, LaunchGroup
from .refusals import (
    BID_FIELD,
    GroupInputError,
    LaunchRefused,
    booked_market,
    estimate_or_refuse,
    parse_query,
    refuse_bid,
    refuse_bid_market,
    refuse_machines,
    refuse_market_change,
    refuse_unbookable,
    refuser,
    result_url_for,
    stored_result_url,
    taken_meanwhile,
)

# The most machines one Launch books, in one transaction: more than any cluster, and than a plan for
# any target a single model is served at.
MAX_GROUP_MACHINES = 10_000
KINDS = (ALONE, *LaunchGroup.Kind.values)


@dataclass(frozen=True)
class LaunchOutcome:
    group: LaunchGroup | None  # None for a machine booked alone
    created: bool  # False when the same idempotency key had already booked
    booked: tuple[Booking, ...] = ()  # the bookings, when known without another read

    @property
    def bookings(self) -> list[Booking]:
        if self.booked or self.group is None:
            return list(self.booked)
        return list(self.group.bookings.order_by("machine_id"))

    @property
    def booking(self) -> Booking:
        """The booking of a machine booked alone (a group's first)."""
        return self.bookings[0]


def check_request(kind: str, machines) -> list[tuple[int, int]]:
    """The machines asked for as (machine id, GPUs) pairs sorted by id, or GroupInputError."""
    if kind not in KINDS:
        raise GroupInputError({"kind": gettext("Choose cluster or plan.")})
    try:
        pairs = [(int(machine_id), int(gpus)) for machine_id, gpus in machines]
    except (TypeError, ValueError):
        raise GroupInputError({"machines": gettext("Each machine is its id and its GPUs.")}) from None
    most = 1 if kind == ALONE else MAX_GROUP_MACHINES
    if not 1 <= len(pairs) <= most:
        raise GroupInputError({
            "machines": gettext("A group books from 1 to %(most)s machines.") % {"most": figure_text(most)}
        })
    if len({machine_id for machine_id, _gpus in pairs}) != len(pairs):
        raise GroupInputError({"machines": gettext("Each machine can be in a group once.")})
    if any(machine_id < 1 for machine_id, _gpus in pairs):
        raise GroupInputError({"machines": gettext("Machine ids are whole numbers from 1.")})
    if any(not 1 <= gpus <= MAX_GPUS_PER_MACHINE for _id, gpus in pairs):
        raise GroupInputError({
            "machines": gettext("Each machine takes from 1 to %(most)s GPUs.")
            % {"most": MAX_GPUS_PER_MACHINE}
        })
    return sorted(pairs)


def machines_by_id(machine_ids, *, lock: bool) -> dict[int, Machine]:
    """The machines found, by id, with their provider and GPU type. Unlocked, each carries the GPUs
    its running bookings hold (read in the same statement); locked (ORDER BY id FOR UPDATE: in the
    order of their ids, in every Launch), a refusal counts those afresh, after the wait for the lock."""
    machines = Machine.objects.select_related("provider", "gpu_type").filter(pk__in=machine_ids)
    machines = machines.order_by("pk")
    if lock:
        machines = machines.select_for_update(of=("self",))
    else:
        machines = with_held_gpus(machines)
    return {machine.pk: machine for machine in machines}


def _existing(user, kind: str, idempotency_key: str) -> LaunchOutcome | None:
    """What this key booked already: a machine alone keys its booking, a group its LaunchGroup."""
    if kind == ALONE:
        booking = Booking.objects.filter(user=user, idempotency_key=idempotency_key).first()
        return LaunchOutcome(None, created=False, booked=(booking,)) if booking is not None else None
    group = LaunchGroup.objects.filter(user=user, idempotency_key=idempotency_key).first()
    return LaunchOutcome(group, created=False) if group is not None else None


def launch(
    user,
    *,
    machines,
    shown_price_per_hour: Decimal,
    query_string: str,
    idempotency_key: str,
    kind: str = ALONE,
    now: datetime | None = None,
    market: str | None = None,
    bid_per_gpu_hour: Decimal | None = None,
    markets: dict[int, str] | None = None,
) -> LaunchOutcome:
    """Book `machines` ((machine id, GPUs) pairs: one for a machine alone, every machine of a cluster
    or a plan) for `user`, as the result page offered them, or none.

    Re-checks under the machines' row locks that each is still offered, available, fresh, has the
    GPUs free and still fits the workload as its kind asks, and that the total still costs
    `shown_price_per_hour` (the page's figure, to the cent). Raises GroupInputError for unreadable
    input and LaunchRefused otherwise (a GroupRefused naming the machine, for a group). The same
    (user, idempotency_key) books once: a repeat returns the first booking. `market`: the market the
    review named, for a machine alone; `markets`: those it named for a group's machines, by machine id;
    a machine priced in another market now is refused, and the group with it (None: unchecked). Each
    machine is booked in the market the query's market preference prices it in (`booked_market`).
    `bid_per_gpu_hour`: a machine alone booked interruptible at this bid instead of the price shown;
    BidRefused (a GroupInputError naming the bid) when it is below the floor or above the on-demand
    price under the lock, or the machine is booked in another market.
    """
    pairs = check_request(kind, machines)
    if markets and not set(markets) <= {machine_id for machine_id, _gpus in pairs}:
        raise GroupInputError({"markets": gettext("Name the market of the machines booked only.")})
    bid = bid_per_gpu_hour
    if bid is not None:
        if kind != ALONE:
            raise GroupInputError({BID_FIELD: gettext("A bid is for one machine booked alone.")})
        if market:
            refuse_bid_market(market)  # a bid with another market named: refused before any read
    existing = _existing(user, kind, idempotency_key)
    if existing is not None:
        return existing
    query = parse_query(query_string)
    result_url = result_url_for(query)
    now = now or timezone.now()
    machine_ids = [machine_id for machine_id, _gpus in pairs]
    try:
        breakdown = _first_look(kind, pairs, shown_price_per_hour, query, result_url, now)
    except LaunchRefused:
        # A group's machines may be taken by this very key's first request, committed since the look
        # above. A machine alone is refused on the look's reads only: the loser of a race stays cheap.
        existing = _existing(user, kind, idempotency_key) if kind != ALONE else None
        if existing is not None:
            return existing
        raise
    try:
        with transaction.atomic():
            locked = machines_by_id(machine_ids, lock=True)
            # A request waiting on the locks behind the same key's first booking finds it here.
            existing = _existing(user, kind, idempotency_key)
            if existing is not None:
                return existing
            # A bid is the price booked: the floor moving since the review refuses it only below the bid.
            total = refuse_machines(
                kind, pairs, locked, shown_price_per_hour if bid is None else None, query, breakdown,
                result_url, now,
            )
            shown = {machine_ids[0]: market} if market and kind == ALONE else dict(markets or {})
            for machine_id, shown_market in sorted(shown.items()):  # every machine is locked and found
                refuse_market_change(shown_market, locked[machine_id],
                                     refuser(kind, result_url, locked[machine_id], machine_id), query, kind)
            if bid is not None:
                refuse_bid(bid, locked[machine_ids[0]], query)
                total = bid * pairs[0][1]
            return _book_locked(user, kind, pairs, locked, total, query, idempotency_key, now, bid)
    except IntegrityError:
        # The same key committed by a concurrent request between our checks and our insert.
        existing = _existing(user, kind, idempotency_key)
        if existing is None:
            raise
        return existing
    except LaunchRefused as refusal:
        if kind == ALONE and refusal.code not in (LaunchRefused.PRICE_CHANGED, LaunchRefused.INVALID_QUERY):
            refusal.alternative = next_cheapest(query, machine_ids[0])
        raise


def _first_look(kind, pairs, shown_price_per_hour, query, result_url, now):
    """One cheap read before any lock; returns the workload's breakdown. A machine alone that nobody
    can book now (gone, offline, stale, outside the countries, too few free GPUs: the losers of a
    race) is refused at once, with no estimate and no next-cheapest recommendation computed for it;
    the result page it links back to has those. A group is checked whole, as under the locks."""
    found = machines_by_id([machine_id for machine_id, _gpus in pairs], lock=False)
    if kind == ALONE:
        ((machine_id, gpus),) = pairs
        refuse_unbookable(found.get(machine_id), gpus, query, result_url, now)
    # Pure computation plus a catalog read; done before taking the locks to keep them short.
    breakdown, _model_row = estimate_or_refuse(query, result_url)
    if kind != ALONE:
        refuse_machines(kind, pairs, found, shown_price_per_hour, query, breakdown, result_url, now)
    return breakdown


def _book_locked(user, kind, pairs, machines, total, query, idempotency_key, now, bid=None) -> LaunchOutcome:
    """Takes the GPUs of each machine (locked, in the order of their ids) and writes the bookings, and
    a group's LaunchGroup; the budget pays for the whole Launch, so what it covers is the same on each
    of its bookings. `bid`: a machine alone's bid, the price it is booked at."""
    group = None
    if kind != ALONE:
        group = LaunchGroup.objects.create(
            user=user, kind=kind, price_per_hour=total, workload=query.as_params(),
            result_url=stored_result_url(query), created_at=now, idempotency_key=idempotency_key,
        )
    limits = [machines[i].booking_limit_hours for i, _g in pairs]
    limits = [limit for limit in limits if limit is not None]
    cover = budget_cover(query.budget, total, min(limits) if limits else None)
    result_url = group.result_url if group is not None else stored_result_url(query)
    bookings = []
    for machine_id, gpus in pairs:  # in the order of the ids, as locked
        machine = machines[machine_id]
        booked = booked_market(machine, query)
        # The rows are locked, so this guard cannot miss; it stays as the last word on "never below zero".
        taken = Machine.objects.filter(pk=machine_id, free_gpus__gte=gpus).update(
            free_gpus=F("free_gpus") - gpus
        )
        if taken != 1:
            raise taken_meanwhile(machine, gpus, refuser(kind, result_url_for(query), machine, machine_id))
        price = booked.price_per_gpu_hour if bid is None else bid
        bookings.append(Booking(
            user=user, machine=machine, gpus=gpus, price_per_gpu_hour=price, price_per_hour=price * gpus,
            bid_per_gpu_hour=bid, workload=query.as_params(),
            # The market of the price booked (the row's, by the market preference): the one the review names.
            market=booked.market,
            result_url=result_url, hours_covered=cover.hours_of_one_booking if cover is not None else None,
            booking_limit_hours=machine.booking_limit_hours, status=Booking.Status.RUNNING,
            started_at=now, ends_at=Booking.end_for(now, machine.booking_limit_hours),
            # A group's are unique per user like a Launch's key; the colon keeps them apart from any form's.
            idempotency_key=idempotency_key if group is None else f"group:{group.pk}:{machine_id}",
            group=group,
        ))
    if group is None:
        bookings[0].save()  # one booking, saved as any model is (its signals sent)
    else:
        Booking.objects.bulk_create(bookings)
    # Last, right before the commit: a request that waited (in the server's queue, on the locks) past
    # its proxy's deadline books nothing; its client has been answered 504 already.
    check_deadline()
    return LaunchOutcome(group, created=True, booked=tuple(bookings))
