"""Writes of watches: create, pause, resume, delete, unsubscribe; and the readers of what a user
types for one (a price, a number of machines). The checking that fires them is `evaluation.py`'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from nodelodge.recommendations.llamacpp_switches import switch_params
from nodelodge.recommendations.parameters import LIST_ARRANGEMENT
from nodelodge.recommendations.query import QueryError, WorkloadQuery, parse_query
from nodelodge.recommendations.typed_numbers import typed_number
from sizing.i18n import format_number
from sizing.units import NumberNotRead

from . import webhooks
from .models import Watch

MAX_WATCHES_PER_USER = 50
MAX_COOLDOWN_SECONDS = 7 * 24 * 3600
# Fields of a query that only arrange the list shown: a watch leaves them out.
LIST_ONLY = LIST_ARRANGEMENT


class WatchError(Exception):
    """The watch cannot be made as asked: field name -> message in words."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


class WatchLimitReached(WatchError):
    """The owner keeps MAX_WATCHES_PER_USER watches already: nothing is wrong with this one."""

    def __init__(self, message: str):
        super().__init__({"__all__": message})
        self.message = message


def explicit_query(query: WorkloadQuery) -> dict[str, str]:
    """The query's parameters with every default written out (a later change of a default keeps a
    watch's meaning); the list's arrangement (page, limit, grouping) left out."""
    params = query.as_params(page=None, limit=None, group=None, kv_cache=query.kv_bits, sort=query.sort)
    if query.engine == "vllm":  # the release sized, whatever later becomes the current stable one
        params["engine_version"] = query.vllm_release.version.text
    params.update(switch_params(query.engine, query.flash_attention, query.kv_unified, written_out=True))
    if query.target_tokens is not None:
        params["gpu_plans"] = "1" if query.gpu_plans else "0"
    return {key: value for key, value in params.items() if key not in LIST_ONLY}


def query_key(params: dict[str, str]) -> str:
    return "&".join(f"{key}={params[key]}" for key in sorted(params))


def watch_query(watch: Watch) -> WorkloadQuery:
    data = dict(watch.query)
    if data.get("gpu_plans") == "0":
        data.pop("gpu_plans")
    return parse_query(data)


MAX_PRICE = Decimal("1000000")


def _price_messages(field: str) -> tuple[str, str]:
    """What a price field that cannot be read, and one out of range, say: each names its field, with
    figures written as the page's language writes them (5.00 and 1,000,000; 5,00 and 1.000.000)."""
    example, most = format_number(Decimal("5.00")), format_number(int(MAX_PRICE))
    if field == "auto_launch_max_price":
        return (gettext("Enter the Auto-Launch price cap per hour in USD, e.g. %(example)s.")
                % {"example": example},
                gettext("The Auto-Launch price cap per hour must be above 0 and at most %(most)s USD.")
                % {"most": most})
    return (gettext("Enter the price per hour in USD the watch compares with, e.g. %(example)s.")
            % {"example": example},
            gettext("The price per hour must be above 0 and at most %(most)s USD.") % {"most": most})


def _price(value, field: str, number_language: str | None = None) -> Decimal:
    """A price as typed: in the page's language (`typed_numbers.typed_number`: 12,50 on the German page)
    or, with none (the API, the command), a plain dot decimal."""
    unread, out_of_range = _price_messages(field)
    if value is None or not str(value).strip():
        raise WatchError({field: unread})
    try:
        price = typed_number(str(value), number_language)
    except (NumberNotRead, InvalidOperation, ValueError):
        raise WatchError({field: unread}) from None
    if not price.is_finite() or price <= 0 or price > MAX_PRICE:
        raise WatchError({field: out_of_range})
    return price.quantize(Decimal("0.0001"))


def _machines(value, number_language: str | None = None) -> int:
    if number_language is not None and value is not None and str(value).strip():
        number = typed_number(str(value), number_language)  # 1.000 on the German page is 1000
        if number != number.to_integral_value() or number.adjusted() > 9:
            raise ValueError(value)
        return int(number)
    return int(str(value))


@dataclass(frozen=True)
class WatchRequest:
    """What a user asks to watch, as the page, the API and the command pass it."""

    query: dict
    condition: str = Watch.Condition.APPEARS
    price_per_hour: object = None
    machines: object = None
    email: bool = True
    webhook_url: str = ""
    webhook_format: str = Watch.WebhookFormat.JSON
    cooldown_seconds: object = None
    auto_launch: bool = False
    auto_launch_max_price: object = None
    language: str = "en"
    # The page's language whose way of writing numbers the typed fields follow ("12,50" in German);
    # None for the API and the command, which take plain dot decimals.
    number_language: str | None = None


def create_watch(owner, request: WatchRequest, *, now: datetime | None = None) -> Watch:
    """A new active watch for `owner`; WatchError naming each field that is wrong."""
    try:
        query = parse_query(request.query)
    except QueryError as error:
        raise WatchError(dict(error.errors)) from error
    errors: dict[str, str] = {}
    condition = request.condition or Watch.Condition.APPEARS
    price = machines = None
    if condition not in Watch.Condition.values:
        errors["condition"] = gettext("Choose one of: %(choices)s.") % {
            "choices": ", ".join(Watch.Condition.values)
        }
    elif condition in (Watch.Condition.CHEAPEST_BELOW, Watch.Condition.PLAN_BELOW):
        try:
            price = _price(request.price_per_hour, "price_per_hour", request.number_language)
        except WatchError as error:
            errors.update(error.errors)
        if condition == Watch.Condition.PLAN_BELOW and query.target_tokens is None:
            errors["condition"] = gettext("A plan's cost needs a throughput to serve (target_tokens).")
    elif condition == Watch.Condition.AT_LEAST:
        try:
            machines = _machines(request.machines, request.number_language)
            if not 1 <= machines <= 100_000:
                raise ValueError
        except (TypeError, ValueError, ArithmeticError):
            errors["machines"] = gettext("Enter a whole number of machines from 1 to %(most)s.") % {
                "most": format_number(100_000)}
    cooldown = 3600
    if request.cooldown_seconds not in (None, ""):
        try:
            cooldown = int(str(request.cooldown_seconds))
            if not 0 <= cooldown <= MAX_COOLDOWN_SECONDS:
                raise ValueError
        except (TypeError, ValueError):
            errors["cooldown_seconds"] = gettext("The cool-down is a whole number of seconds up to a week.")
    if request.webhook_format not in Watch.WebhookFormat.values:
        errors["webhook_format"] = gettext("Choose one of: %(choices)s.") % {
            "choices": ", ".join(Watch.WebhookFormat.values)
        }
    if request.webhook_url:
        problem = webhooks.url_problem(request.webhook_url)
        if problem:
            errors["webhook_url"] = problem
    cap = None
    if request.auto_launch:
        try:
            cap = _price(request.auto_launch_max_price, "auto_launch_max_price", request.number_language)
        except WatchError as error:
            errors.update(error.errors)
    if errors:
        raise WatchError(errors)
    params = explicit_query(query)
    with transaction.atomic():
        # The owner's row serialises their creations, so two at once cannot pass the limit together.
        get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
        if Watch.objects.filter(owner=owner).count() >= MAX_WATCHES_PER_USER:
            raise WatchLimitReached(gettext("You have %(limit)s watches, the most one account may keep.")
                                    % {"limit": MAX_WATCHES_PER_USER})
        return Watch.objects.create(
            owner=owner, query=params, query_key=query_key(params), condition=condition,
            price_per_hour=price, machines=machines, email=request.email,
            webhook_url=request.webhook_url, webhook_format=request.webhook_format,
            cooldown_seconds=cooldown, auto_launch=bool(request.auto_launch), auto_launch_max_price=cap,
            language=request.language if request.language in ("en", "de") else "en",
            next_check_at=now or timezone.now(),
        )


def _owned(owner, watch_id: int) -> Watch:
    return Watch.objects.get(owner=owner, pk=watch_id)


def pause(owner, watch_id: int) -> Watch:
    watch = _owned(owner, watch_id)
    Watch.objects.filter(pk=watch.pk).update(state=Watch.State.PAUSED, next_check_at=None)
    watch.refresh_from_db()
    return watch


def resume(owner, watch_id: int, *, now: datetime | None = None) -> Watch:
    """Active again; it fires on its next check if its condition holds (and the cool-down passed)."""
    watch = _owned(owner, watch_id)
    Watch.objects.filter(pk=watch.pk).update(
        state=Watch.State.ACTIVE, matching=False, next_check_at=now or timezone.now(),
    )
    watch.refresh_from_db()
    return watch


def delete(owner, watch_id: int) -> None:
    _owned(owner, watch_id).delete()


def unsubscribe(token: str) -> Watch | None:
    """The unsubscribe link's POST: the watch stops mailing (and is paused). None: no such link."""
    watch = Watch.objects.filter(unsubscribe_token=token).first()
    if watch is not None:
        Watch.objects.filter(pk=watch.pk).update(email=False, state=Watch.State.PAUSED, next_check_at=None)
        watch.refresh_from_db()
    return watch
