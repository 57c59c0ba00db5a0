"""`POST /api/v1/launches`: book one machine, as the review's Confirm does (with a bid, where it books the
interruptible market); `POST /api/v1/launches/group`: a cluster or a throughput plan all or nothing. Both
for the signed-in user (session with its CSRF token, or a token from My launches: `Authorization: Bearer
nlt_…`).

The body's schema states each field as the console reads it (`hardening/api_input.py`): a body it does
not allow is 400 naming the field; one it allows that the console cannot book as asked is 422 (a query
it cannot answer, naming the query's field; a machine listed twice), or 409 (a machine taken, gone, a
price changed)."""
from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal, cast

from django.http import QueryDict
from django.utils.translation import gettext, gettext_lazy
from ninja import Field, Router, Schema, Status

from nodelodge.accounts.api import REFUSALS, ErrorsOut, TokenAuth
from nodelodge.hardening.api_auth import session_auth
from nodelodge.hardening.api_input import BodyIn, WizardQuery, whole_number, worded
from nodelodge.recommendations.query import QueryError, parse_query
from sizing.limits import MAX_GPUS_PER_MACHINE
from sizing.markets import MARKETS
from sizing.units import money_string

from .alternatives import next_cluster_after
from .booking import MAX_GROUP_MACHINES, check_request, launch
from .models import IDEMPOTENCY_KEY, Booking, LaunchGroup
from .refusals import GroupInputError, LaunchRefused

router = Router(auth=[TokenAuth(), session_auth], tags=["launches"])

MAX_ID = 2**63 - 1  # the largest id a machine can have (a 64-bit key)
# USD per hour as a decimal string, from 0 to MAX_MONEY (1,000,000,000), e.g. "39.84".
GROUP_PRICE_PATTERN = r"^(?:[0-9]{1,9}(?:\.[0-9]{1,12})?|1000000000(?:\.0{1,12})?)$"
# USD per GPU-hour with at most 4 places, from 0 to MAX_BID_PER_GPU_HOUR (10,000), e.g. "0.75"; its bounds
# against the machine (its floor, its on-demand price) are the booking's, 422.
BID_PATTERN = r"^(?:[0-9]{1,4}(?:\.[0-9]{1,4})?|10000(?:\.0{1,4})?)$"
IdempotencyKey = Annotated[str, Field(
    pattern=f"^{IDEMPOTENCY_KEY}$", description="8 to 64 of A-Z a-z 0-9 _ -, new for each booking; the "
    "same key books once.",
), worded(gettext_lazy("Send 8 to 64 letters, digits, '_' or '-', new for each booking."))]


class GroupMachineIn(BodyIn):
    id: Annotated[whole_number(ge=1, le=MAX_ID), worded(
        gettext_lazy("Machine ids are whole numbers from 1."))]
    gpus: Annotated[whole_number(ge=1, le=MAX_GPUS_PER_MACHINE), worded(
        lambda: gettext("Each machine takes from 1 to %(most)s GPUs.") % {"most": MAX_GPUS_PER_MACHINE}
    )]
    market: Annotated[Literal[MARKETS] | None, Field(
        description="The market the result priced it in (on_demand, interruptible or reserved, by the "
        "query's `market` preference); when given, a machine priced in another now is refused (409 "
        "market_changed). Omitted: booked in the market the query prices it in, unchecked.",
    ), worded(lambda: gettext("Choose a market: %(markets)s.") % {"markets": ", ".join(MARKETS)})] = None


class LaunchGroupIn(BodyIn):
    kind: Literal[tuple(LaunchGroup.Kind.values)]
    machines: Annotated[list[GroupMachineIn], Field(
        min_length=1, max_length=MAX_GROUP_MACHINES,
        description="Each machine once, with the GPUs it takes; from 1 to 10,000 machines.",
    )]
    price_per_hour: Annotated[str, Field(
        pattern=GROUP_PRICE_PATTERN, description="The total per hour the result showed, USD, e.g. \"39.84\".",
    ), worded(gettext_lazy("Enter the price per hour as a number of USD, e.g. 39.84."))]
    query: WizardQuery
    idempotency_key: IdempotencyKey


class LaunchIn(BodyIn):
    machine: Annotated[whole_number(ge=1, le=MAX_ID), worded(
        gettext_lazy("Machine ids are whole numbers from 1."))]
    gpus: Annotated[whole_number(ge=1, le=MAX_GPUS_PER_MACHINE), worded(
        lambda: gettext("A machine takes from 1 to %(most)s GPUs.") % {"most": MAX_GPUS_PER_MACHINE}
    )]
    price_per_hour: Annotated[str, Field(
        pattern=GROUP_PRICE_PATTERN, description="The price per hour the result showed, USD, e.g. \"2.49\"; "
        "a price changed since is 409 `price_changed` (not compared with a bid: the bid is the price).",
    ), worded(gettext_lazy("Enter the price per hour as a number of USD, e.g. 39.84."))]
    query: WizardQuery
    idempotency_key: IdempotencyKey
    market: Literal[tuple(MARKETS)] | None = Field(
        None, description="The market the result priced the machine in: one now priced in another is 409 "
        "`market_changed`. Omitted: not checked.",
    )
    bid_per_gpu_hour: Annotated[str, Field(
        pattern=BID_PATTERN, description="Booked interruptible only: the bid, USD per GPU-hour with at "
        "most 4 places (e.g. \"0.75\"), which it is booked at instead of price_per_hour. The machine runs "
        "while the bid is at least its floor (its interruptible price); a higher bid keeps it when the floor "
        "rises. Below the floor or above the machine's on-demand price at booking time, or on another "
        "market: 422 naming this field.",
    ), worded(gettext_lazy(
        "Send the bid as a decimal string of USD per GPU-hour from 0 to 10000 with at most 4 places, e.g. "
        "\"0.75\"."
    ))] | None = None


class BookingOut(Schema):
    """What a booking says of itself, alone or in a group."""

    id: int
    machine_id: int
    provider: str
    provider_machine_id: str
    gpu_type: str
    gpus: int
    market: str
    price_per_gpu_hour: str
    price_per_hour: str
    status: str
    started_at: str
    ends_at: str | None


class LaunchOut(BookingOut):
    bid_per_gpu_hour: str | None
    result_url: str
    idempotency_key: str


class LaunchRefusedOut(Schema):
    """Nothing was booked: why (`errors.machine`, in words), the refusal's `code` (`taken`, `gone`,
    `offline`, `stale`, `outside_countries`, `no_longer_fits`, `price_changed`, `market_changed`) and the
    result's address to compute again (`result_url`)."""

    errors: dict[str, str]
    code: str
    result_url: str


class LaunchGroupBookingOut(BookingOut):
    ended_at: str | None


class LaunchGroupOut(Schema):
    id: int
    kind: str
    status: str
    price_per_hour: str
    created_at: str
    result_url: str
    idempotency_key: str
    bookings: list[LaunchGroupBookingOut]


class LaunchGroupRefusedOut(Schema):
    """Nothing was booked: why (`errors.group`, in words), which machine (`machine_id` and the
    provider's `provider_machine_id`; null when the refusal is about the whole group, as a price
    change), the refusal's `code`, the result's address to compute again (`result_url`) and, for a
    cluster, the next cheapest cluster without that machine (`next_cluster`, as the recommendations
    answer writes a cluster; null where none is planned)."""

    errors: dict[str, str]
    code: str
    machine_id: int | None
    provider_machine_id: str | None
    result_url: str
    next_cluster: dict | None = None


def _iso(moment) -> str | None:
    return moment.isoformat() if moment is not None else None


def booking_out(booking: Booking) -> dict:
    machine = booking.machine
    bid = booking.bid_per_gpu_hour
    return {
        "id": booking.pk, "machine_id": booking.machine_id, "provider": machine.provider.name,
        "provider_machine_id": machine.provider_machine_id, "gpu_type": machine.gpu_type.name,
        "gpus": booking.gpus, "market": booking.market,
        "price_per_gpu_hour": money_string(booking.price_per_gpu_hour),
        "price_per_hour": money_string(booking.price_per_hour),
        "bid_per_gpu_hour": None if bid is None else money_string(bid), "status": booking.status,
        "started_at": booking.started_at.isoformat(), "ends_at": _iso(booking.ends_at),
        "result_url": booking.result_url, "idempotency_key": booking.idempotency_key,
    }


@router.post(
    "",
    response={200: LaunchOut, 201: LaunchOut, 400: ErrorsOut, 409: LaunchRefusedOut, 422: ErrorsOut,
              **REFUSALS},
    url_name="launches",
    summary="Book one machine, as the review's Confirm does",
)
def launch_one(request, payload: LaunchIn):
    """Books `gpus` GPUs of `machine` after checking it again as Launch does: offered, available, the GPUs
    free, the workload still fitting, and its price per hour unchanged (or, with `bid_per_gpu_hour`, the
    bid within its floor and on-demand price). 201 with the booking; 200 with the same booking when
    `idempotency_key` already booked it; 409 when it cannot be booked now (nothing is booked); 400 for a
    body the schema does not allow; 422 when it cannot be booked as asked: a query the console cannot
    answer (naming the query's field), a bid on a machine booked on demand or reserved, below its floor
    or above its on-demand price (naming `bid_per_gpu_hour`)."""
    params = QueryDict(mutable=True)
    params.update(payload.query)
    bid = payload.bid_per_gpu_hour
    try:
        parse_query(params)
        outcome = launch(
            request.user, machines=[(payload.machine, payload.gpus)],
            shown_price_per_hour=Decimal(payload.price_per_hour), query_string=params.urlencode(),
            idempotency_key=payload.idempotency_key, market=payload.market,
            bid_per_gpu_hour=None if bid is None else Decimal(bid),
        )
    except (GroupInputError, QueryError) as error:  # a refused bid among them (BidRefused), naming it
        return Status(422, {"errors": error.errors})
    except LaunchRefused as refusal:
        if refusal.code == LaunchRefused.INVALID_QUERY:
            return Status(422, {"errors": {"query": refusal.message}})
        return Status(409, {"errors": {"machine": refusal.message}, "code": refusal.code,
                            "result_url": refusal.result_url})
    booked = Booking.objects.select_related("machine__provider", "machine__gpu_type").get(
        pk=outcome.booking.pk
    )
    return Status(201 if outcome.created else 200, booking_out(booked))


def group_out(group: LaunchGroup) -> dict:
    bookings = list(
        group.bookings.select_related("machine__provider", "machine__gpu_type").order_by("machine_id")
    )
    running = any(booking.is_running for booking in bookings)
    return {
        "id": group.pk, "kind": group.kind,
        "status": Booking.Status.RUNNING if running else Booking.Status.ENDED,
        "price_per_hour": money_string(group.price_per_hour), "created_at": group.created_at.isoformat(),
        "result_url": group.result_url, "idempotency_key": group.idempotency_key,
        "bookings": [
            {
                "id": b.pk, "machine_id": b.machine_id, "provider": b.machine.provider.name,
                "provider_machine_id": b.machine.provider_machine_id, "gpu_type": b.machine.gpu_type.name,
                "gpus": b.gpus, "market": b.market, "price_per_gpu_hour": money_string(b.price_per_gpu_hour),
                "price_per_hour": money_string(b.price_per_hour), "status": b.status,
                "started_at": b.started_at.isoformat(), "ends_at": _iso(b.ends_at),
                "ended_at": _iso(b.ended_at),
            }
            for b in bookings
        ],
    }


@router.post(
    "/group",
    response={200: LaunchGroupOut, 201: LaunchGroupOut, 400: ErrorsOut, 409: LaunchGroupRefusedOut,
              422: ErrorsOut, **REFUSALS},
    url_name="launches_group",
    summary="Book a cluster or a throughput plan, every machine or none",
)
def launch_group(request, payload: LaunchGroupIn):
    """Books every machine of `machines` (each with the GPUs it takes) in one transaction, after checking
    each again as Launch does: offered, available, the GPUs free and the total price per hour unchanged;
    a cluster's machines must also be entirely free, identical and fit for a cluster. 201 with the group
    and its bookings; 200 with the same group when `idempotency_key` already booked it; 409 when any
    machine cannot be booked (nothing is booked; the answer names it); 400 for a body the schema does
    not allow; 422 when the console cannot book it as asked: a query it cannot answer or whose values
    do not go together (naming the query's field), a machine listed twice."""
    params = QueryDict(mutable=True)
    params.update(payload.query)
    try:
        check_request(payload.kind, [(m.id, m.gpus) for m in payload.machines])
        parse_query(params)
        outcome = launch(
            request.user, machines=[(m.id, m.gpus) for m in payload.machines],
            shown_price_per_hour=Decimal(payload.price_per_hour), query_string=params.urlencode(),
            idempotency_key=payload.idempotency_key, kind=payload.kind,
            markets={m.id: m.market for m in payload.machines if m.market is not None} or None,
        )
    except (GroupInputError, QueryError) as error:
        return Status(422, {"errors": error.errors})
    except LaunchRefused as refusal:
        if refusal.code == LaunchRefused.INVALID_QUERY:
            return Status(422, {"errors": {"query": refusal.message}})
        return Status(409, {
            "errors": {"group": refusal.message}, "code": refusal.code,
            "machine_id": getattr(refusal, "machine_id", None),
            "provider_machine_id": getattr(refusal, "provider_machine_id", None),
            "result_url": refusal.result_url,
            "next_cluster": next_cluster_after(refusal, payload.kind, params.urlencode()),
        })
    # a cluster or a plan is booked as a group
    return Status(201 if outcome.created else 200, group_out(cast(LaunchGroup, outcome.group)))
