"""`POST /api/v1/launches/group`: book a cluster or a throughput plan all or nothing, for the signed-in
user (session with its CSRF token, or a token from My launches: `Authorization: Bearer nlt_…`)."""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from django.http import QueryDict
from django.utils.translation import gettext
from ninja import Router, Schema, Status
from ninja.security import django_auth

from nodelodge.recommendations.query import parse_query
from nodelodge.watches.api import REFUSALS, ErrorsOut, TokenAuth
from sizing.limits import MAX_MONEY
from sizing.units import money_string

from . import services
from .models import IDEMPOTENCY_KEY, Booking, LaunchGroup

router = Router(auth=[TokenAuth(), django_auth], tags=["launches"])


class GroupMachineIn(Schema):
    id: int
    gpus: int


class LaunchGroupIn(Schema):
    kind: str  # "cluster" or "plan"
    machines: list[GroupMachineIn]
    price_per_hour: str  # the total per hour the result showed, USD
    query: dict[str, str]  # the result's query, as the wizard's parameters
    idempotency_key: str  # 8 to 64 of A-Z a-z 0-9 _ -; the same key books once


class LaunchGroupBookingOut(Schema):
    id: int
    machine_id: int
    provider: str
    provider_machine_id: str
    gpu_type: str
    gpus: int
    price_per_hour: str
    status: str
    started_at: str
    ends_at: str | None
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
                "gpus": b.gpus, "price_per_hour": money_string(b.price_per_hour), "status": b.status,
                "started_at": b.started_at.isoformat(), "ends_at": _iso(b.ends_at),
                "ended_at": _iso(b.ended_at),
            }
            for b in bookings
        ],
    }


def _price(text: str) -> Decimal:
    try:
        price = Decimal(text.strip())
    except InvalidOperation:
        price = None
    if price is None or not price.is_finite() or not 0 <= price <= MAX_MONEY:
        raise services.GroupInputError(
            {"price_per_hour": gettext("Enter the price per hour as a number of USD.")}
        )
    return price


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
    machine cannot be booked (nothing is booked; the answer names it); 400 for bad input; 422 when
    the query's values do not go together."""
    if not re.fullmatch(IDEMPOTENCY_KEY, payload.idempotency_key):
        return Status(400, {"errors": {"idempotency_key": gettext(
            "Send 8 to 64 letters, digits, '_' or '-', new for each booking."
        )}})
    try:
        price = _price(payload.price_per_hour)
        services.check_group_request(payload.kind, [(m.id, m.gpus) for m in payload.machines])
        params = QueryDict(mutable=True)
        params.update(payload.query)
        parse_query(params)  # a bad query is answered 400/422 naming its fields (the API's handlers)
        outcome = services.launch_group(
            request.user, machines=[(m.id, m.gpus) for m in payload.machines], shown_price_per_hour=price,
            query_string=params.urlencode(), idempotency_key=payload.idempotency_key, kind=payload.kind,
        )
    except services.GroupInputError as error:
        return Status(400, {"errors": error.errors})
    except services.LaunchRefused as refusal:
        if refusal.code == services.LaunchRefused.INVALID_QUERY:
            return Status(422, {"errors": {"query": refusal.message}})
        return Status(409, {
            "errors": {"group": refusal.message}, "code": refusal.code,
            "machine_id": getattr(refusal, "machine_id", None),
            "provider_machine_id": getattr(refusal, "provider_machine_id", None),
            "result_url": refusal.result_url,
            "next_cluster": services.next_cluster_after(refusal, payload.kind, params.urlencode()),
        })
    return Status(201 if outcome.created else 200, group_out(outcome.group))
