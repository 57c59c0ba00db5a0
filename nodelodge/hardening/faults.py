"""Clear answers when the database cannot be reached, instead of a traceback.

A page or API call that needs the database and cannot get it answers 503 with a short reason and a
Retry-After; the browser gets a plain page (it renders without the session or the signed-in user,
both of which live in the database), scripts get the API's usual `{"errors": {...}}` shape.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext_lazy

logger = logging.getLogger("nodelodge.faults")

# OperationalError covers "cannot connect", a connection killed midway and a server shutting
# down; InterfaceError a connection Django already knows is closed. All are worth retrying later.
DATABASE_DOWN_ERRORS = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 30
DATABASE_DOWN_MESSAGE = gettext_lazy(
    "The console's database is not answering right now. Nothing was changed; try again in a minute."
)


def log_database_unavailable(request, exception) -> None:
    logger.error("database unavailable on %s %s: %s", request.method, request.path, exception)


def database_unavailable_json() -> JsonResponse:
    response = JsonResponse({"errors": {"service": str(DATABASE_DOWN_MESSAGE)}}, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def _stylesheet_url() -> str:
    # This page must render when other things are broken too, a missing static manifest included.
    try:
        return static("css/console.css")
    except ValueError:
        return settings.STATIC_URL + "css/console.css"


def _home_url() -> str:
    # The wizard in the page's language; reversing reads no database.
    try:
        return reverse("wizard:start")
    except NoReverseMatch:
        return "/"


def unavailable_page(message, retry_after: int = RETRY_AFTER_SECONDS) -> HttpResponse:
    """The 503 page with `message` (the database is down; the proxy has given up on the request),
    drawn without the database, with Retry-After."""
    html = render_to_string(
        "hardening/database_unavailable.html",
        {"message": message, "stylesheet": _stylesheet_url(), "home": _home_url()},
    )
    response = HttpResponse(html, status=503)
    response["Retry-After"] = str(retry_after)
    return response


def database_unavailable_page() -> HttpResponse:
    return unavailable_page(DATABASE_DOWN_MESSAGE)


def database_unavailable_response(request) -> HttpResponse:
    wants_json = request.path_info.startswith("/api/") or "application/json" in request.headers.get(
        "Accept", ""
    )
    return database_unavailable_json() if wants_json else database_unavailable_page()


class DatabaseUnavailableMiddleware:
    """Turns a database that cannot be reached into a 503 (views and template rendering alike)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, DATABASE_DOWN_ERRORS):
            return None
        log_database_unavailable(request, exception)
        return database_unavailable_response(request)
