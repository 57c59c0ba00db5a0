"""Work whose client is gone: a request nginx has already answered 504, or one that has run for longer
than gunicorn lets a worker run, is not worked on any more.

nginx stamps each request with the moment it received it (`X-Request-Start: t=<seconds since the
epoch, with milliseconds>`, see deploy/nginx.conf) and gives up on gunicorn after
`proxy_read_timeout`. A request still queued in gunicorn by then would only do work nobody reads (or
book GPUs for a client that was told it failed). So the deadline of a request is its start plus
`PROXY_READ_TIMEOUT_SECONDS` (nginx's proxy_read_timeout) less `PROXY_DEADLINE_MARGIN_SECONDS`:

- `ProxyDeadlineMiddleware` answers a request whose deadline has passed 503 with a Retry-After
  before any view runs (JSON under /api/, the page otherwise);
- Launch checks `deadline_passed()` again inside its booking transaction, right before it commits,
  and `DeadlinePassed` rolls the booking back (the middleware turns it into the same 503).

Whatever the proxy, every request also has a deadline of its own: `REQUEST_WORK_SECONDS` after the
console started on it, below gunicorn's timeout (which kills the worker and leaves the client an HTML
500). The answer's long steps call `check_deadline()` between them, so a request that would outlast it
stops at its next step and is answered 503 with a Retry-After: JSON under /api/, the page elsewhere.
Every step's work is bounded by its own counter too (the plan search's budget, the list's window);
the deadline is the net under them, for a machine too slow or too busy for those bounds' times.

The header counts only when a trusted proxy sent the request (TRUSTED_PROXY_COUNT > 0, the rule of
nodelodge/hardening/proxies.py): with no trusted proxy a client could write any start it likes, so
the console then keeps no deadline at all. (nginx sets the header itself, replacing whatever the
client sent.) A header that cannot be read sets no deadline either.
"""
from __future__ import annotations

import contextlib
import contextvars
import logging
import time

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.utils.translation import gettext, gettext_lazy

from .faults import unavailable_page
from .proxies import trusted_proxy_count
from .slots import BUSY_MESSAGE, SlotsTaken
from .slots import RETRY_AFTER_SECONDS as SLOT_RETRY_AFTER_SECONDS

logger = logging.getLogger("nodelodge.deadline")

REQUEST_START = "HTTP_X_REQUEST_START"
RETRY_AFTER_SECONDS = 10
DEADLINE_MESSAGE = gettext_lazy(
    "The console was too busy to answer this request in time. Nothing was changed; try again in a "
    "moment."
)

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("proxy_deadline", default=None)


class DeadlinePassed(Exception):
    """This request is past its deadline: whatever it was doing is dropped (rolled back)."""


def request_start(request) -> float | None:
    """When the trusted proxy received this request (seconds since the epoch), or None."""
    if not trusted_proxy_count():
        return None
    value = request.META.get(REQUEST_START, "").strip()
    if value.startswith("t="):
        value = value[2:]
    try:
        start = float(value)
    except ValueError:
        return None
    if start != start or start in (float("inf"), float("-inf")):  # NaN or infinite
        return None
    return start


def proxy_deadline_for(request) -> float | None:
    """The moment after which the proxy no longer waits for this request's answer, or None."""
    start = request_start(request)
    if start is None:
        return None
    timeout = float(getattr(settings, "PROXY_READ_TIMEOUT_SECONDS", 60))
    margin = float(getattr(settings, "PROXY_DEADLINE_MARGIN_SECONDS", 5))
    return start + max(0.0, timeout - margin)


def deadline_for(request, now: float) -> float:
    """The moment after which this request's work stops: the proxy's deadline or its own, the sooner."""
    own = now + float(getattr(settings, "REQUEST_WORK_SECONDS", 20))
    proxy = proxy_deadline_for(request)
    return own if proxy is None else min(own, proxy)


@contextlib.contextmanager
def request_deadline(deadline: float | None):
    """Within: `deadline_passed()` answers for this deadline (seconds since the epoch, or None)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def deadline_passed() -> bool:
    """Whether the request being served has passed its deadline (False outside a request)."""
    deadline = _deadline.get()
    return deadline is not None and time.time() > deadline


def check_deadline() -> None:
    """Raises DeadlinePassed when the request being served has passed its deadline."""
    if deadline_passed():
        raise DeadlinePassed


def deadline_passed_response(request) -> HttpResponse:
    return busy_response(request, DEADLINE_MESSAGE, RETRY_AFTER_SECONDS)


def busy_response(request, message, retry_after: int) -> HttpResponse:
    """503 with a Retry-After: JSON under /api/ (`errors.service`), the console's page elsewhere."""
    if not request.path_info.startswith("/api/"):
        return unavailable_page(message, retry_after)
    response = JsonResponse({"errors": {"service": gettext(message)}}, status=503)
    response["Retry-After"] = str(retry_after)
    return response


def slots_taken_response(request) -> HttpResponse:
    return busy_response(request, BUSY_MESSAGE, SLOT_RETRY_AFTER_SECONDS)


class ProxyDeadlineMiddleware:
    """Drops a request past its proxy deadline before the view runs, and keeps the deadline at hand
    (`deadline_passed()`) for the writes that check it again before they commit."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        now = time.time()
        proxy_deadline = proxy_deadline_for(request)
        if proxy_deadline is not None and now > proxy_deadline:
            logger.warning("dropped %s %s: past the proxy's deadline", request.method, request.path)
            return deadline_passed_response(request)
        with request_deadline(deadline_for(request, now)):
            return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, SlotsTaken):
            return slots_taken_response(request)
        if isinstance(exception, DeadlinePassed):
            logger.warning("dropped %s %s: passed its deadline", request.method, request.path)
            return deadline_passed_response(request)
        return None
