"""Small things test packages share: the query most tests ask, the header nginx stamps, the broker."""
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit, urlunsplit

# Llama 3.1 8B at 16-bit, 4,096 tokens, one request: 19.55 GiB, one 24 GB card or one 80 GB GPU holds it.
LLAMA_8B = "workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=1"


def started(seconds_ago: float) -> dict[str, str]:
    """The header nginx stamps on a request it received `seconds_ago`."""
    return {"X-Request-Start": f"t={time.time() - seconds_ago:.3f}"}


def for_this_worker(redis_url: str) -> str:
    """The Redis database a pytest-xdist worker keeps its cache, Celery broker and results in: the one
    named plus one plus the worker's number (gw0: +1, gw1: +2), so two workers never empty each other's
    cache nor run each other's tasks against their own test database. Outside xdist, the one named."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or not redis_url:
        return redis_url
    address = urlsplit(redis_url)
    database = int(address.path.strip("/") or 0) + 1 + int(worker[2:])
    return urlunsplit(address._replace(path=f"/{database}"))


# The Celery broker of the worker tests: the run's Redis; on the SQLite run (no REDIS_URL, as `bin/run`)
# the one bin/test names. Under pytest-xdist, the worker's own database of it.
TEST_BROKER_URL = for_this_worker(
    os.environ.get("REDIS_URL") or os.environ.get("TEST_REDIS_URL") or "redis://127.0.0.1:6379/3"
)


def race_together(calls: list[Callable[[], None]], timeout: float = 300) -> None:
    """Runs each call in a thread of its own, all let go at once (a barrier), each thread closing its
    database connection when done; raises what any of them raised."""
    from django.db import connection

    barrier = threading.Barrier(len(calls))

    def run(call):
        try:
            barrier.wait(timeout=30)
            call()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        for future in [pool.submit(run, call) for call in calls]:
            future.result(timeout=timeout)
