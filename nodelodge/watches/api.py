"""`/api/v1/watches`: create, list and delete the signed-in user's watches (session, or a token from
My launches: `Authorization: Bearer nlt_…`). Rate-limited as the rest of the API.

The body's schema states each field as the console reads it (`hardening/api_input.py`): a body it does
not allow is 400 naming the field; one it allows that cannot be a watch is 422 (a query the console
cannot answer, naming the query's field; a condition without its price; a webhook address it will not
call), and 409 when the account already keeps the most watches it may."""
from __future__ import annotations

from typing import Annotated, Literal

from django.utils.translation import get_language, gettext, gettext_lazy
from ninja import Field, Router, Schema, Status

from nodelodge.accounts.api import REFUSALS, ErrorsOut, TokenAuth
from nodelodge.hardening.api_auth import session_auth
from nodelodge.hardening.api_input import BodyIn, WizardQuery, whole_number, worded

from . import selectors, services
from .models import Watch

router = Router(auth=[TokenAuth(), session_auth], tags=["watches"])

# A price per hour in USD as a decimal string: above 0, at most 1,000,000, at most 4 decimals.
WATCH_PRICE_PATTERN = (
    r"^(?:[1-9][0-9]{0,5}(?:\.[0-9]{1,4})?|1000000(?:\.0{1,4})?"
    r"|0\.(?:[1-9][0-9]{0,3}|0[1-9][0-9]{0,2}|00[1-9][0-9]?|000[1-9]))$"
)
WATCH_PRICE_MESSAGE = gettext_lazy(
    "Enter a price per hour in USD above 0 and at most 1000000, with at most 4 decimals, e.g. 5.00."
)
WatchPrice = Annotated[
    str, Field(pattern=WATCH_PRICE_PATTERN, description="USD per hour, e.g. \"5.00\": above 0, at most "
               "1000000, at most 4 decimals."),
    worded(WATCH_PRICE_MESSAGE),
]


class WatchIn(BodyIn):
    query: WizardQuery
    condition: Literal[tuple(Watch.Condition.values)] = Field(
        "appears", description="cheapest_below and plan_below need price_per_hour; at_least "
        "needs machines; plan_below needs target_tokens in the query; below_median compares the "
        "cheapest machine's price per GPU-hour with its GPU type's 30-day median in its market.",
    )
    price_per_hour: WatchPrice | None = None
    machines: Annotated[whole_number(ge=1, le=100_000), worded(gettext_lazy(
        "Enter a whole number of machines from 1 to 100,000."))] | None = None
    email: bool = True
    webhook_url: str = Field("", max_length=2000, description="An https:// address of a public host, or \"\" "
                             "for none; one the console will not call is 422.")
    webhook_format: Literal[tuple(Watch.WebhookFormat.values)] = "json"
    cooldown_seconds: Annotated[whole_number(ge=0, le=services.MAX_COOLDOWN_SECONDS), worded(
        gettext_lazy("The cool-down is a whole number of seconds up to a week."))] | None = None
    auto_launch: bool = False
    auto_launch_max_price: WatchPrice | None = Field(None, description="Needed with auto_launch.")
    language: Literal["en", "de"] | None = Field(None, description="The language of its messages; "
                                                "null: the request's.")


class WatchOut(Schema):
    id: int
    query: dict
    condition: str
    price_per_hour: str | None
    machines: int | None
    state: str
    email: bool
    webhook_url: str
    webhook_format: str
    webhook_disabled_reason: str
    cooldown_seconds: int
    auto_launch: bool
    auto_launch_max_price: str | None
    last_fired_at: str | None
    next_check_at: str | None
    feed_url: str
    secret: str


def watch_out(watch: Watch) -> dict:
    from .delivery import links

    return {
        "id": watch.pk, "query": watch.query, "condition": watch.condition,
        "price_per_hour": None if watch.price_per_hour is None else str(watch.price_per_hour),
        "machines": watch.machines, "state": watch.state, "email": watch.email,
        "webhook_url": watch.webhook_url, "webhook_format": watch.webhook_format,
        "webhook_disabled_reason": watch.webhook_disabled_reason, "cooldown_seconds": watch.cooldown_seconds,
        "auto_launch": watch.auto_launch,
        "auto_launch_max_price": (
            None if watch.auto_launch_max_price is None else str(watch.auto_launch_max_price)
        ),
        "last_fired_at": watch.last_fired_at.isoformat() if watch.last_fired_at else None,
        "next_check_at": watch.next_check_at.isoformat() if watch.next_check_at else None,
        "feed_url": links(watch)["feed"], "secret": watch.secret,
    }


@router.get("", response={200: list[WatchOut], **REFUSALS}, url_name="watches")
def list_watches(request):
    return [watch_out(watch) for watch in selectors.watches_of(request.user)]


@router.post(
    "", response={201: WatchOut, 400: ErrorsOut, 409: ErrorsOut, 422: ErrorsOut, **REFUSALS},
    url_name="watches_create",
)
def create_watch(request, payload: WatchIn):
    """A new active watch: 201 with it; 400 for a body the schema does not allow; 422 when the console
    cannot make it as asked (each field named in words); 409 when the account keeps the most watches
    it may."""
    data = payload.dict()
    language = data.pop("language") or (get_language() or "en")[:2]
    try:
        watch = services.create_watch(request.user, services.WatchRequest(language=language, **data))
    except services.WatchLimitReached as error:
        return Status(409, {"errors": {"watches": error.message}})
    except services.WatchError as error:
        return Status(422, {"errors": error.errors})
    return Status(201, watch_out(watch))


# A whole number or no such address (404): `/watches/null` names no watch.
@router.delete("/{int:watch_id}", response={204: None, 404: ErrorsOut, **REFUSALS}, url_name="watch")
def delete_watch(request, watch_id: int):
    try:
        services.delete(request.user, watch_id)
    except Watch.DoesNotExist:
        return Status(404, {"errors": {"watch": gettext("No such watch.")}})
    return Status(204, None)
