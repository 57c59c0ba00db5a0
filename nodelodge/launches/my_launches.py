"""What other apps show on My launches: each adds its part of the page's context by registering a
function of the request (by its dotted path, imported when the page is first shown), so Launches
imports none of them. Watches adds its watches (`nodelodge.watches.apps`)."""
from __future__ import annotations

from django.utils.module_loading import import_string

_parts: list[str] = []


def add_part(dotted_path: str) -> None:
    """`dotted_path` names a function of the request that returns a dict of template context."""
    if dotted_path not in _parts:
        _parts.append(dotted_path)


def more_context(request) -> dict:
    context: dict = {}
    for dotted_path in _parts:
        context.update(import_string(dotted_path)(request))
    return context
