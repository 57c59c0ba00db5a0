"""Who calls the API: a session (with its CSRF token) or a token from My launches
(`Authorization: Bearer nlt_…`), and what the API answers when neither will do."""
from __future__ import annotations

from ninja import Schema
from ninja.security import HttpBearer

from . import tokens


class TokenAuth(HttpBearer):
    def authenticate(self, request, token):
        user = tokens.user_for(token)
        if user is not None:
            request.user = user
        return user


class ErrorsOut(Schema):
    errors: dict[str, str]


# What every operation may answer besides: no session or token (401, `errors.auth`), a session's
# request without its CSRF token (403, `errors.csrf`), the rate limit (429, `errors.request`).
REFUSALS = {401: ErrorsOut, 403: ErrorsOut, 429: ErrorsOut}
