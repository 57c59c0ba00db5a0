"""The watches' pages: the unsubscribe link (no sign-in), the Atom feed, and the owner's actions.

The unsubscribe link only shows a page with a button: a link scanner that opens it changes nothing;
the button's POST unsubscribes. Its token is the whole authority, so it needs no sign-in and no CSRF
cookie of a session (the form is exempt, the token is the secret).
"""
from __future__ import annotations

from typing import cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse_lazy
from django.utils.translation import gettext
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from nodelodge.field_values import FieldValues

from . import delivery, selectors, services
from .models import Watch


@csrf_exempt
@require_http_methods(["GET", "POST"])
def unsubscribe(request, token: str):
    watch = selectors.watch_by_unsubscribe_token(token)
    if watch is None:
        raise Http404
    done = False
    if request.method == "POST":
        watch = cast(Watch, services.unsubscribe(token))  # the token's watch, found above
        done = True
    return render(request, "watches/unsubscribe.html", {"watch": watch, "done": done,
                                                         "result_url": delivery.result_url(watch)})


@require_GET
def feed(request, token: str):
    watch = selectors.watch_by_feed_token(token)
    if watch is None:
        raise Http404
    firings = selectors.recent_firings(watch)
    body = render_to_string("watches/feed.xml", {
        "watch": watch, "firings": [(f, delivery.summary(watch, f)) for f in firings],
        "feed_url": request.build_absolute_uri(), "result_url": delivery.result_url(watch),
        "updated": firings[0].fired_at if firings else watch.created_at,
    })
    return HttpResponse(body, content_type="application/atom+xml; charset=utf-8")


FORM_FIELDS = ("condition", "price_per_hour", "machines", "webhook_url", "webhook_format", "auto_launch",
               "auto_launch_max_price")
# Fields the form shows beside their input; any other refusal (the query's, the account's limit) is
# said at the form's top.
FIELD_ERRORS = ("condition", "price_per_hour", "machines", "webhook_url", "webhook_format",
                "auto_launch_max_price")


@require_POST
def create(request):
    """"Watch this result": signing in on the way comes back to the result, to press it again. A refusal
    shows the result again with each message beside its field and everything typed kept (the form
    alone for htmx, the whole result page without JavaScript); money is read in the page's language."""
    if not request.user.is_authenticated:
        from django.contrib.auth.views import redirect_to_login
        from django.urls import reverse

        messages.info(request, gettext("Sign in to watch this result."))
        return redirect_to_login(f"{reverse('wizard:start')}?{request.POST.get('query', '')}")
    values = {name: (request.POST.get(name) or "").strip() for name in FORM_FIELDS}
    try:
        services.create_watch(request.user, services.WatchRequest(
            query=_query(request.POST.get("query", "")),
            condition=values["condition"] or Watch.Condition.APPEARS,
            price_per_hour=values["price_per_hour"],
            machines=values["machines"],
            webhook_url=values["webhook_url"],
            webhook_format=values["webhook_format"] or Watch.WebhookFormat.JSON,
            auto_launch=bool(values["auto_launch"]),
            auto_launch_max_price=values["auto_launch_max_price"],
            language=request.LANGUAGE_CODE,
            number_language=request.LANGUAGE_CODE,
        ))
    except services.WatchError as error:
        return _refused(request, values, error.errors)
    messages.success(request, gettext("Watching this result. You will get an e-mail when it matches."))
    if request.htmx:
        from django_htmx.http import HttpResponseClientRedirect

        return HttpResponseClientRedirect(str(reverse_lazy("launches:list")))
    # Its own fragment, else the browser keeps the form's (#watch) on My launches.
    return redirect(f"{reverse_lazy('launches:list')}#watches-heading")


def _refused(request, values: dict, errors: dict):
    shown = {name: message for name, message in errors.items() if name in FIELD_ERRORS}
    shown["general"] = [message for name, message in errors.items() if name not in FIELD_ERRORS]
    context = {"watch_values": FieldValues(values), "watch_errors": FieldValues(shown)}
    query_string = request.POST.get("query", "")
    if request.htmx:
        # The form alone, swapped in place (htmx swaps only 2xx, as the wizard's own fields do).
        return render(request, "watches/_watch_form.html", {
            **context, "query_string": query_string,
            "data": {"machines_total": bool(request.POST.get("shown_matches"))},
            "result": {"throughput": bool(request.POST.get("shown_plan"))},
        })
    from django.http import QueryDict

    from nodelodge.wizard.views import wizard_page_with

    request.GET = QueryDict(query_string)
    return wizard_page_with(request, context)


def _query(query_string: str) -> dict:
    from django.http import QueryDict

    data = QueryDict(query_string)
    return {key: data.get(key) for key in data}


@login_required
@require_POST
def act(request, pk: int, action: str):
    try:
        if action == "pause":
            services.pause(request.user, pk)
        elif action == "resume":
            services.resume(request.user, pk)
        elif action == "delete":
            # The list's Delete asks first: a page naming the watch with a second button that posts
            # `confirmed` (no JavaScript needed); only that second POST deletes.
            if not request.POST.get("confirmed"):
                watch = Watch.objects.get(owner=request.user, pk=pk)
                return render(request, "watches/delete.html", {"watch": watch})
            services.delete(request.user, pk)
            messages.success(request, gettext("The watch was deleted."))
        else:
            raise Http404
    except Watch.DoesNotExist:
        raise Http404 from None
    return redirect("launches:list")


def list_context(request) -> dict:
    """What My launches shows of watches (`nodelodge.launches.my_launches`; its API tokens are
    Accounts')."""
    return {"watches": list(selectors.watches_of(request.user))}
