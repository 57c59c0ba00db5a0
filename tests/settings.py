"""The settings the tests run under: the console's own (nodelodge/settings.py, the database still
from DATABASE_URL) with two changes that make tests cheap without changing what they check.

- A fast password hasher: production's costs about a quarter of a second of CPU per hash, paid for
  every user a test creates or signs in; what the tests check does not depend on the hash's strength
  (production settings are checked in their own processes, which start from nodelodge.settings).
- The per-address rate limits off: many tests ask the same page or endpoint far more often than a
  person would, all from one address. The tests of a limit turn it on: with the `rate_limits`
  marker (the production values, tests/conftest.py) or by setting the value they test through
  pytest-django's `settings` fixture.
- Dear answers not limited to a few at a time (`DEAR_ANSWERS_AT_ONCE = 0`), as the rate limits:
  the slots' tests set the value they test.
- Answers not served again (`ANSWER_CACHE_SECONDS = 0`: no ETag, no cache of answers): tests write to
  the fleet inside their transaction and ask again, which no committed state can tell apart. The tests
  of ETags and the cache (tests/wizard/test_answer_cache.py) turn it on and commit their writes.

Processes the tests start as production would (servers, workers, manage.py) are given
DJANGO_SETTINGS_MODULE=nodelodge.settings explicitly."""
from nodelodge.settings import *  # noqa: F403
from nodelodge.settings import (
    API_RATE_LIMIT,
    PAGE_RATE_LIMIT,
    PASSWORD_RESET_EMAIL_RATE_LIMIT,
    PASSWORD_RESET_RATE_LIMIT,
    SIGNUP_RATE_LIMIT,
)
from tests.helpers import for_this_worker

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# The per-address limits as the console runs them, which the `rate_limits` marker restores.
PRODUCTION_RATE_LIMITS = {
    "API_RATE_LIMIT": API_RATE_LIMIT,
    "PAGE_RATE_LIMIT": PAGE_RATE_LIMIT,
    "SIGNUP_RATE_LIMIT": SIGNUP_RATE_LIMIT,
    "PASSWORD_RESET_RATE_LIMIT": PASSWORD_RESET_RATE_LIMIT,
    "PASSWORD_RESET_EMAIL_RATE_LIMIT": PASSWORD_RESET_EMAIL_RATE_LIMIT,
}
API_RATE_LIMIT = "off"
PAGE_RATE_LIMIT = "off"
SIGNUP_RATE_LIMIT = "off"
PASSWORD_RESET_RATE_LIMIT = "off"
PASSWORD_RESET_EMAIL_RATE_LIMIT = "off"
ANSWER_CACHE_SECONDS = 0
# Dear answers not limited to a few at a time across workers (nodelodge/hardening/slots.py): tests
# racing threads ask plans and long lists at once. tests/hardening/test_dear_answer_slots.py sets it.
DEAR_ANSWERS_AT_ONCE = 0

# Test databases are thrown away after the run, so a commit need not wait for its WAL to reach the
# disk: many tests commit (live servers, threads, the kept fleet counts' triggers) and each flush
# costs a few milliseconds. What a test checks never depends on surviving a crash.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    _options = DATABASES["default"].setdefault("OPTIONS", {})  # noqa: F405
    _options["options"] = f"{_options.get('options', '')} -c synchronous_commit=off".strip()

# pytest-xdist's workers share one Redis: each keeps its cache, Celery broker and results in a database
# of its own (tests/helpers.py), since a test's cache.clear() empties the whole database the other
# worker's tests are caching in, and a worker's Celery worker would take the other's tasks.
if REDIS_URL:  # noqa: F405
    REDIS_URL = for_this_worker(REDIS_URL)  # noqa: F405
    CACHES["default"]["LOCATION"] = for_this_worker(CACHES["default"]["LOCATION"])  # noqa: F405
    CELERY_BROKER_URL = for_this_worker(CELERY_BROKER_URL)  # noqa: F405
    CELERY_RESULT_BACKEND = for_this_worker(CELERY_RESULT_BACKEND)  # noqa: F405

# Static files named as the sources are, whether or not a run of collectstatic left a manifest in the
# checkout: what the tests check in pages does not depend on the hashed names. The tests of static
# files serve them from real processes with the console's own settings (tests/hardening).
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
