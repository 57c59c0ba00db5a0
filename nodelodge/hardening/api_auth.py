"""The API's session sign-in: django-ninja's, with its CSRF refusal in the API's error shape.

ninja's `django_auth` refuses a session's POST without its CSRF token with a bare HttpError (`{"detail":
"CSRF check Failed"}`); here it is `CsrfRefused`, answered 403 `{"errors": {"csrf": …}}` in the
request's language like the API's other errors (nodelodge/wizard/api.py).
"""
from __future__ import annotations

from ninja.errors import HttpError
from ninja.security import SessionAuth
from ninja.utils import check_csrf


class CsrfRefused(HttpError):
    def __init__(self) -> None:
        super().__init__(403, "CSRF token missing or incorrect.")


class ConsoleSessionAuth(SessionAuth):
    def _get_key(self, request):
        if self.csrf and not getattr(request, "_ninja_csrf_exempt", False) and check_csrf(request):
            raise CsrfRefused()
        return request.COOKIES.get(self.param_name)


session_auth = ConsoleSessionAuth()
