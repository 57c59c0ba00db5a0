"""The objects a process keeps for its whole life, set aside from the garbage collector.

A console process holds about 120,000 objects that live as long as it does: modules, the URL
patterns, the templates, the catalog's words and translations. CPython's collector walks all of them
at each full collection, and an answer allocates enough to trigger one or two per request: 2–3 ms of
a 25 ms API answer at 1,000 machines went to walking objects that can never be garbage
(docs/benchmarks-log.md, 2026-12-07). Once the first request has imported and warmed everything a
request needs, `gc.freeze()` moves what exists into the collector's permanent generation, which it
never walks; garbage made later is collected as before. The first request's own cycles are collected
just before, so nothing it left behind is kept for good.
"""
from __future__ import annotations

import gc

from django.core.signals import request_finished

_FROZEN = False


def _freeze_after_first_request(**_kwargs) -> None:
    global _FROZEN
    if _FROZEN:
        return
    _FROZEN = True
    request_finished.disconnect(_freeze_after_first_request)
    gc.collect()
    gc.freeze()


def connect() -> None:
    """Freeze the process's long-lived objects once its first request is done (each gunicorn worker
    on its own first request, the test client's process on its first)."""
    request_finished.connect(_freeze_after_first_request, dispatch_uid="nodelodge.long_lived")
