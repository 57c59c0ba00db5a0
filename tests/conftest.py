"""Shared test setup. The suite runs against real PostgreSQL and Redis (bin/test starts them)."""
import os

import pytest
from django.conf import settings


def pytest_configure(config):
    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgresql" not in engine and not os.environ.get("NODELODGE_ALLOW_SQLITE_TESTS"):
        raise pytest.UsageError(
            "The tests run on PostgreSQL: set DATABASE_URL (bin/test does), "
            f"got engine {engine!r}."
        )


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": "/usr/bin/chromium",
        "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    }


@pytest.fixture(autouse=True, scope="session")
def _allow_sync_orm_beside_playwright():
    """Playwright's sync API runs an event loop in the test thread; Django then refuses ORM calls
    from that thread unless told the access is synchronous on purpose."""
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
