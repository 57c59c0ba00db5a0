"""A few dear answers at a time: throughput plans, and lists long or deep enough to cost several
first pages (`nodelodge.recommendations.answer.is_dear`).

A plan search costs up to about a second of a worker's CPU however its budget is spent
(`sizing.throughput_plan.SearchBudget`), a list of 1,000 machines about a third of one, where a plain
answer costs tens of milliseconds. Clients looping on them, even within their per-address rate, would
otherwise fill every worker and both cores, and a normal call would wait behind them. So at most
`DEAR_ANSWERS_AT_ONCE` dear answers are worked on at once across the console's workers (a slot is a
key added atomically to the shared cache: Redis SET NX in production, the local cache on the embedded
run); one asked for while every slot is taken is answered at once, 503 with a Retry-After, nothing
changed, rather than queued in a worker.
When the cache cannot be reached the plan is worked out anyway (and logged): a cache outage should
not take plans down with it.
"""
from __future__ import annotations

import contextlib
import logging
import uuid

from django.conf import settings
from django.core.cache import cache
from django.utils.translation import gettext_lazy

logger = logging.getLogger("nodelodge.slots")

SLOT_KEY = "dear-answer-slot:%d"
RETRY_AFTER_SECONDS = 2
BUSY_MESSAGE = gettext_lazy(
    "The console is working out other large answers right now (throughput plans, long or deep lists). "
    "Nothing was changed; try again in a few seconds."
)


class SlotsTaken(Exception):  # noqa: N818 - an event, not a programming error
    """Every slot for this kind of work is taken: answered 503 with a Retry-After."""


@contextlib.contextmanager
def dear_answer_slot():
    """Within: one of the console's slots for dear answers is this request's (raises SlotsTaken)."""
    slots = int(getattr(settings, "DEAR_ANSWERS_AT_ONCE", 1))
    if slots <= 0:  # no limit
        yield
        return
    token = uuid.uuid4().hex
    # The slot lapses on its own after the request's deadline, should its worker die holding it.
    timeout = int(float(getattr(settings, "REQUEST_WORK_SECONDS", 20))) + 5
    taken = None
    try:
        for number in range(slots):
            if cache.add(SLOT_KEY % number, token, timeout):
                taken = SLOT_KEY % number
                break
    except Exception as error:  # any cache backend failure: work it out rather than refuse
        logger.warning("dear-answer slots skipped, cache unavailable: %s", error)
        yield
        return
    if taken is None:
        raise SlotsTaken
    try:
        yield
    finally:
        try:
            if cache.get(taken) == token:
                cache.delete(taken)
        except Exception as error:
            logger.warning("dear-answer slot %s left to lapse, cache unavailable: %s", taken, error)
