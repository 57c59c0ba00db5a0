"""`/api/v1/watches`: create, list and delete the signed-in user's watches (session, or a token from
My launches: `Authorization: Bearer nlt_…`). Rate-limited as the rest of the API."""
from __future__ import annotations

from django.utils.translation import get_language, gettext
from ninja import Router, Schema, Status
from ninja.security import HttpBearer, django_auth

from . import selectors, services, tokens
from .models import Watch


class TokenAuth(HttpBearer):
    def authenticate(self, request, token):
        user = tokens.user_for(token)
        if user is not None:
            request.user = user
        return user


router = Router(auth=[TokenAuth(), django_auth], tags=["watches"])


class WatchIn(Schema):
    query: dict[str, str]
    condition: str = "appears"
    price_per_hour: str | None = None
    machines: int | None = None
    email: bool = True
    webhook_url: str = ""
    webhook_format: str = "json"
    cooldown_seconds: int | None = None
    auto_launch: bool = False
    auto_launch_max_price: str | None = None
    language: str | None = None


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


class ErrorsOut(Schema):
    errors: dict[str, str]


class DetailOut(Schema):
    """Not signed in (401), or a session's request without its CSRF token (403)."""

    detail: str


# What every operation may answer besides: no session or token, no CSRF token, the rate limit.
REFUSALS = {401: DetailOut, 403: DetailOut, 429: ErrorsOut}


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


@router.post("", response={201: WatchOut, 400: ErrorsOut, **REFUSALS}, url_name="watches_create")
def create_watch(request, payload: WatchIn):
    data = payload.dict()
    language = data.pop("language") or (get_language() or "en")[:2]
    try:
        watch = services.create_watch(request.user, services.WatchRequest(language=language, **data))
    except services.WatchError as error:
        return Status(400, {"errors": error.errors})
    return Status(201, watch_out(watch))


@router.delete("/{watch_id}", response={204: None, 404: ErrorsOut, **REFUSALS}, url_name="watch")
def delete_watch(request, watch_id: int):
    try:
        services.delete(request.user, watch_id)
    except Watch.DoesNotExist:
        return Status(404, {"errors": {"watch": gettext("No such watch.")}})
    return Status(204, None)
