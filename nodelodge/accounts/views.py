"""Accounts' pages: sign-up and its e-mailed link, and the API tokens made on My launches."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods, require_POST

from nodelodge.hardening.mail_limit import signup_rate_limited

from . import signup as signups
from . import tokens
from .forms import SignUpForm
from .models import ApiToken


def _safe_next(request) -> str:
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(next_url, {request.get_host()}, request.is_secure()):
        return ""
    return next_url


@require_http_methods(["GET", "POST"])
@signup_rate_limited
def signup(request):
    next_url = _safe_next(request)
    if request.user.is_authenticated:
        return redirect(next_url or "wizard:start")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        signups.request_signup(
            data["username"], data["email"], data["password1"], next_url, request.build_absolute_uri("/")
        )
        # The same answer whether the username was free or taken: the e-mail says which.
        return render(request, "registration/signup_sent.html", {"email": data["email"]})
    return render(request, "registration/signup.html", {"form": form, "next": next_url})


@require_http_methods(["GET", "POST"])
def signup_confirm(request, uidb64: str, token: str):
    """The e-mailed link: a page with one button (mail scanners that open links change nothing);
    pressing it activates the account and signs in."""
    next_url = _safe_next(request)
    user = signups.pending_user(uidb64, token)
    if user is None:
        return render(request, "registration/signup_confirm.html", {"valid": False}, status=400)
    if request.method == "POST":
        signups.activate(user)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(
            request,
            gettext("Welcome, %(username)s. Your account is ready.") % {"username": user.get_username()},
        )
        return redirect(next_url or "wizard:start")
    # `pending`, not `user`: the page's header shows who is signed in, and this account is not yet.
    context = {"valid": True, "pending": user, "next": next_url}
    return render(request, "registration/signup_confirm.html", context)


@login_required
@require_POST
def token_create(request):
    """A new API token for scripts, shown once on My launches (kept in the session for that one page)."""
    _row, token = tokens.create_token(request.user)
    request.session["new_api_token"] = token
    return redirect("launches:list")


@login_required
@require_POST
def token_revoke(request, pk: int):
    if not tokens.revoke(request.user, pk):
        raise Http404
    return redirect("launches:list")


def tokens_context(request) -> dict:
    """What My launches shows of API tokens (the new token once)."""
    return {
        "api_tokens": list(ApiToken.objects.filter(owner=request.user)),
        "new_api_token": request.session.pop("new_api_token", None),
    }
