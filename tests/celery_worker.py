"""A real Celery worker on Redis for the tests that need one (refresh, watches): one per test session."""
from __future__ import annotations

import pytest

from tests.helpers import TEST_BROKER_URL


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker):
    """A real worker (solo pool, in a thread of this process) consuming from the Redis broker."""
    from celery.contrib.testing import tasks as _ping_task  # noqa: F401 - registers celery.ping
    from celery.contrib.testing.worker import start_worker

    from nodelodge.celery import app

    app.conf.update(
        broker_url=TEST_BROKER_URL,
        result_backend=TEST_BROKER_URL,
        task_always_eager=False,
    )
    # The app keeps its broker connection pool: an eager task acquires a producer too (on the
    # embedded-default run, for the in-memory broker). Let go of it, as a forked process does, so the
    # next use takes the pool of the broker above.
    app._after_fork()
    # The result backend is built on first use and kept: on the embedded-default run (no REDIS_URL)
    # an eager task earlier in the session built the disabled one. Build it from the settings above.
    app._backend = app._get_backend()
    app.control.purge()  # leftovers of an interrupted earlier run
    with django_db_blocker.unblock():
        with start_worker(app, pool="solo", perform_ping_check=True, shutdown_timeout=30) as worker:
            yield worker
