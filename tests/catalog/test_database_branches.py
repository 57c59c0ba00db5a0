"""Which database the console runs on is asked in one place, `catalog.database`: every other module asks
it what the database can do (`keeps_counts`, `aggregates_in_order`, `takes_arrays`, ...). Migrations keep
their own branches: they run at schema time, on the database they are migrating."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# `connection.vendor`, and the checks that say the same: a backend's features, a configured ENGINE.
ASKS_WHICH = re.compile(r"""\.vendor\b|\[["']ENGINE["']\]|\.features\.""")
ALLOWED = {ROOT / "catalog" / "database.py"}


def product_files():
    for package in ("sizing", "catalog", "nodelodge"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_only_the_database_module_asks_which_database_it_is():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in product_files() if path not in ALLOWED
        for number, line in enumerate(path.read_text().splitlines(), 1) if ASKS_WHICH.search(line)
    ]
    assert found == []


def test_the_check_finds_what_it_looks_for():
    assert any(ASKS_WHICH.search(line) for line in (ROOT / "catalog" / "database.py").read_text().splitlines())
    assert ASKS_WHICH.search('if settings.DATABASES["default"]["ENGINE"] == "x":')
    assert ASKS_WHICH.search("connection.features.has_native_uuid_field")
    assert not ASKS_WHICH.search('"SELECT name FROM catalog_gputype ORDER BY vendor, name"')
