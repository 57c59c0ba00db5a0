"""Static files on the embedded default, as a newcomer's `bin/run` serves them: the page names each by
its content's hash, and each comes compressed as asked with a year's Cache-Control (the production
layout's twin is in test_production_layout.py). Runs bin/run itself on a SQLite file of its own, so
it touches no test database and runs on one lane."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import urllib.request

import pytest

from .helpers import REPO, check_static_files_served_like_a_product
from .servers import free_port, temporary_folder, wait_for_port

pytestmark = pytest.mark.slow


def test_bin_run_serves_static_files_hashed_compressed_and_kept_a_year():
    folder = temporary_folder()
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "REDIS_URL"))}
    env.update(DATABASE_URL=f"sqlite:///{folder / 'console.sqlite3'}", PORT=str(port),
               STATIC_ROOT=str(folder / "static"), REFRESH_EVERY="3600")
    log = folder / "run.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(["bin/run"], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        wait_for_port(port, process, "bin/run", log, timeout=300)

        def get(path: str, encoding: str) -> tuple[dict, bytes]:
            request = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                             headers={"Accept-Encoding": encoding})
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (loopback)
                return dict(response.headers), response.read()

        page = get("/", "identity")[1].decode()
        assert check_static_files_served_like_a_product(page, get) >= 3
        assert (folder / "static" / "staticfiles.json").exists()  # collected where STATIC_ROOT says
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
