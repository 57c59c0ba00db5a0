"""The watches' Celery tasks by name, and how the rest of Watches queues one without importing
`tasks` (which imports the rest): `tasks` registers the names, everything else enqueues by them."""
from __future__ import annotations

from nodelodge.celery import app

EVALUATE_WATCHES = "nodelodge.watches.tasks.evaluate_watches"
EVALUATE_DUE_WATCHES = "nodelodge.watches.tasks.evaluate_due_watches"
DELIVER_FIRING = "nodelodge.watches.tasks.deliver_firing"
DELIVER_WEBHOOK = "nodelodge.watches.tasks.deliver_webhook"
AUTO_LAUNCH = "nodelodge.watches.tasks.auto_launch"


def queue(name: str, *args) -> None:
    """Queues the task `name` with `args`, as the task's own `delay` would (the registered task where
    this process has it, so its settings apply; by name to the broker otherwise)."""
    app.signature(name, args=args).delay()
