"""The process's long-lived objects are set aside from the collector after its first request
(`nodelodge/long_lived.py`): in a fresh process, since the test run's own process froze on its first
request already. Touches no database: a request for a page that does not exist reads none."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROCESS = """
import gc, json, os
import django
django.setup()
from django.test import Client
before = gc.get_freeze_count()
status = Client().get("/no-such-page/").status_code
after_first = gc.get_freeze_count()
Client().get("/no-such-page/")
garbage = [[] for _ in range(3)]
for item in garbage:
    item.append(item)  # cycles made after the freeze must still be collected
del garbage, item
collected = gc.collect()
print(json.dumps({"status": status, "before": before, "after_first": after_first,
                  "after_second": gc.get_freeze_count(), "collected": collected}))
"""


def test_the_first_request_freezes_what_exists_and_later_garbage_is_still_collected(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "nodelodge.settings",
           "DATABASE_URL": f"sqlite:///{tmp_path}/unused.sqlite3", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PROCESS], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr

    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["status"] == 404
    assert found["before"] == 0
    # Everything the first request imported and warmed: tens of thousands of objects.
    assert found["after_first"] > 20_000
    # Frozen once: the second request adds nothing to the permanent generation (a frozen object freed
    # by its count of references leaves it).
    assert found["after_second"] <= found["after_first"]
    assert found["collected"] >= 3
