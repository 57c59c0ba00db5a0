"""Answers served again: ETags, 304s and the cache of hot answers, for the wizard's page, its HTMX
partials and the API.

An answer's ETag is a hash of what the answer depends on: the operation, the code (`release()`:
templates, translations and code change with a release), the fleet-state token
(`nodelodge.recommendations.fleet_state`: the database's write state and the answer's step of time), the
language, and the query: for the API the parsed parameters (sorted by name), for a page the address
as typed (the form shows it back). A page adds which partial HTMX asked for and, for the whole page,
the Cookie header: the page carries the client's CSRF token and, signed in, the user's name.
`If-None-Match` with that ETag is answered 304 before anything is computed; the state costs one SQL
statement on PostgreSQL (the kept fleet counts' state), none on SQLite.

Hot answers are kept in the default cache (Redis in production, shared by every web host; local
memory on the embedded run) under the same hash less the client's cookies, for the rest of the step:
an answer asked for a second time in one state is stored, and served from there while the state lasts
(a one-off query costs one marker, not a stored answer). The whole page keeps its `#wizard` part
(everything but the top bar, which shows the client's CSRF token and name) and renders the rest per
request. A cache that cannot be reached just computes.

Cache-Control: the API's answers are the same for every client (no cookie, no session; the language
from Accept-Language), so `public, max-age` up to 10 s within the step, `Vary: Accept-Language`. Pages
and partials are `private, no-cache`: the page shows the client's CSRF token and name, an unprefixed
address answers by the language cookie or Accept-Language, and after a booking a browser must not show
the list from before it; each revalidation costs a 304. `Vary: Cookie, Accept-Language, HX-Request,
HX-Target` (the partials share the page's address).
"""
from __future__ import annotations

import functools
import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponseNotModified
from django.utils.cache import patch_vary_headers
from django.utils.http import parse_etags
from django.utils.translation import get_language

from nodelodge.recommendations import fleet_state

logger = logging.getLogger("nodelodge.answers")

API_MAX_AGE_SECONDS = 10
PAGE_CACHE_CONTROL = "private, no-cache"
API_VARY = ("Accept-Language",)
PAGE_VARY = ("Cookie", "Accept-Language", "HX-Request", "HX-Target")
CODE_FOLDERS = ("nodelodge", "sizing", "catalog", "templates", "locale", "static")
CODE_SUFFIXES = {".py", ".html", ".mo", ".css", ".js", ".txt", ".json", ".svg"}


@functools.cache
def release() -> str:
    """A digest of the code, templates, translations and static files this process serves."""
    base = Path(settings.BASE_DIR)
    digest = hashlib.sha256()
    for folder in CODE_FOLDERS:
        for path in sorted((base / folder).rglob("*")):
            if path.suffix in CODE_SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(base)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _digest(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()[:32]


@dataclass(frozen=True)
class Conditional:
    """One request's ETag and cache key, and what its answer says about caching."""

    step: fleet_state.AnswerStep
    etag: str  # quoted, strong
    key: str  # the shared cache's key (no client's part)
    cache_control: str
    vary: tuple[str, ...]

    def matches(self, request) -> bool:
        """Whether the client holds this answer already (If-None-Match, compared weakly: gzip, here
        or in nginx, makes the ETag weak)."""
        header = request.META.get("HTTP_IF_NONE_MATCH")
        if not header:
            return False
        tags = {tag.removeprefix("W/") for tag in parse_etags(header)}
        return self.etag in tags or "*" in tags

    def not_modified(self):
        return self.stamp(HttpResponseNotModified())

    def stamp(self, response):
        response["ETag"] = self.etag
        response["Cache-Control"] = self.cache_control
        patch_vary_headers(response, self.vary)
        return response

    def stored(self):
        """The answer kept for this state, or None."""
        try:
            return cache.get(self.key)
        except Exception as error:  # any cache failure: compute instead
            logger.debug("answer cache unavailable: %s", error)
            return None

    def store(self, value) -> None:
        """Keeps `value` for the rest of the step when it is hot: asked for before in this state."""
        timeout = self.step.seconds_left + 1
        try:
            if cache.add(self.key + ":asked", 1, timeout):
                return  # first time in this state
            cache.set(self.key, value, timeout)
        except Exception as error:
            logger.debug("answer cache unavailable: %s", error)


def for_api(request, operation: str) -> Conditional | None:
    """The API operation's ETag and key (None: answers are not served again)."""
    state = fleet_state.current()
    if state is None:
        return None
    query = "&".join(f"{name}={values!r}" for name, values in sorted(request.GET.lists()))
    asked = _digest("api", operation, release(), get_language() or "", query)
    step = state.for_answer(asked)
    digest = _digest(asked, step.token)
    max_age = min(API_MAX_AGE_SECONDS, step.seconds_left)
    return Conditional(step, f'"{digest}"', f"answer:{digest}", f"public, max-age={max_age}", API_VARY)


def for_page(request, partial: str | None) -> Conditional | None:
    """The wizard page's ETag and key; `partial`: the HTMX partial asked for (None: the whole page)."""
    state = fleet_state.current()
    if state is None:
        return None
    asked = _digest(
        "page", release(), get_language() or "", request.path, request.META.get("QUERY_STRING", ""),
        partial or "",
    )
    step = state.for_answer(asked)
    shared = _digest(asked, step.token)
    etag = shared if partial else _digest(shared, request.META.get("HTTP_COOKIE", ""))
    return Conditional(step, f'"{etag}"', f"answer:{shared}", PAGE_CACHE_CONTROL, PAGE_VARY)
