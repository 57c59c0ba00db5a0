"""Small things test packages share: the query most tests ask (and its variants), the header nginx
stamps, the broker, and the harness that races calls on threads of their own."""
import html
import os
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit, urlunsplit

# Llama 3.1 8B at 16-bit, 4,096 tokens, one request: 19.55 GiB, one 24 GB card or one 80 GB GPU holds it.
LLAMA_8B = "workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=1"
# The same query asked of the commands: call_command("recommend", *LLAMA_8B_ARGS, "--json").
LLAMA_8B_ARGS = ("--model", "llama-3-1-8b", "--precision", "16", "--context", "4096", "--requests", "1")
# Fine-tuning it at 4-bit (QLoRA), 4,096 tokens, four sequences at once.
LLAMA_8B_QLORA = "workload=finetune&model=llama-3-1-8b&precision=4&context=4096&requests=4"
# More than any machine holds: 131,072 tokens for 2,000 requests at once (an empty answer, what to relax).
LLAMA_8B_TOO_BIG = "workload=inference&model=llama-3-1-8b&precision=16&context=131072&requests=2000"


# A machine row's details as the result panel writes them: a placeholder linking to the machine's page.
DETAIL_LINK = re.compile(r'<div class="machine-detail"><p><a href="([^"]+)" data-testid="machine-detail-link">'
                         r'[^<]*</a></p></div>')


def with_details_opened(client, page: str) -> str:
    """`page` with each machine row's details in it, as opening every row does in a browser: each row's
    placeholder swapped for the part its machine's page serves to htmx (asserted served)."""
    def opened(found: re.Match) -> str:
        response = client.get(html.unescape(found.group(1)), HTTP_HX_REQUEST="true")
        assert response.status_code == 200, response.content
        return response.content.decode()

    return DETAIL_LINK.sub(opened, page)


class RowsRead:
    """A `connection.execute_wrapper` that counts the rows the statements return to Python."""

    def __init__(self) -> None:
        self.rows = 0

    def __call__(self, execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        cursor = context["cursor"]
        if cursor.description is not None:
            self.rows += max(cursor.rowcount, 0)
        return result


def llama_8b(**fields: object) -> str:
    """The example query with fields changed in place or added at the end, written as given (never
    encoded): llama_8b(context=8192, requests=4, engine="vllm"), llama_8b(requests="NaN")."""
    asked = dict(part.split("=", 1) for part in LLAMA_8B.split("&"))
    asked.update((name, str(value)) for name, value in fields.items())
    return "&".join(f"{name}={value}" for name, value in asked.items())


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


def race_outcomes(calls: list[Callable[[], object]], timeout: float = 300, wait: float = 30) -> list[object]:
    """Runs each call in a thread of its own, all let go at once (a barrier, waited on at most `wait`
    seconds), each thread closing its database connection when done. Returns each call's result, or the
    exception it raised, in the calls' order: the outcome a race test checks."""
    from django.db import connection

    barrier = threading.Barrier(len(calls))

    def run(call):
        try:
            barrier.wait(timeout=wait)
            return call()
        except Exception as error:  # the outcome under test, not a failure of the harness
            return error
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return [future.result(timeout=timeout) for future in [pool.submit(run, call) for call in calls]]


def race_together(calls: list[Callable[[], object]], timeout: float = 300, wait: float = 30) -> None:
    """race_outcomes, for calls that must all succeed: raises the first exception any of them raised."""
    for outcome in race_outcomes(calls, timeout=timeout, wait=wait):
        if isinstance(outcome, BaseException):
            raise outcome


def migrate(targets: list[tuple[str, str]]):
    """The test database migrated to `targets` (app, migration), forwards or back; returns the apps as
    they are there, for a migration test's rows of the old schema."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps
