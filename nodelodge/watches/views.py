"""The watches' pages: the unsubscribe link (no sign-in), the Atom feed, and the owner's actions.

The unsubscribe link only shows a page with a button: a link scanner that opens it changes nothing;
the button's POST unsubscribes. Its token is the whole authority, so it needs no sign-in and no CSRF
cookie of a session (the form is exempt, the token is the secret).
"""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.translation import gettext
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

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
        watch = services.unsubscribe(token)
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


@require_POST
def create(request):
    """"Watch this result": signing in on the way comes back to the result, to press it again."""
    if not request.user.is_authenticated:
        from django.contrib.auth.views import redirect_to_login
        from django.urls import reverse

        messages.info(request, gettext("Sign in to watch this result."))
        return redirect_to_login(f"{reverse('wizard:start')}?{request.POST.get('query', '')}")
    try:
        services.create_watch(request.user, services.WatchRequest(
            query=_query(request.POST.get("query", "")),
            condition=request.POST.get("condition") or Watch.Condition.APPEARS,
            price_per_hour=request.POST.get("price_per_hour"),
            machines=request.POST.get("machines"),
            webhook_url=(request.POST.get("webhook_url") or "").strip(),
            webhook_format=request.POST.get("webhook_format") or Watch.WebhookFormat.JSON,
            auto_launch=bool(request.POST.get("auto_launch")),
            auto_launch_max_price=request.POST.get("auto_launch_max_price"),
            language=request.LANGUAGE_CODE,
        ))
    except services.WatchError as error:
        for message in error.errors.values():
            messages.error(request, message)
    else:
        messages.success(request, gettext("Watching this result. You will get an e-mail when it matches."))
    return redirect("launches:list")


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
            services.delete(request.user, pk)
        else:
            raise Http404
    except Watch.DoesNotExist:
        raise Http404 from None
    return redirect("launches:list")


@login_required
@require_POST
def token_create(request):
    """A new API token for scripts, shown once on My launches (kept in the session for that one page)."""
    from . import tokens

    _row, token = tokens.create_token(request.user)
    request.session["new_api_token"] = token
    return redirect("launches:list")


@login_required
@require_POST
def token_revoke(request, pk: int):
    from . import tokens

    if not tokens.revoke(request.user, pk):
        raise Http404
    return redirect("launches:list")


def list_context(request) -> dict:
    """What My launches shows of watches and API tokens (the new token once)."""
    from .models import ApiToken

    return {
        "watches": list(selectors.watches_of(request.user)),
        "api_tokens": list(ApiToken.objects.filter(owner=request.user)),
        "new_api_token": request.session.pop("new_api_token", None),
    }
