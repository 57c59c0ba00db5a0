"""Reads on a streaming replica (DATABASE_REPLICA_URL), with real servers: a primary and its replica
(tests/hardening/replicas.py), the console under gunicorn on both, migrated and loaded on the primary.

- The wizard's and the API's answers are read on the replica, not the primary.
- A Launch writes to the primary and the answers show it.
- A replica whose replay is paused while the primary writes is left once it is behind by more than
  the bound (1 s here): no answer is older than the bound.
- A replica stopped under load costs no request an error, and is read again once it is back.
"""
from __future__ import annotations

import re
import threading
import time
import uuid

import pytest
import requests

from tests.helpers import LLAMA_8B

from .helpers import production_env, run_python
from .replicas import ReplicatedPostgres, postgresql_bin
from .servers import Gunicorn

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgresql(reason="streaming replication is PostgreSQL's"),
]

API = f"/api/v1/recommendations?{LLAMA_8B}"
PAGE = f"/?{LLAMA_8B}"
MAX_LAG = 1.0
PASSWORD = "replica-reads-" + uuid.uuid4().hex
HEADERS = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "192.0.2.10"}
# An answer reads the fleet's counts: the statements naming their table, as each server counts them.
COUNTS = "catalog_fleetshape"

SETUP = """
import django
django.setup()
from django.contrib.auth.models import User
from django.core.management import call_command
call_command("migrate", verbosity=0)
call_command("load_catalog", "--no-fleet", verbosity=0)
from tests.hardening.helpers import add_fleet
add_fleet()
User.objects.create_user("ada", "ada@example.com", {password!r})
"""


class Console:
    def __init__(self, postgres: ReplicatedPostgres, app: Gunicorn):
        self.postgres, self.app = postgres, app
        self.base = f"http://127.0.0.1:{app.port}"

    def get(self, path: str, **kwargs) -> requests.Response:
        return requests.get(self.base + path, headers=HEADERS, timeout=90, allow_redirects=False, **kwargs)

    def machines(self) -> dict[str, dict]:
        response = self.get(API)
        assert response.status_code == 200, response.text[:500]
        return {machine["provider_machine_id"]: machine for machine in response.json()["machines"]}

    def reads_on(self, cluster) -> int:
        return self.postgres.statements_reading(cluster, COUNTS)


@pytest.fixture(scope="module")
def console():
    programs = postgresql_bin()
    if programs is None:
        pytest.fail("the replica tests need PostgreSQL's server programs (initdb, pg_ctl, pg_basebackup) in /usr/lib/postgresql: apt-get install postgresql")
    postgres = ReplicatedPostgres(programs)
    try:
        postgres.start()
        env = production_env(
            DATABASE_URL=postgres.primary.url(), DATABASE_REPLICA_URL=postgres.replica.url(),
            DATABASE_REPLICA_MAX_LAG=str(MAX_LAG), ALLOWED_HOSTS="127.0.0.1", TRUSTED_PROXY_COUNT="1",
            SECURE_SSL_REDIRECT="0", API_RATE_LIMIT="off", PAGE_RATE_LIMIT="off", DB_CONN_MAX_AGE="600",
            LOG_LEVEL="CRITICAL",
            # What is tested is where reads go, not static files: DEBUG on needs no collectstatic.
            DEBUG="1",
        )
        setup = run_python(SETUP.format(password=PASSWORD), {**env, "DATABASE_REPLICA_URL": ""}, timeout=300)
        assert setup.returncode == 0, setup.stderr[-3000:]
        app = Gunicorn(postgres.folder, env, workers=2, collect_static=False)
    except BaseException:
        postgres.stop()
        raise
    yield Console(postgres, app)
    app.stop()
    postgres.stop()


def wait_for(condition, what: str, timeout: float = 20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)  # polling servers with a deadline; nothing to wait on instead
    raise AssertionError(f"{what} within {timeout}s")


def test_answers_are_read_on_the_replica(console):
    postgres = console.postgres
    wait_for(postgres.replayed, "the replica replays the loaded catalog")
    on_primary, on_replica = console.reads_on(postgres.primary), console.reads_on(postgres.replica)
    for path in (API, PAGE, API, PAGE):
        assert console.get(path).status_code == 200
    assert console.reads_on(postgres.replica) >= on_replica + 4
    assert console.reads_on(postgres.primary) == on_primary
    # From one snapshot there too, and without merging pending counts: a replica read never writes.
    assert postgres.statements_reading(postgres.replica, "REPEATABLE READ") >= 4
    assert postgres.statements_reading(postgres.replica, "catalog_fleet_merge") == 0


def signed_in(console: Console) -> dict[str, str]:
    """The cookies of a signed-in session (the console marks them Secure: sent by hand here)."""
    page = console.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    cookies = dict(page.cookies)
    response = requests.post(
        console.base + "/accounts/login/", timeout=30, allow_redirects=False, cookies=cookies,
        headers={**HEADERS, "Referer": f"https://127.0.0.1:{console.app.port}/accounts/login/"},
        data={"username": "ada", "password": PASSWORD, "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302, response.text[:500]
    return {**cookies, **dict(response.cookies)}


def test_a_launch_writes_to_the_primary_and_the_answers_show_it(console):
    machine = console.machines()["par-h100"]
    cookies = signed_in(console)
    review = console.get("/launches/", cookies=cookies)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', review.text)
    response = requests.post(
        console.base + "/launch/", timeout=30, allow_redirects=False, cookies=cookies,
        headers={**HEADERS, "Referer": f"https://127.0.0.1:{console.app.port}/launches/"},
        data={
            "machine": machine["id"], "gpus": machine["gpus_used"], "price_per_hour": machine["price_per_hour"],
            "query": LLAMA_8B, "idempotency_key": uuid.uuid4().hex,
            "csrfmiddlewaretoken": token.group(1) if token else cookies["csrftoken"],
        },
    )
    assert response.status_code == 303, response.text[:500]
    free_after = machine["free_gpus"] - machine["gpus_used"]
    primary = console.postgres.primary
    assert primary.one("SELECT free_gpus FROM catalog_machine WHERE id = %s", [machine["id"]])[0] == free_after
    assert primary.one("SELECT count(*) FROM launches_booking WHERE machine_id = %s", [machine["id"]])[0] == 1
    wait_for(lambda: console.machines()["par-h100"]["free_gpus"] == free_after, "the answers show the Launch")


def test_a_replica_behind_by_more_than_the_bound_is_left_for_the_primary(console):
    postgres = console.postgres
    wait_for(postgres.replayed, "the replica catches up")
    old_price = console.machines()["fra-4090"]["price_per_gpu_hour"]
    postgres.replica.one("SELECT pg_wal_replay_pause()")
    try:
        wait_for(lambda: postgres.replica.one("SELECT pg_get_wal_replay_pause_state()")[0] == "paused",
                 "replay pauses")
        postgres.primary.execute(
            "UPDATE catalog_machine SET price_per_gpu_hour = 0.4321 WHERE provider_machine_id = 'fra-4090'"
        )
        written = time.monotonic()
        answers = []

        def new_price_shown():
            started = time.monotonic()
            answers.append((started - written, console.machines()["fra-4090"]["price_per_gpu_hour"]))
            return answers[-1][1] != old_price

        wait_for(new_price_shown, "the answers show the primary's write", timeout=15)
        # The replica still has not replayed it: the answer came from the primary.
        assert postgres.replica.one(
            "SELECT price_per_gpu_hour FROM catalog_machine WHERE provider_machine_id = 'fra-4090'"
        )[0] != postgres.primary.one(
            "SELECT price_per_gpu_hour FROM catalog_machine WHERE provider_machine_id = 'fra-4090'"
        )[0]
        # No answer older than the bound (a request's own time aside).
        stale = [after for after, price in answers if price == old_price]
        assert all(after <= MAX_LAG + 0.5 for after in stale), stale
        # Once the write is older than the bound, every worker's answer shows it: a worker that found
        # the replica fit a moment before the write may serve the old price, but only within the bound.
        time.sleep(max(0.0, written + MAX_LAG + 0.5 - time.monotonic()))
        for _ in range(5):
            assert console.machines()["fra-4090"]["price_per_gpu_hour"] != old_price
    finally:
        postgres.replica.one("SELECT pg_wal_replay_resume()")


def test_a_replica_stopped_under_load_costs_no_request_an_error(console):
    postgres = console.postgres
    wait_for(postgres.replayed, "the replica catches up")
    statuses: list[int] = []
    errors: list[str] = []
    done = threading.Event()

    def load(path: str) -> None:
        while not done.is_set():
            try:
                statuses.append(console.get(path).status_code)
            except requests.RequestException as error:
                errors.append(repr(error))

    threads = [threading.Thread(target=load, args=(path,)) for path in (API, PAGE, API, PAGE)]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: len(statuses) >= 20, "answers before the stop", timeout=60)
        postgres.replica.stop("immediate")
        stopped_at = len(statuses)
        wait_for(lambda: len(statuses) >= stopped_at + 40, "answers after the stop", timeout=90)
    finally:
        done.set()
        for thread in threads:
            thread.join(timeout=60)
    assert errors == []
    assert set(statuses) == {200}, [status for status in statuses if status != 200]

    # Back up, it is read again once its set-aside time has passed.
    postgres.replica.start()
    postgres.wait_streaming()
    before = console.reads_on(postgres.replica)  # its counts start again with the server

    def read_there_again() -> bool:
        assert console.get(API).status_code == 200
        return console.reads_on(postgres.replica) > before

    wait_for(read_there_again, "the replica is read again", timeout=30)
