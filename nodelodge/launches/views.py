"""Launch, My launches, Stop, and sign-up. Thin: parse, call a service or selector, answer.

Launch and Stop are plain POST forms that work without JavaScript (303 to the next page); an HTMX
request gets an HX-Redirect to the same page instead, or the refusal as a fragment.
"""
from __future__ import annotations

import uuid
from decimal import Decimal
from typing import cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpResponseBadRequest, HttpResponseRedirect, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext, ngettext
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from nodelodge.accounts.views import tokens_context
from nodelodge.refresh.selectors import gpu_history_paths
from nodelodge.wizard.rows import add_cluster_words, add_row_words
from sizing.i18n import format_number
from sizing.results import machine_row
from sizing.units import money_amount, money_text

from . import booking, holding, selectors
from . import review as reviews
from .alternatives import next_cluster_after
from .forms import GroupLaunchForm, GroupReviewForm, LaunchForm, ReviewForm
from .models import ALONE, LaunchGroup
from .my_launches import more_context
from .refusals import BID_FIELD, BidRefused, GroupInputError, LaunchRefused


def review_url(machine: int, gpus: int, price_per_hour, query_string: str) -> str:
    params = QueryDict(mutable=True)
    params.update({"machine": str(machine), "gpus": str(gpus), "price_per_hour": price_per_hour,
                   "query": query_string})
    return f"{reverse('launches:review')}?{params.urlencode()}"


@require_GET
def review(request):
    """The step between Launch and booking: exactly what Confirm books. Signing in comes back here."""
    form = ReviewForm(request.GET)
    if not form.is_valid():
        return HttpResponseBadRequest(
            gettext("This Launch link is incomplete; go back to the result and try again.")
        )
    data = form.cleaned_data
    if not request.user.is_authenticated:
        messages.info(request, gettext("Sign in to launch; you will come back to this review."))
        return redirect_to_login(request.get_full_path())
    return _review_page(request, data, uuid.uuid4().hex)


def _review_page(request, data: dict, idempotency_key: str, *, bid_text: str | None = None,
                 bid_error: str | None = None, status: int = 200, bid: Decimal | None = None):
    """The review of a machine alone: its bid (booked interruptible) at the floor, or as typed and
    refused beside its field when Confirm came back with it (`bid_text`, `bid_error`; `bid`, the bid
    read, which what the budget covers is worked out at)."""
    try:
        summary = reviews.review(
            ALONE, [(data["machine"], data["gpus"])], data["price_per_hour"], data["query"], bid=bid
        )
    except LaunchRefused as refusal:
        context = {"refusal": refusal, "alternatives": [], "query_string": data["query"]}
        return render(request, "launches/refused.html", context, status=409)
    if bid_text is None and summary.bid_floor is not None:
        bid_text = format_number(money_amount(summary.bid_floor), grouping=False)  # as the page writes it
    return render(
        request,
        "launches/review.html",
        {
            "review": summary,
            "query_string": QueryDict(data["query"]).urlencode(),
            "idempotency_key": idempotency_key,
            "bid_text": bid_text or "",
            "bid_error": bid_error,
        },
        status=status,
    )


def _see_other(request, url: str):
    if request.htmx:
        return HttpResponseClientRedirect(url)
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response


@require_POST
def launch(request):
    query_string = QueryDict(request.POST.get("query", "")).urlencode()
    result_url = f"{reverse('wizard:start')}?{query_string}"
    form = LaunchForm(request.POST, number_language=request.LANGUAGE_CODE)
    if not request.user.is_authenticated:
        # Back to the review of the same machine after signing in (the POST itself is not
        # replayed); to the result when the form cannot say which machine.
        review = ReviewForm(request.POST)
        back_to = result_url
        if review.is_valid():
            data = review.cleaned_data
            back_to = review_url(data["machine"], data["gpus"], data["price_per_hour"], query_string)
        messages.info(request, gettext("Sign in to launch; you will come back to this review."))
        return redirect_to_login(back_to)
    typed_bid = request.POST.get(BID_FIELD, "")
    if not form.is_valid():
        if set(form.errors) == {BID_FIELD}:  # the one field typed: the review again, the bid beside it
            return _review_page(request, form.cleaned_data, form.cleaned_data["idempotency_key"],
                                bid_text=typed_bid, bid_error=str(form.errors[BID_FIELD][0]), status=400)
        return HttpResponseBadRequest(
            gettext("This Launch form is incomplete; reload the result and try again.")
        )
    data = form.cleaned_data
    try:
        outcome = booking.launch(
            request.user,
            machines=[(data["machine"], data["gpus"])],
            shown_price_per_hour=data["price_per_hour"],
            query_string=data["query"],
            idempotency_key=data["idempotency_key"],
            market=data["market"] or None,
            bid_per_gpu_hour=data[BID_FIELD],
        )
    except BidRefused as refusal:  # a conflict with the machine now: nothing booked, nothing typed lost
        return _review_page(request, data, data["idempotency_key"], bid_text=typed_bid,
                            bid_error=refusal.errors[BID_FIELD], status=422, bid=data[BID_FIELD])
    except LaunchRefused as refusal:
        alternatives = []
        if refusal.alternative is not None:
            # Shown as a row of the result's own table, with a fresh Launch form; its GPU name links to
            # its price history, as the result's rows do.
            alternative = machine_row(refusal.alternative)
            alternative["idempotency_key"] = uuid.uuid4().hex
            alternatives.append(alternative)
            add_row_words(alternatives, history_paths=gpu_history_paths([refusal.alternative]))
        context = {"refusal": refusal, "alternatives": alternatives, "query_string": query_string}
        if request.htmx:
            return render(request, "launches/refused.html#refusal", context)
        return render(request, "launches/refused.html", context, status=409)
    booked = outcome.booking
    if outcome.created:
        messages.success(
            request,
            gettext("Launched: %(gpus)s × %(gpu_type)s on %(provider)s %(machine)s at %(price)s/h.") % {
                "gpus": booked.gpus, "gpu_type": booked.machine.gpu_type.name,
                "provider": booked.machine.provider.name, "machine": booked.machine.provider_machine_id,
                "price": money_text(booked.price_per_hour),
            },
        )
    return _see_other(request, reverse("launches:list"))


@login_required
@require_GET
def booking_list(request):
    # Bookings past their booking limit end before the list is read (beat ends them too).
    holding.end_expired_bookings(user=request.user)
    rows = selectors.bookings_for(request.user, alone=True)
    groups = selectors.groups_for(request.user)
    return render(
        request,
        "launches/list.html",
        {
            "running": [row for row in rows if row.booking.is_running],
            "ended": [row for row in rows if not row.booking.is_running],
            "running_groups": [row for row in groups if row.is_running],
            "ended_groups": [row for row in groups if not row.is_running],
            **more_context(request),
            **tokens_context(request),
        },
    )


@require_http_methods(["GET", "POST"])
def stop(request, pk: int):
    """GET asks for confirmation (what stops, what it has cost); POST stops."""
    if not request.user.is_authenticated:
        return redirect_to_login(reverse("launches:list"))
    if request.method == "GET":
        row = selectors.booking_for(request.user, pk)
        if row is None:
            raise Http404(gettext("No such booking."))
        if row.booking.group_id is not None:  # stops with its group: that page says what stops
            return redirect("launches:group_stop", row.booking.group_id)
        return render(request, "launches/stop.html", {"row": row})
    try:
        outcome = holding.stop(request.user, pk)
    except holding.BookingNotFound:
        raise Http404(gettext("No such booking.")) from None
    stopped = outcome.booking
    if outcome.stopped:
        messages.success(
            request,
            ngettext(
                "Stopped. %(gpus)s GPU on %(provider)s %(machine)s freed.",
                "Stopped. %(gpus)s GPUs on %(provider)s %(machine)s freed.",
                stopped.gpus,
            ) % {
                "gpus": stopped.gpus, "provider": stopped.machine.provider.name,
                "machine": stopped.machine.provider_machine_id,
            },
        )
    else:
        messages.info(request, gettext("That booking had already ended."))
    return _see_other(request, reverse("launches:list"))


# --- Groups: a cluster or a throughput plan, booked all or nothing --------------------------------


def group_review_context(data: dict) -> dict:
    return {"kind": data["kind"], "machines": ",".join(f"{i}:{g}" for i, g in data["machines"]),
            "query_string": QueryDict(data["query"]).urlencode()}


def _group_refused(request, refusal, kind: str, query_string: str = ""):
    context = {"refusal": refusal, "kind": kind, "query_string": query_string}
    row = next_cluster_after(refusal, kind, query_string)
    if row is not None:  # listed as the result lists clusters
        add_cluster_words([row])
        context["next_cluster"] = {"clusters": [row], "clusters_total": 1, "clusters_note": None}
    if request.htmx:
        return render(request, "launches/group_refused.html#refusal", context, status=409)
    return render(request, "launches/group_refused.html", context, status=409)


def _group_form(request, form_class):
    """The group's form read, or the answer instead: sign in first (back to the result), or 400 for a
    form that is incomplete."""
    if not request.user.is_authenticated:
        query_string = QueryDict(request.POST.get("query", "")).urlencode()
        messages.info(request, gettext("Sign in to launch; then press the button on the result again."))
        return None, redirect_to_login(f"{reverse('wizard:start')}?{query_string}")
    form = form_class(request.POST)
    if not form.is_valid():
        return None, HttpResponseBadRequest(
            gettext("This Launch form is incomplete; reload the result and try again.")
        )
    return form.cleaned_data, None


# Exempt from CSRF: it books nothing (the review's Confirm is a protected POST). It is a POST because
# a plan may list thousands of machines, more than an address carries; the button sits in the
# result, which is served to every client from one copy, so it carries no client's token.
@csrf_exempt
@require_POST
def group_review(request):
    """The step between "Launch cluster" / "Launch this plan" and booking: exactly what Confirm books."""
    data, answer = _group_form(request, GroupReviewForm)
    if answer is not None:
        return answer
    try:
        summary = reviews.review(data["kind"], data["machines"], data["price_per_hour"], data["query"])
    except GroupInputError as error:
        return HttpResponseBadRequest(" ".join(error.errors.values()))
    except LaunchRefused as refusal:
        return _group_refused(request, refusal, data["kind"], QueryDict(data["query"]).urlencode())
    return render(request, "launches/group_review.html", {
        "review": summary, **group_review_context(data), "idempotency_key": uuid.uuid4().hex,
    })


@require_POST
def group_launch(request):
    """Confirm on the group's review: books every machine or none."""
    data, answer = _group_form(request, GroupLaunchForm)
    if answer is not None:
        return answer
    try:
        outcome = booking.launch(
            request.user, machines=data["machines"], shown_price_per_hour=data["price_per_hour"],
            query_string=data["query"], idempotency_key=data["idempotency_key"], kind=data["kind"],
            markets=data["markets"] or None,
        )
    except GroupInputError as error:
        return HttpResponseBadRequest(" ".join(error.errors.values()))
    except LaunchRefused as refusal:
        return _group_refused(request, refusal, data["kind"], QueryDict(data["query"]).urlencode())
    if outcome.created:
        group = cast(LaunchGroup, outcome.group)  # a cluster or a plan is booked as a group
        machines = len(data["machines"])
        if group.kind == "cluster":
            text = ngettext("Launched a cluster of %(machines)s machine at %(price)s/h.",
                            "Launched a cluster of %(machines)s machines at %(price)s/h.", machines)
        else:
            text = ngettext("Launched the plan: %(machines)s machine at %(price)s/h.",
                            "Launched the plan: %(machines)s machines at %(price)s/h.", machines)
        messages.success(request, text % {"machines": machines, "price": money_text(group.price_per_hour)})
    return _see_other(request, reverse("launches:list"))


@require_http_methods(["GET", "POST"])
def group_stop(request, pk: int):
    """GET asks for confirmation (every machine that stops, what the group has cost); POST stops all."""
    if not request.user.is_authenticated:
        return redirect_to_login(reverse("launches:list"))
    if request.method == "GET":
        row = selectors.group_for(request.user, pk)
        if row is None:
            raise Http404(gettext("No such booking."))
        return render(request, "launches/group_stop.html", {"row": row})
    try:
        outcome = holding.stop(request.user, group_id=pk)
    except holding.BookingNotFound:
        raise Http404(gettext("No such booking.")) from None
    if outcome.stopped:
        gpus = sum(booking.gpus for booking in outcome.bookings)
        messages.success(request, ngettext(
            "Stopped. %(gpus)s GPU on %(machines)s machines freed.",
            "Stopped. %(gpus)s GPUs on %(machines)s machines freed.", gpus,
        ) % {"gpus": gpus, "machines": len(outcome.bookings)})
    else:
        messages.info(request, gettext("That booking had already ended."))
    return _see_other(request, reverse("launches:list"))
