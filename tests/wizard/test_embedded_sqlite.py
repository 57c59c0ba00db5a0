"""The embedded default (SQLite, no services) answers like the real deployment: the README's first
command must work. Run in a child process, since this suite's own database is PostgreSQL."""
import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

PAGE_SCRIPT = """
import json
from django.test import Client
client = Client()
for url in ("/", "/?workload=inference&model=whisper-large-v3&precision=16&requests=8&countries=EU",
            "/?workload=image&model=flux-1-dev&precision=16&max_price=2",
            "/?workload=notebook&memory_gib=30&tier=secure",
            "/api/v1/recommendations?workload=finetune&model=llama-3-1-8b&precision=4&context=2048&requests=2"):
    response = client.get(url)
    body = response.content.decode()
    is_api = url.startswith("/api/")
    answered = bool(json.loads(body)["machines"]) if is_api else "Recommended machines" in body or url == "/"
    print(url, response.status_code, answered)
"""


def manage(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {
        key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")
    } | {"DATABASE_URL": f"sqlite:///{tmp_path / 'embedded.sqlite3'}", "API_RATE_LIMIT": "off",
         "DJANGO_SETTINGS_MODULE": "nodelodge.settings"}  # the console's own, as bin/run starts it
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True,
        timeout=240, check=False,
    )


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("embedded")
    for args in (("migrate", "--noinput"), ("load_catalog",)):
        done = manage(tmp_path, *args)
        assert done.returncode == 0, done.stderr
    return tmp_path


def test_the_wizard_and_the_api_answer_on_sqlite(embedded):
    done = manage(embedded, "shell", "-c", PAGE_SCRIPT)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("/")]
    assert len(lines) == 5, done.stdout
    for line in lines:
        assert line.endswith(" 200 True"), line


def test_recommend_on_sqlite_gives_the_answer_the_spec_example_expects(embedded):
    done = manage(embedded, "recommend", "--model", "llama-3-1-8b", "--precision", "16", "--context", "4096",
                  "--requests", "1", "--budget", "100", "--json")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert round(body["memory"]["total_gib"], 2) == 19.55
    prices = [float(m["price_per_hour"]) for m in body["machines"]]
    assert prices and prices == sorted(prices)
    assert body["machines_total"] >= len(body["machines"])


EMPTY_QUERY = ("--model", "llama-3-1-8b", "--precision", "16", "--context", "131072", "--requests", "2000",
               "--countries", "FR", "--json")


@pytest.mark.django_db
def test_what_to_relax_reads_the_same_on_sqlite_as_on_postgresql(embedded):
    """The embedded run searches the halvings one at a time; PostgreSQL counts them all at once."""
    from io import StringIO

    from django.core.management import call_command

    from catalog.services import load_catalog

    done = manage(embedded, "recommend", *EMPTY_QUERY)
    assert done.returncode == 0, done.stderr
    on_sqlite = json.loads(done.stdout)["empty_reason"]
    load_catalog()
    out = StringIO()
    call_command("recommend", *EMPTY_QUERY, stdout=out)
    on_postgresql = json.loads(out.getvalue())["empty_reason"]
    assert "a context of" in on_postgresql and "concurrent requests fit on" in on_postgresql
    assert on_sqlite == on_postgresql
