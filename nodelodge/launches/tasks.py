"""Celery task: beat ends the bookings that reached their machine's booking limit."""
from nodelodge.celery import app

from . import holding

END_EXPIRED_BOOKINGS = "nodelodge.launches.tasks.end_expired_bookings"


@app.task(name=END_EXPIRED_BOOKINGS)
def end_expired_bookings() -> int:
    return holding.end_expired_bookings()
