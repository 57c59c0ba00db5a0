"""Launch and Stop: the writes that hold and free GPUs.

Both run in one transaction with the machine (Launch) or the booking (Stop) locked, and change
free-GPU counts only with UPDATE ... SET free_gpus = free_gpus ± n guarded in the WHERE clause, so
whatever fails in between rolls back whole and the counts stay right.
Lock order is always booking, then machine (Launch creates its booking after locking the machine,
and no other transaction can hold a lock on a row that does not exist yet), so the two never deadlock.
A group (a cluster, a throughput plan) locks its machines in the order of their ids, and its Stop
and its booking limit lock its bookings in the order of theirs, then write machines in id order.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import cast

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce, Greatest, Least
from django.http import QueryDict
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext, ngettext

from catalog import rows as catalog_rows
from catalog.models import Machine
from nodelodge.hardening.deadline import check_deadline
from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.estimate import estimate_for
from nodelodge.recommendations.fleet import preferences_for, stale_cutoff
from nodelodge.recommendations.query import QueryError, WorkloadQuery
from nodelodge.recommendations.query import parse_query as parse_workload_query
from nodelodge.recommendations.throughput import tokens_per_second_text
from sizing import reasons
from sizing.availability import GONE, unavailable_reason
from sizing.cluster import can_join_cluster
from sizing.fit import MAX_GPUS_PER_MACHINE, fit_on_machine
from sizing.results import Recommendation, RecommendedMachine
from sizing.units import figure_text, money_amount, money_text
from sizing.wording import budget_cover, constraints_applied

from .models import Booking, LaunchGroup


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


class BookingNotFound(Exception):
    """No booking with that id belongs to this user."""


@dataclass(frozen=True)
class LaunchOutcome:
    booking: Booking
    created: bool  # False when the same idempotency key had already booked


@dataclass(frozen=True)
class StopOutcome:
    booking: Booking
    stopped: bool  # False when the booking had already ended (a second click on Stop)


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


def next_cheapest(query: WorkloadQuery, exclude_machine_id: int) -> RecommendedMachine | None:
    """The cheapest machine other than `exclude_machine_id` that fits and meets every preference."""
    try:
        result = recommendation_for(query, relax=False)  # only the machines are read here
    except QueryError:
        return None
    for machine in cast(Recommendation, result.recommendation).machines:  # asked without relaxing
        if machine.offer.id != exclude_machine_id:
            return machine
    return None


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


def next_cluster_after(refusal: LaunchRefused, kind: str, query_string: str) -> dict | None:
    """The cluster the page and the API offer after a cluster was refused: the next cheapest without the
    machine it could not book. None for a plan, after a price change (the same cluster at its new price
    is the offer) or a query that cannot be computed any more."""
    if kind != LaunchGroup.Kind.CLUSTER or refusal.code in (LaunchRefused.PRICE_CHANGED,
                                                             LaunchRefused.INVALID_QUERY):
        return None
    return next_cluster(query_string, getattr(refusal, "machine_id", None))


def next_cluster(query_string: str, exclude_machine_id: int | None) -> dict | None:
    """The cheapest cluster planned now that does not take `exclude_machine_id` (the machine a cluster
    could not be booked on), as the API writes a cluster; None where no other is planned."""
    from nodelodge.recommendations.clusters import clusters_for, plans_clusters

    try:
        query = parse_query(query_string)
        _breakdown, model_row = estimate_for(query)
    except QueryError:
        return None
    if not plans_clusters(query, model_row):
        return None
    for offer in clusters_for(query, model_row).offers:
        if exclude_machine_id not in offer.plan.machine_ids:
            return offer.to_dict()
    return None


@dataclass(frozen=True)
class LaunchReview:
    """What Confirm will book, from the machine's figures now: the page shows it before booking."""

    machine: Machine
    gpus: int
    price_per_hour: Decimal
    shown_price_per_hour: Decimal
    budget_text: str | None
    hours_covered: Decimal | None
    workload_title: str
    workload: tuple[tuple[str, str], ...]  # the constraints the result applied, in words (not the
    # workload's own line, which `workload_title` says)
    result_url: str
    problem: str | None  # why Confirm would be refused now, in words; None when it can book

    @property
    def price_changed(self) -> bool:
        return money_amount(self.price_per_hour) != money_amount(self.shown_price_per_hour)


def review_launch(machine_id: int, gpus: int, shown_price_per_hour: Decimal, query_string: str,
                  *, now: datetime | None = None) -> LaunchReview:
    """The review step before Launch books: the machine, GPUs, price per hour now, what the budget
    covers, interruptible or not, the booking limit and the workload it was sized for. Raises
    LaunchRefused when the inputs or the machine cannot be read at all."""
    query = parse_query(query_string)
    result_url = result_url_for(query)
    breakdown, _model_row = estimate_or_refuse(query, result_url)
    machine = Machine.objects.select_related("provider", "gpu_type").filter(pk=machine_id).first()
    if machine is None or machine.gone_at is not None:
        raise LaunchRefused(
            LaunchRefused.GONE, gettext("This machine is no longer offered by its provider."),
            result_url=result_url,
        )
    offer = catalog_rows.machine_offer(machine)
    problem = None
    cutoff = stale_cutoff(now or timezone.now())
    reason = unavailable_reason(offer, stale_cutoff=cutoff, countries=query.countries)
    fit = fit_on_machine(breakdown, offer) if reason is None else None
    if reason is not None:
        problem = gettext(
            "This machine is not available now (%(reason)s); go back to the result for another."
        ) % {"reason": reason}
    elif fit is None or fit.gpus_used != gpus:
        problem = gettext("The machine's figures changed and the workload no longer fits it as shown.")
    price_per_hour = machine.price_per_gpu_hour * gpus
    cover = budget_cover(query.budget, price_per_hour, machine.booking_limit_hours)
    hours_covered = cover.hours_of_one_booking if cover is not None else None
    preferences = preferences_for(query)
    stale_minutes = settings.MACHINE_STALE_AFTER_SECONDS // 60
    applied = constraints_applied(breakdown, preferences, {}, stale_minutes)
    # Which lines describe the workload is read from their English labels, whatever the page's language.
    with translation.override("en"):
        english = constraints_applied(breakdown, preferences, {}, stale_minutes)
    workload = tuple(
        pair for pair, (label, _value) in zip(applied, english, strict=True)
        if str(label) not in ("Availability", "Not recommended", "Workload")
    )
    return LaunchReview(
        machine=machine,
        gpus=gpus,
        price_per_hour=price_per_hour,
        shown_price_per_hour=shown_price_per_hour,
        budget_text=cover.text if cover else None,
        hours_covered=hours_covered,
        workload_title=breakdown.title,
        workload=workload,
        result_url=result_url,
        problem=problem,
    )


def _existing(user, idempotency_key: str) -> Booking | None:
    return Booking.objects.filter(user=user, idempotency_key=idempotency_key).first()


def launch(
    user,
    machine_id: int,
    gpus: int,
    shown_price_per_hour: Decimal,
    query_string: str,
    idempotency_key: str,
    *,
    now: datetime | None = None,
) -> LaunchOutcome:
    """Book `gpus` GPUs of a machine for `user`, as the result page offered them.

    Re-checks under the machine's row lock that the machine is still offered, available, fresh, has
    the GPUs free, still fits the workload with the same GPU count and still costs
    `shown_price_per_hour` (the page's figure, to the cent). Raises LaunchRefused otherwise.
    The same (user, idempotency_key) books once: a repeat returns the first booking.
    """
    existing = _existing(user, idempotency_key)
    if existing is not None:
        return LaunchOutcome(existing, created=False)

    query = parse_query(query_string)
    result_url = result_url_for(query)
    # One cheap read first: a machine that nobody can book now (gone, offline, stale, outside the
    # countries, too few free GPUs: the losers of a race) is refused at once, with no estimate and no
    # next-cheapest recommendation computed for it. The result page it links back to has those.
    _refuse_unbookable(
        with_held_gpus(Machine.objects.select_related("provider", "gpu_type").filter(pk=machine_id)).first(),
        gpus, query, result_url, now or timezone.now(),
    )
    # Pure computation plus a catalog read; done before taking the lock to keep it short.
    breakdown, _model_row = estimate_or_refuse(query, result_url)

    try:
        with transaction.atomic():
            outcome = _book_locked(
                user, machine_id, gpus, shown_price_per_hour, query, result_url, breakdown,
                idempotency_key, now or timezone.now(),
            )
    except IntegrityError:
        # The same key committed by a concurrent request between our checks and our insert.
        existing = _existing(user, idempotency_key)
        if existing is None:
            raise
        return LaunchOutcome(existing, created=False)
    except LaunchRefused as refusal:
        if refusal.code not in (LaunchRefused.PRICE_CHANGED, LaunchRefused.INVALID_QUERY):
            refusal.alternative = next_cheapest(query, machine_id)
        raise
    return outcome


def _refuse_unbookable(machine, gpus, query, result_url, now):
    """Raises LaunchRefused when `machine` (read with its provider and GPU type, or None) cannot be
    booked now for `gpus` GPUs whatever the workload: gone, offline, stale, outside the query's
    countries or without the free GPUs. Otherwise returns its offer and why it is unavailable (None,
    or a reason fit_on_machine settles)."""
    def refuse(code: str, message: str, **extra) -> LaunchRefused:
        return LaunchRefused(code, message, result_url=result_url, **extra)

    if machine is None:
        raise refuse(LaunchRefused.GONE, gettext("This machine is no longer offered by its provider."))
    name = f"{machine.provider.name} {machine.provider_machine_id}"
    offer = catalog_rows.machine_offer(machine)
    # The availability rule the answer applied, applied again (under the lock in _book_locked).
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
        # Worded by its cause: where the GPUs the running bookings hold would make room for those asked,
        # a booking took them ("someone else booked first"); where even they would not, the provider's
        # feed reports fewer free GPUs.
        held = getattr(machine, "held_by_bookings", None)
        if held is None:
            held = gpus_held(Machine.objects.filter(pk=machine.pk)).get(machine.pk, 0)
        if machine.free_gpus + held < gpus:
            raise refuse(
                LaunchRefused.TAKEN,
                ngettext(
                    "%(machine)s no longer has %(gpus)s free GPU (%(free)s free now): "
                    "its provider's feed reports fewer free GPUs since the result.",
                    "%(machine)s no longer has %(gpus)s free GPUs (%(free)s free now): "
                    "its provider's feed reports fewer free GPUs since the result.",
                    gpus,
                ) % {"machine": name, "gpus": gpus, "free": machine.free_gpus},
            )
        raise refuse(
            LaunchRefused.TAKEN,
            ngettext(
                "%(machine)s no longer has %(gpus)s free GPU (%(free)s free now): "
                "someone else booked first.",
                "%(machine)s no longer has %(gpus)s free GPUs (%(free)s free now): "
                "someone else booked first.",
                gpus,
            ) % {"machine": name, "gpus": gpus, "free": machine.free_gpus},
        )

    return offer, reason


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


def _book_locked(
    user, machine_id, gpus, shown_price_per_hour, query, result_url, breakdown, idempotency_key, now
) -> LaunchOutcome:
    def refuse(code: str, message: str, **extra) -> LaunchRefused:
        return LaunchRefused(code, message, result_url=result_url, **extra)

    machine = (
        Machine.objects.select_for_update(of=("self",))
        .select_related("provider", "gpu_type")
        .filter(pk=machine_id)
        .first()
    )
    # A request waiting on the lock behind the same key's first booking finds it here.
    existing = _existing(user, idempotency_key)
    if existing is not None:
        return LaunchOutcome(existing, created=False)

    offer, reason = _refuse_unbookable(machine, gpus, query, result_url, now)
    machine = cast(Machine, machine)  # a missing machine was refused
    name = f"{machine.provider.name} {machine.provider_machine_id}"

    fit = fit_on_machine(breakdown, offer) if reason is None else None
    if fit is None or fit.gpus_used != gpus:
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
            % {"machine": name, "why": why},
        )

    price_per_hour = machine.price_per_gpu_hour * gpus
    _refuse_price_change(shown_price_per_hour, price_per_hour, refuse)

    # The row is locked, so this guard cannot miss; it stays as the last word on "never below zero".
    taken = Machine.objects.filter(pk=machine.pk, free_gpus__gte=gpus).update(
        free_gpus=F("free_gpus") - gpus
    )
    if taken != 1:
        raise refuse(
            LaunchRefused.TAKEN,
            gettext("%(machine)s no longer has %(gpus)s free GPUs: someone else booked first.")
            % {"machine": name, "gpus": gpus},
        )

    cover = budget_cover(query.budget, price_per_hour, machine.booking_limit_hours)
    hours_covered = cover.hours_of_one_booking if cover is not None else None

    booking = Booking.objects.create(
        user=user,
        machine=machine,
        gpus=gpus,
        price_per_gpu_hour=machine.price_per_gpu_hour,
        price_per_hour=price_per_hour,
        workload=query.as_params(),
        result_url=stored_result_url(query),
        hours_covered=hours_covered,
        booking_limit_hours=machine.booking_limit_hours,
        status=Booking.Status.RUNNING,
        started_at=now,
        ends_at=Booking.end_for(now, machine.booking_limit_hours),
        idempotency_key=idempotency_key,
    )
    # Last, right before the commit: a request that waited (in the server's queue, on the lock) past
    # its proxy's deadline books nothing; its client has been answered 504 already.
    check_deadline()
    return LaunchOutcome(booking, created=True)


# --- Free GPUs against running bookings ----------------------------------------------------------
#
# The rule every path that sets free GPUs keeps: a machine never offers more GPUs than it has less
# those its running console bookings hold. A provider's feed may or may not yet reflect the console's
# bookings, so the free GPUs it reports are taken as an upper bound, never added to what Launch took:
# free = min(reported free, gpu_count - GPUs of running bookings), and never below zero.


def gpus_held(machines) -> dict[int, int]:
    """GPUs held by running bookings on each of these machines (a queryset), by machine id; machines
    without a running booking are left out. One query."""
    return dict(
        Booking.objects.filter(machine__in=machines, status=Booking.Status.RUNNING)
        .order_by()
        .values("machine_id")
        .annotate(held=Sum("gpus"))
        .values_list("machine_id", "held")
    )


def with_held_gpus(machines):
    """These machines (a queryset), each with the GPUs its running bookings hold (`held_by_bookings`),
    in the same statement: a refusal for too few free GPUs says whether bookings or the provider's feed
    took them without another read."""
    held = (
        Booking.objects.filter(machine=OuterRef("pk"), status=Booking.Status.RUNNING)
        .order_by().values("machine").annotate(held=Sum("gpus")).values("held")
    )
    return machines.annotate(held_by_bookings=Coalesce(Subquery(held), 0))


def cap_free_gpus_by_bookings(machines, now: datetime | None = None) -> int:
    """Lowers the free GPUs of these machines (a queryset) that hold running bookings to at most
    gpu_count less the booked GPUs. One UPDATE, whatever the number of machines; run it in the
    transaction that wrote the counts, after the write, so a Launch that committed in between is
    counted (the write holds the rows' locks until commit, so none can commit after). Returns how many
    machines were lowered."""
    held = (
        Booking.objects.filter(machine=OuterRef("pk"), status=Booking.Status.RUNNING)
        .order_by()
        .values("machine")
        .annotate(held=Sum("gpus"))
        .values("held")
    )
    capped = Greatest(F("gpu_count") - Subquery(held), 0)
    over = (
        machines.filter(bookings__status=Booking.Status.RUNNING)
        .alias(capped=capped)
        .filter(free_gpus__gt=F("capped"))
        .values("pk")
    )
    return Machine.objects.filter(pk__in=over).update(
        free_gpus=Least(F("free_gpus"), capped), updated_at=now or timezone.now()
    )


def give_back_gpus(machine_id: int, gpus: int) -> None:
    """The GPUs of a booking that ended, offered again: capped at gpu_count, as a provider refresh may
    already have reported them free. A machine whose provider's feed contradicts its bookings (it
    keeps the shape it was booked on, `nodelodge.refresh.conflicts`) offers none: what it really has
    is known again only when a record of its feed applies in full.

    The machine's row is locked first and its flag read after, by a statement of its own: on
    PostgreSQL a statement sees what committed before it began, so a refresh that flagged the machine
    while this waited for its row is seen (a single UPDATE joining the flag would read it as it was
    before the wait)."""
    list(Machine.objects.select_for_update().filter(pk=machine_id).values_list("pk", flat=True))
    Machine.objects.filter(pk=machine_id, feed_conflict__isnull=True).update(
        free_gpus=Least(F("free_gpus") + gpus, F("gpu_count"))
    )


def stop(user, booking_id: int, *, now: datetime | None = None) -> StopOutcome:
    """End the user's booking and give its GPUs back. Another user's booking, or none: BookingNotFound.
    Stopping a booking that already ended changes nothing (a second click on Stop). A booking of a
    group stops its whole group (`stop_group`): a cluster short of one machine serves nothing."""
    group_id = Booking.objects.filter(pk=booking_id, user=user).values_list("group_id", flat=True).first()
    if group_id is not None:
        outcome = stop_group(user, group_id, now=now)
        of_group = next(b for b in outcome.bookings if b.pk == booking_id)
        return StopOutcome(of_group, stopped=outcome.stopped)
    with transaction.atomic():
        booking = Booking.objects.select_for_update().filter(pk=booking_id, user=user).first()
        if booking is None:
            raise BookingNotFound(booking_id)
        if not booking.is_running:
            return StopOutcome(booking, stopped=False)
        booking.status = Booking.Status.ENDED
        booking.ended_at = now or timezone.now()
        booking.save(update_fields=["status", "ended_at"])
        give_back_gpus(booking.machine_id, booking.gpus)
    return StopOutcome(booking, stopped=True)


def end_expired_bookings(*, now: datetime | None = None, user=None) -> int:
    """End every running booking that has reached its machine's booking limit, at the moment the
    limit was reached, and give its GPUs back. Run by Celery beat (`launches.tasks`) and before
    "My launches" is read, so a booking never shows as running past its limit. Returns how many
    ended. Each booking is locked and checked again, so a Stop at the same moment ends it once."""
    now = now or timezone.now()
    # The end is stored when booked (`Booking.ends_at`), so this is a plain indexed comparison that
    # every database evaluates alike: no date arithmetic in SQL.
    due = Booking.objects.filter(status=Booking.Status.RUNNING, ends_at__lte=now)
    if user is not None:
        due = due.filter(user=user)
    due_ids = list(due.values_list("pk", flat=True))
    ended = 0
    for booking_id in due_ids:
        with transaction.atomic():
            group_id = Booking.objects.filter(pk=booking_id).values_list("group_id", flat=True).first()
            if group_id is not None:
                # A group's bookings end together, when the first of them reaches its limit; locked
                # in the order of their ids, as Stop locks them.
                ended += len(_end_group_locked(group_id, due_by=now))
                continue
            booking = Booking.objects.select_for_update().filter(pk=booking_id).first()
            if booking is None or not booking.is_running or booking.ends_at is None:
                continue
            booking.status = Booking.Status.ENDED
            booking.ended_at = booking.ends_at
            booking.save(update_fields=["status", "ended_at"])
            give_back_gpus(booking.machine_id, booking.gpus)
            ended += 1
    return ended


# --- Groups: several machines booked all or nothing ----------------------------------------------
#
# A cluster (identical machines at one site serving one model) or a throughput plan is booked in one
# transaction: every machine locked in the order of its id (so two groups that share machines queue
# behind each other instead of deadlocking), each re-checked by Launch's own rules, then every GPU
# taken and every booking written, or nothing. Its bookings end together (Stop, or the first booking
# limit reached): a cluster short of one machine serves nothing.

# The most machines one group books, in one transaction: more than any cluster, and than a plan for
# any target a single model is served at.
MAX_GROUP_MACHINES = 10_000


class GroupInputError(ValueError):
    """The group asked for cannot be read (bad input, not a refusal): `errors` by field, in words."""

    def __init__(self, errors: dict[str, str]):
        super().__init__(errors)
        self.errors = errors


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


@dataclass(frozen=True)
class GroupOutcome:
    group: LaunchGroup
    created: bool  # False when the same idempotency key had already booked it


@dataclass(frozen=True)
class GroupStopOutcome:
    group: LaunchGroup
    bookings: list[Booking]
    stopped: bool  # False when the group had already ended


def machine_name(machine: Machine) -> str:
    return f"{machine.provider.name} {machine.provider_machine_id}"


def check_group_request(kind: str, machines) -> list[tuple[int, int]]:
    """The machines asked for as (machine id, GPUs) pairs sorted by id, or GroupInputError."""
    if kind not in LaunchGroup.Kind.values:
        raise GroupInputError({"kind": gettext("Choose cluster or plan.")})
    try:
        pairs = [(int(machine_id), int(gpus)) for machine_id, gpus in machines]
    except (TypeError, ValueError):
        raise GroupInputError({"machines": gettext("Each machine is its id and its GPUs.")}) from None
    if not 1 <= len(pairs) <= MAX_GROUP_MACHINES:
        raise GroupInputError({
            "machines": gettext("A group books from 1 to %(most)s machines.")
            % {"most": figure_text(MAX_GROUP_MACHINES)}
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


def _machines_by_id(machine_ids, *, lock: bool) -> dict[int, Machine]:
    machines = with_held_gpus(
        Machine.objects.select_related("provider", "gpu_type").filter(pk__in=machine_ids).order_by("pk")
    )
    if lock:
        # ORDER BY id FOR UPDATE: the rows are locked in the order of their ids, in every group.
        machines = machines.select_for_update(of=("self",))
    return {machine.pk: machine for machine in machines}


def _refuse_group(kind, pairs, machines: dict[int, Machine], shown_price_per_hour, query, breakdown,
                  result_url, now) -> Decimal:
    """Raises GroupRefused naming the first machine (by id) that cannot be booked as asked now, or
    the group's total price when it changed; returns the total price per hour otherwise. Each
    machine is re-checked by Launch's own rules (`_refuse_unbookable`); a cluster also needs every
    machine whole, identical to the first and fit for a cluster (`sizing.cluster`), whatever the
    client sent; a plan's machines must each still fit the workload in copies of the GPUs asked."""
    total = Decimal(0)
    first = None
    for machine_id, gpus in pairs:
        machine = machines.get(machine_id)

        def refuse(code: str, message: str, machine=machine, machine_id=machine_id, **extra) -> GroupRefused:
            name = machine_name(machine) if machine is not None else None
            return GroupRefused(
                code, message, machine=name, machine_id=machine_id, result_url=result_url,
                provider_machine_id=machine.provider_machine_id if machine is not None else None, **extra,
            )

        try:
            offer, reason = _refuse_unbookable(machine, gpus, query, result_url, now)
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
        machine = cast(Machine, machine)  # a missing machine was refused
        name = machine_name(machine)
        if kind == LaunchGroup.Kind.CLUSTER:
            if reason is not None:
                raise refuse(
                    GroupRefused.UNAVAILABLE,
                    gettext("%(machine)s is not available now (%(reason)s).")
                    % {"machine": name, "reason": reason},
                )
            if not can_join_cluster(tier=machine.tier, site=machine.site, interconnect=machine.interconnect,
                                    interconnect_gbps=machine.interconnect_gbps):
                raise refuse(
                    GroupRefused.NOT_CLUSTERABLE,
                    gettext("%(machine)s cannot be part of a cluster: it needs a Secure machine at a named "
                            "site with a fast RDMA interconnect.") % {"machine": name},
                )
            shape = (machine.provider_id, machine.site, machine.gpu_type_id, machine.gpu_count,
                     machine.memory_per_gpu_mib)
            if first is None:
                first = (machine, shape)
            elif shape != first[1]:
                raise refuse(
                    GroupRefused.NOT_IDENTICAL,
                    gettext("%(machine)s is not identical to %(first)s (provider, site, GPU type, GPU count "
                            "and memory must all match).")
                    % {"machine": name, "first": machine_name(first[0])},
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
        else:
            fit = fit_on_machine(breakdown, offer) if reason is None else None
            if fit is None or gpus % fit.gpus_used:
                raise refuse(
                    LaunchRefused.NO_LONGER_FITS,
                    gettext("The machine's figures changed and your workload no longer fits %(machine)s "
                            "as the plan shows.") % {"machine": name},
                )
        total += machine.price_per_gpu_hour * gpus

    def refuse_group(code: str, message: str, **extra) -> GroupRefused:
        return GroupRefused(code, message, result_url=result_url, **extra)

    if kind == LaunchGroup.Kind.CLUSTER:
        _refuse_cluster_that_does_not_hold(query, cast(tuple, first)[0], len(pairs), refuse_group)  # set
    _refuse_price_change(shown_price_per_hour, total, refuse_group)
    return total


def _refuse_cluster_that_does_not_hold(query, machine: Machine, count: int, refuse_group) -> None:
    """A cluster is booked only where its machines serve the workload together, as the planner sized it."""
    from nodelodge.recommendations.clusters import cluster_does_not_hold

    _breakdown, model_row = estimate_for(query)
    why = cluster_does_not_hold(query, model_row, gpu_type=machine.gpu_type.name,
                                gpus_per_machine=machine.gpu_count,
                                memory_per_gpu_mib=cast(int, machine.memory_per_gpu_mib), machines=count)
    if why is not None:
        raise refuse_group(LaunchRefused.NO_LONGER_FITS, why)


def _group_query(query_string: str):
    """The query, its result's address and the workload's breakdown, or LaunchRefused (invalid)."""
    query = parse_query(query_string)
    result_url = result_url_for(query)
    breakdown, _model_row = estimate_or_refuse(query, result_url)
    return query, result_url, breakdown


@dataclass(frozen=True)
class GroupReview:
    """What Confirm will book for a group, from the machines' figures now."""

    kind: str
    machines: list[tuple[Machine | None, int, int]]  # (machine or None when unknown, its id, GPUs)
    price_per_hour: Decimal  # the machines found, now
    shown_price_per_hour: Decimal
    budget_text: str | None
    workload_title: str
    result_url: str
    problem: str | None  # why Confirm would be refused now, in words; None when it can book
    target_text: str | None = None  # a throughput plan's target, in words ("9,000 tokens/s")

    @property
    def gpus(self) -> int:
        return sum(gpus for _machine, _id, gpus in self.machines)

    @property
    def price_changed(self) -> bool:
        return money_amount(self.price_per_hour) != money_amount(self.shown_price_per_hour)


def review_group(kind: str, machines, shown_price_per_hour: Decimal, query_string: str,
                 *, now: datetime | None = None) -> GroupReview:
    """The review step before a group is booked: each machine with its GPUs, the total price per hour
    now, what the budget covers, and why Confirm would be refused now (the same checks as booking).
    Raises GroupInputError for unreadable input and LaunchRefused when the result cannot be read."""
    pairs = check_group_request(kind, machines)
    query, result_url, breakdown = _group_query(query_string)
    found = _machines_by_id([machine_id for machine_id, _gpus in pairs], lock=False)
    problem = None
    try:
        _refuse_group(kind, pairs, found, shown_price_per_hour, query, breakdown, result_url,
                      now or timezone.now())
    except LaunchRefused as refusal:
        problem = refusal.message
    price = sum((found[i].price_per_gpu_hour * gpus for i, gpus in pairs if i in found), Decimal(0))
    limits = [found[i].booking_limit_hours for i, _g in pairs if i in found and found[i].booking_limit_hours]
    shortest = min(cast(list[int], limits)) if limits else None  # the limits set
    cover = budget_cover(query.budget, price, shortest) if price else None
    return GroupReview(
        kind=kind,
        machines=[(found.get(machine_id), machine_id, gpus) for machine_id, gpus in pairs],
        price_per_hour=price,
        shown_price_per_hour=shown_price_per_hour,
        budget_text=cover.text if cover else None,
        workload_title=breakdown.title,
        result_url=result_url,
        problem=problem,
        target_text=tokens_per_second_text(query.target_tokens) if query.target_tokens else None,
    )


def _existing_group(user, idempotency_key: str) -> LaunchGroup | None:
    return LaunchGroup.objects.filter(user=user, idempotency_key=idempotency_key).first()


def launch_group(
    user,
    *,
    machines,
    shown_price_per_hour: Decimal,
    query_string: str,
    idempotency_key: str,
    kind: str,
    now: datetime | None = None,
) -> GroupOutcome:
    """Book every machine of a cluster or a plan for `user`, as the result page offered them, or
    none: `machines` are (machine id, GPUs) pairs. Raises GroupInputError for unreadable input and
    GroupRefused (a LaunchRefused) naming the machine that cannot be booked, or the price change.
    The same (user, idempotency_key) books once: a repeat returns the first group."""
    pairs = check_group_request(kind, machines)
    existing = _existing_group(user, idempotency_key)
    if existing is not None:
        return GroupOutcome(existing, created=False)
    query, result_url, breakdown = _group_query(query_string)
    now = now or timezone.now()
    machine_ids = [machine_id for machine_id, _gpus in pairs]
    # One cheap read first, as Launch does: a group whose machine someone else took is refused at
    # once, without a lock. Under the locks below everything is checked again.
    try:
        _refuse_group(kind, pairs, _machines_by_id(machine_ids, lock=False), shown_price_per_hour, query,
                      breakdown, result_url, now)
    except LaunchRefused:
        # The machines may be taken by this very key's first request, committed since the look above.
        existing = _existing_group(user, idempotency_key)
        if existing is not None:
            return GroupOutcome(existing, created=False)
        raise
    try:
        with transaction.atomic():
            locked = _machines_by_id(machine_ids, lock=True)
            # A request waiting on the locks behind the same key's first booking finds it here.
            existing = _existing_group(user, idempotency_key)
            if existing is not None:
                return GroupOutcome(existing, created=False)
            total = _refuse_group(
                kind, pairs, locked, shown_price_per_hour, query, breakdown, result_url, now
            )
            return GroupOutcome(
                _book_group_locked(user, kind, pairs, locked, total, query, idempotency_key, now),
                created=True,
            )
    except IntegrityError:
        # The same key committed by a concurrent request between our checks and our insert.
        existing = _existing_group(user, idempotency_key)
        if existing is None:
            raise
        return GroupOutcome(existing, created=False)


def _book_group_locked(user, kind, pairs, machines, total, query, idempotency_key, now) -> LaunchGroup:
    group = LaunchGroup.objects.create(
        user=user, kind=kind, price_per_hour=total, workload=query.as_params(),
        result_url=stored_result_url(query), created_at=now, idempotency_key=idempotency_key,
    )
    # The budget pays for the whole group: what it covers is the group's, on each of its bookings.
    limits = [machines[i].booking_limit_hours for i, _g in pairs if machines[i].booking_limit_hours]
    cover = budget_cover(query.budget, total, min(limits) if limits else None)
    hours_covered = cover.hours_of_one_booking if cover is not None else None
    bookings = []
    for machine_id, gpus in pairs:  # in the order of the ids, as locked
        machine = machines[machine_id]
        # The rows are locked, so this guard cannot miss; it stays as the last word on "never below zero".
        taken = Machine.objects.filter(pk=machine_id, free_gpus__gte=gpus).update(
            free_gpus=F("free_gpus") - gpus
        )
        if taken != 1:
            raise GroupRefused(
                LaunchRefused.TAKEN,
                gettext("%(machine)s no longer has %(gpus)s free GPUs: someone else booked first.")
                % {"machine": machine_name(machine), "gpus": gpus},
                machine=machine_name(machine), machine_id=machine_id,
                provider_machine_id=machine.provider_machine_id, result_url=result_url_for(query),
            )
        bookings.append(Booking(
            user=user, machine=machine, gpus=gpus, price_per_gpu_hour=machine.price_per_gpu_hour,
            price_per_hour=machine.price_per_gpu_hour * gpus, workload=query.as_params(),
            result_url=group.result_url, hours_covered=hours_covered,
            booking_limit_hours=machine.booking_limit_hours, status=Booking.Status.RUNNING,
            started_at=now, ends_at=Booking.end_for(now, machine.booking_limit_hours),
            # Unique per user like a Launch's key; the colon keeps it apart from any form's key.
            idempotency_key=f"group:{group.pk}:{machine_id}", group=group,
        ))
    Booking.objects.bulk_create(bookings)
    # Last, right before the commit: a request past its proxy's deadline books nothing (as Launch).
    check_deadline()
    return group


def _end_group_locked(group_id: int, ended_at: datetime | None = None, *,
                      due_by: datetime | None = None) -> list[Booking]:
    """Ends the group's running bookings at `ended_at` (with `due_by` instead: at the first booking
    limit reached by then, if any) and gives their GPUs back; returns those ended. Bookings are
    locked in the order of their ids, machines written in the order of theirs."""
    bookings = list(Booking.objects.select_for_update().filter(group_id=group_id).order_by("pk"))
    running = [booking for booking in bookings if booking.is_running]
    if due_by is not None:
        due = [b.ends_at for b in running if b.ends_at is not None and b.ends_at <= due_by]
        if not due:
            return []
        ended_at = min(due)
    for booking in running:
        booking.status = Booking.Status.ENDED
        booking.ended_at = ended_at
    Booking.objects.bulk_update(running, ["status", "ended_at"])
    for booking in sorted(running, key=lambda b: b.machine_id):
        give_back_gpus(booking.machine_id, booking.gpus)
    return running


def stop_group(user, group_id: int, *, now: datetime | None = None) -> GroupStopOutcome:
    """End every booking of the user's group in one transaction and give their GPUs back. Another
    user's group, or none: BookingNotFound. A group that already ended changes nothing."""
    with transaction.atomic():
        group = LaunchGroup.objects.filter(pk=group_id, user=user).first()
        if group is None:
            raise BookingNotFound(group_id)
        ended = _end_group_locked(group.pk, now or timezone.now())
        bookings = list(
            group.bookings.select_related("machine__provider", "machine__gpu_type").order_by("machine_id")
        )
    return GroupStopOutcome(group, bookings, stopped=bool(ended))
