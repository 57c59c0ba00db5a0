"""What the console believes about a request that came through proxies: one rule, one place.

`TRUSTED_PROXY_COUNT` says how many proxies stand in front of the console (the documented layout:
one nginx, see deploy/). Each appends to, or sets, `X-Forwarded-For` and `X-Forwarded-Proto`; the
entry the outermost of ours wrote is the N-th from the end, and everything before it came from the
client, who can write anything. With 0 (the default) neither header is believed at all: the client
is the connecting address and the scheme is the connection's own.

The client address serves the API rate limit and the sign-in lockout; the scheme serves the HTTPS
redirect, secure cookies and CSRF's origin checks (through SECURE_PROXY_SSL_HEADER, which Django
reads only after `TrustedProxyMiddleware` has put the trusted value, or nothing, in its place).
"""
from __future__ import annotations

from django.conf import settings

FORWARDED_PROTO = "HTTP_X_FORWARDED_PROTO"
FORWARDED_FOR = "HTTP_X_FORWARDED_FOR"


def trusted_proxy_count() -> int:
    return max(0, int(getattr(settings, "TRUSTED_PROXY_COUNT", 0) or 0))


def _trusted_entry(value: str | None) -> str | None:
    """The entry our outermost proxy wrote, or None when no proxy is trusted or none wrote one."""
    proxies = trusted_proxy_count()
    if not proxies or value is None:
        return None
    entries = [entry.strip() for entry in value.split(",")]
    entry = entries[-min(proxies, len(entries))]
    return entry or None


def client_address(request) -> str | None:
    """The client's address: the connecting one, or the one our proxies vouch for (None when a
    request has neither, as one made up inside the process)."""
    return _trusted_entry(request.META.get(FORWARDED_FOR)) or request.META.get("REMOTE_ADDR") or None


class TrustedProxyMiddleware:
    """First in the middleware: leaves `X-Forwarded-Proto` only as our proxies wrote it (one value),
    and removes it when no proxy is trusted, so a client cannot claim HTTPS for itself."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        proto = _trusted_entry(request.META.pop(FORWARDED_PROTO, None))
        if proto is not None:
            request.META[FORWARDED_PROTO] = proto.lower()
        return self.get_response(request)
