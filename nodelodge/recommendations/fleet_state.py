"""The fleet's state as an answer sees it, in one token: what the database holds and the step of time.

An answer (the page, its HTMX partials, the API's) is a function of its query, its language and two
things this token names:

- **Writes.** A refresh, a booking and its end, a Stop, a provider deactivated: each changes
  `catalog.database.write_state()` once committed, whatever made it and however (PostgreSQL: the
  fleet counts the triggers keep; SQLite: its data version, which any commit moves), on the database
  the answer reads (the replica's own inside `replica_first`). An edit that changes no count (a
  model's figures in the admin) reaches answers when the step ends.
- **Time alone.** A machine not heard from for `MACHINE_STALE_AFTER_SECONDS` stops counting as available
  without any write (`sizing.availability`, the stale cutoff `fleet.stale_cutoff(now)`), and the answer
  says how long ago the newest report came. The token holds the number of the step: an answer is
  served again only within the step it was computed in, so it is never more than `step` seconds old.
  Each answer's steps start at its own offset within the step (`offset_of`, from the answer's key), so
  the hot answers do not all end at one moment and get computed again by every worker at once.

`step` is `ANSWER_CACHE_SECONDS` (60), at most a tenth of the stale window: a machine that goes stale
is listed at most a tenth of its window longer (and Launch refuses a stale machine on its first read).
The minute is also the resolution of "newest report N minutes ago". With `ANSWER_CACHE_SECONDS = 0`,
or a database that cannot say its state, there is no token: nothing is served again.
"""
from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass

from django.conf import settings

from catalog import database

clock = time.time  # the tests move it


def step_seconds() -> int:
    """How long an answer may be served again at the same write state (0: never)."""
    configured = int(getattr(settings, "ANSWER_CACHE_SECONDS", 0))
    if configured <= 0:
        return 0
    return max(1, min(configured, settings.MACHINE_STALE_AFTER_SECONDS // 10))


@dataclass(frozen=True)
class FleetState:
    written: str  # catalog.database.write_state()
    step: int  # seconds
    now: float

    def for_answer(self, key: str) -> AnswerStep:
        """The step the answer under `key` is in now: steps of `step` seconds from its own offset."""
        offset = offset_of(key, self.step)
        number = int((self.now - offset) // self.step)
        return AnswerStep(f"{self.written}|{self.step}:{offset}:{number}", number, offset, self)


def offset_of(key: str, step: int) -> int:
    """Where within a step the steps of the answer under `key` start: whole seconds spread evenly over
    the step by the key's digest (the same in every process)."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:4], "big") % step


@dataclass(frozen=True)
class AnswerStep:
    """One answer's step: its token (in the answer's ETag and cache key) and how long it lasts."""

    token: str
    number: int
    offset: int
    state: FleetState

    @property
    def seconds_left(self) -> int:
        """Until the step ends, when an answer computed in it may no longer be served (at least 1)."""
        state = self.state
        return max(1, math.ceil(self.offset + (self.number + 1) * state.step - state.now))


def current() -> FleetState | None:
    """The state now (None: answers are not served again). Read it before computing an answer, on
    the connection the answer reads: the answer is then at least as new as the token it is kept under."""
    step = step_seconds()
    if not step:
        return None
    written = database.write_state()
    if written is None:
        return None
    return FleetState(written, step, clock())
