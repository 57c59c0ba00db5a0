"""The API answers in JSON whatever goes wrong: an unknown path, an unexpected error.

Every error the API answers has one shape, `{"errors": {field or topic: message}}`: a field of the
request (`context`, `machines.0.gpus`) or a topic (`auth`, `csrf`, `body`, `method`, `path`,
`request`, `server`, `service`). Inside the API, django-ninja hands an exception no other handler
takes to `unexpected_api_error`; outside it (a middleware failing before the API is reached, an
unknown /api/ path), Django's own error views are replaced by ones that answer JSON under /api/ and
Django's usual pages elsewhere. The traceback goes to the log, never to the client.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.http import JsonResponse
from django.utils.translation import gettext, gettext_lazy
from django.views import defaults

logger = logging.getLogger("nodelodge.errors")

SERVER_ERROR_MESSAGE = gettext_lazy(
    "Something went wrong on our side. It has been logged; try again in a minute."
)
NOT_FOUND_MESSAGE = gettext_lazy("No such API endpoint. The operations are listed at /api/v1/docs.")
METHOD_NOT_ALLOWED_MESSAGE = gettext_lazy("%(method)s is not allowed here; use %(allowed)s.")
NOT_SIGNED_IN_MESSAGE = gettext_lazy(
    "Sign in, or send an API token from My launches: Authorization: Bearer nlt_…"
)
CSRF_MESSAGE = gettext_lazy(
    "A signed-in session's request needs its CSRF token (the X-CSRFToken header); a script sends "
    "an API token instead: Authorization: Bearer nlt_…"
)
BODY_NOT_JSON_MESSAGE = gettext_lazy("The body is not JSON. Send a JSON object as the schema states.")


def is_api_request(request) -> bool:
    return request.path_info.startswith("/api/")


def api_error(status: int, topic: str, message) -> JsonResponse:
    """An error in the API's shape: `{"errors": {topic: message}}`, the message in the request's
    language."""
    return JsonResponse({"errors": {topic: gettext(message)}}, status=status)


def server_error_json() -> JsonResponse:
    return JsonResponse({"errors": {"server": str(SERVER_ERROR_MESSAGE)}}, status=500)


def log_unexpected(request, exception) -> None:
    logger.error("unexpected error on %s %s", request.method, request.path, exc_info=exception)


def not_found(request, exception=None):
    if is_api_request(request):
        return JsonResponse({"errors": {"path": str(NOT_FOUND_MESSAGE)}}, status=404)
    response = defaults.page_not_found(request, exception)  # templates/404.html, the console's look
    response.console_page = True  # type: ignore[attr-defined]  # a mark the middleware reads (getattr)
    return response


class ConsoleNotFoundMiddleware:
    """With DEBUG on (the embedded run), Django answers a missing page with its technical page,
    which lists every URL pattern; the console's own 404 page is sent instead, as in production."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            settings.DEBUG
            and response.status_code == 404
            and not getattr(response, "console_page", False)
            and response.get("Content-Type", "").startswith("text/html")
        ):
            return not_found(request)
        return response


class ApiMethodNotAllowedMiddleware:
    """django-ninja and Django answer a method an operation does not take with an HTML 405; under
    /api/ it is JSON like the API's other errors, with the Allow header kept."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            response.status_code == 405
            and is_api_request(request)
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            allowed = response.get("Allow", "GET")
            message = str(METHOD_NOT_ALLOWED_MESSAGE) % {
                "method": request.method, "allowed": allowed
            }
            json_response = JsonResponse({"errors": {"method": message}}, status=405)
            json_response["Allow"] = allowed
            return json_response
        return response


def server_error(request):
    if is_api_request(request):
        return server_error_json()
    return defaults.server_error(request)
