"""Fetching a provider's feed: one HTTP(S) GET bounded as a whole by a deadline, however slowly the
bytes arrive, and by a size limit; anything but a complete 2xx answer is a FeedError with its reason."""
from __future__ import annotations

import http.client
import socket
import threading
import urllib.error
import urllib.request
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .feeds.base import FeedError

MAX_FEED_BYTES = 64 * 1024 * 1024
READ_CHUNK_BYTES = 256 * 1024
FEED_HEADERS = {"Accept": "application/json", "User-Agent": "NodeLodge-refresh/1"}


class _Deadline:
    """The whole fetch's deadline: at it, every connection the fetch opened is shut down, which ends
    whatever read is waiting (the status line, a header, the body) however slowly bytes arrive."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.passed = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.passed:
                self._shut(sock)

    def _cut(self) -> None:
        with self._lock:
            self.passed = True
            for sock in self._sockets:
                self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        try:
            # The plain socket's shutdown, also under TLS: it wakes the reading thread without
            # touching the TLS object that thread is using.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass  # already closed

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()


if TYPE_CHECKING:
    _HandlerBase = urllib.request.AbstractHTTPHandler
else:
    _HandlerBase = object  # a mixin: the handler it is mixed into opens the connection


class _WatchedHandlerMixin(_HandlerBase):
    """Opens connections that report their socket to the fetch's deadline."""

    deadline: _Deadline

    def do_open(self, http_class, req, **kwargs):
        deadline = self.deadline

        class WatchedConnection(http_class):  # type: ignore[valid-type, misc]  # the handler's own class
            def connect(self):
                super().connect()
                deadline.watch(self.sock)

        return super().do_open(WatchedConnection, req, **kwargs)


class _WatchedHTTPHandler(_WatchedHandlerMixin, urllib.request.HTTPHandler):
    pass


class _WatchedHTTPSHandler(_WatchedHandlerMixin, urllib.request.HTTPSHandler):
    pass


def _opener_for(deadline: _Deadline) -> urllib.request.OpenerDirector:
    """Only plain HTTP(S) with redirects: no file:, ftp: or data: URLs, and no proxy surprises."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        _WatchedHTTPHandler(),
        _WatchedHTTPSHandler(),
        urllib.request.HTTPRedirectHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPErrorProcessor(),
    ):
        if isinstance(handler, _WatchedHandlerMixin):
            handler.deadline = deadline
        opener.add_handler(handler)
    return opener


def seconds(value: float) -> str:
    return f"{value:g} second" if value == 1 else f"{value:g} seconds"


def fetch_feed(url: str, timeout_seconds: float) -> bytes:
    """The feed's body; FeedError on anything but a complete 2xx answer within the timeout.

    `timeout_seconds` bounds the whole fetch, connecting, the headers, redirects and the body
    together, however the bytes trickle in: at the deadline the connection is shut down
    (`_Deadline`). Each wait for data is bounded by it too.
    """
    if urlsplit(url).scheme not in ("http", "https"):
        raise FeedError(f"the feed URL must start with http:// or https://, got {url[:80]!r}")
    request = urllib.request.Request(url, headers=FEED_HEADERS)  # noqa: S310 - scheme checked above
    no_answer = f"the feed did not answer within {seconds(timeout_seconds)}"
    too_slow = (
        f"the feed did not arrive whole within {seconds(timeout_seconds)} (it was still arriving at the "
        "deadline, PROVIDER_FEED_TIMEOUT_SECONDS)"
    )
    answered = False  # the status line and headers are in
    with _Deadline(timeout_seconds) as deadline:
        try:
            with _opener_for(deadline).open(request, timeout=timeout_seconds) as response:
                answered = True
                chunks: list[bytes] = []
                size = 0
                # read1: whatever has arrived (up to the size), so the size limit is checked as it comes.
                while chunk := response.read1(READ_CHUNK_BYTES):
                    size += len(chunk)
                    if size > MAX_FEED_BYTES:
                        raise FeedError(f"the feed is larger than {MAX_FEED_BYTES // (1024 * 1024)} MiB")
                    chunks.append(chunk)
                if deadline.passed:  # the shut connection ended the body early
                    raise FeedError(too_slow)
                return b"".join(chunks)
        except FeedError:
            raise
        except urllib.error.HTTPError as error:
            raise FeedError(f"the feed answered HTTP {error.code} {error.reason}".strip()) from error
        except Exception as error:
            timed_out = isinstance(error, TimeoutError) or isinstance(
                getattr(error, "reason", None), TimeoutError
            )
            if deadline.passed or timed_out:
                raise FeedError(too_slow if answered else no_answer) from error
            if isinstance(error, urllib.error.URLError):
                raise FeedError(f"could not reach the feed: {error.reason}") from error
            if isinstance(error, OSError | ValueError | http.client.HTTPException):
                # reset, malformed answer, bad URL
                raise FeedError(f"could not read the feed: {error}") from error
            raise
