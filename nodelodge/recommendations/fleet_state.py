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
  says how long ago the newest report came. The token holds `floor(now / step)`: an answer is served
  again only within the step it was computed in, so it is never more than `step` seconds old.

`step` is `ANSWER_CACHE_SECONDS` (60), at most a tenth of the stale window: a machine that goes stale
is listed at most a tenth of its window longer (and Launch refuses a stale machine on its first read).
The minute is also the resolution of "newest report N minutes ago". With `ANSWER_CACHE_SECONDS = 0`,
or a database that cannot say its state, there is no token: nothing is served again.
"""
from __future__ import annotations

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
    number: int  # floor(now / step)
    now: float

    @property
    def token(self) -> str:
        return f"{self.written}|{self.step}:{self.number}"

    @property
    def seconds_left(self) -> int:
        """Until the step ends, when an answer computed in it may no longer be served (at least 1)."""
        return max(1, math.ceil((self.number + 1) * self.step - self.now))


def current() -> FleetState | None:
    """The state now (None: answers are not served again). Read it before computing an answer, on
    the connection the answer reads: the answer is then at least as new as the token it is kept under."""
    step = step_seconds()
    if not step:
        return None
    written = database.write_state()
    if written is None:
        return None
    now = clock()
    return FleetState(written, step, int(now // step), now)
