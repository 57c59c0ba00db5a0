"""Settings, read from the environment.

With nothing set, the console runs on the embedded default: a SQLite file beside manage.py,
DEBUG on, Celery tasks run in-process (no Redis needed). Production sets DATABASE_URL,
REDIS_URL, SECRET_KEY, DEBUG=0 and ALLOWED_HOSTS.
"""
import os
from pathlib import Path
from typing import Any, cast

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from catalog.database import connection_settings

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)
_DEV_SECRET = "dev-only-insecure-key-not-for-production"  # noqa: S105
SECRET_KEY = os.environ.get("SECRET_KEY", _DEV_SECRET if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "ninja",
    "axes",
    "csp",
    "sizing",
    "catalog",
    "nodelodge.refresh",
    "nodelodge.wizard",
    "nodelodge.accounts",
    "nodelodge.launches",
    "nodelodge.watches",
    "nodelodge.hardening",
]

MIDDLEWARE = [
    # First: X-Forwarded-Proto only as the trusted proxies wrote it (TRUSTED_PROXY_COUNT).
    "nodelodge.hardening.proxies.TrustedProxyMiddleware",
    # HEAD runs as GET and drops the body (monitors ask with HEAD).
    "nodelodge.hardening.methods.HeadAsGetMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Compresses pages, HTMX swaps and JSON (the CSRF token is masked anew in every response, which
    # is Django's answer to BREACH); the console's 404 page replaces DEBUG's list of URL patterns.
    "nodelodge.compression.GZipMiddleware",
    "nodelodge.hardening.errors.ConsoleNotFoundMiddleware",
    "nodelodge.hardening.errors.ApiMethodNotAllowedMiddleware",
    "csp.middleware.CSPMiddleware",
    # Static files: hashed names, compressed, a year's cache (nodelodge/static_files.py).
    "nodelodge.static_files.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language: from the /de/ prefix on pages; LanguageChoiceMiddleware sends an unprefixed
    # page to /de/ when the remembered choice or the browser asks for German, and lets the API follow
    # Accept-Language and the admin the choice (nodelodge/i18n.py).
    "django.middleware.locale.LocaleMiddleware",
    # OPTIONS answered with Allow and a method a path does not take with 405, before any view runs
    # (after the language, so /de/ pages resolve; hardening/methods.py).
    "nodelodge.hardening.methods.MethodsMiddleware",
    # A request the proxy has already given up on (X-Request-Start + PROXY_READ_TIMEOUT_SECONDS) is
    # answered 503 before any view runs; Launch checks again before it commits (hardening/deadline.py).
    "nodelodge.hardening.deadline.ProxyDeadlineMiddleware",
    "nodelodge.i18n.LanguageChoiceMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",
    # Last, so its process_exception sees a database error first: a 503, not a traceback.
    "nodelodge.hardening.faults.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "nodelodge.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "nodelodge.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
        # A kept connection is checked before a request reuses it, so a database restart costs
        # no request an error: a dead connection is replaced instead.
        conn_health_checks=True,
    )
}
# What the console sets on the connection for the database it is, said where every other difference
# between the databases is (catalog/database.py).
SILENCED_SYSTEM_CHECKS = connection_settings(cast(dict[str, Any], DATABASES["default"]))
# A PostgreSQL streaming replica of DATABASE_URL for the wizard's and the API's reads
# (catalog.database.replica_first); writes, Launch and everything else stay on the primary. A replica
# behind by more than DATABASE_REPLICA_MAX_LAG seconds, or down, is skipped (catalog.replica).
if os.environ.get("DATABASE_REPLICA_URL"):
    DATABASES["replica"] = dj_database_url.parse(
        os.environ["DATABASE_REPLICA_URL"],
        conn_max_age=DATABASES["default"]["CONN_MAX_AGE"],
        conn_health_checks=True,
    )
    connection_settings(cast(dict[str, Any], DATABASES["replica"]))  # the primary's session settings
    # A replica gone silent costs a request 2 s, once.
    DATABASES["replica"]["OPTIONS"].setdefault("connect_timeout", 2)
    # Tests run against the primary's test database; the replica is never created or migrated.
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
DATABASE_ROUTERS = ["catalog.database.ReadRouter"]
DATABASE_REPLICA_MAX_LAG = float(os.environ.get("DATABASE_REPLICA_MAX_LAG", "5"))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "wizard:start"
LOGOUT_REDIRECT_URL = "wizard:start"
# Sign-in lockout (nodelodge/hardening/lockout.py): a username from one address after
# AXES_FAILURE_LIMIT failures, an address whatever the usernames after AXES_ADDRESS_FAILURE_LIMIT.
AXES_HANDLER = "nodelodge.hardening.lockout.UserAndAddressLockoutHandler"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT", "5"))
AXES_ADDRESS_FAILURE_LIMIT = int(os.environ.get("AXES_ADDRESS_FAILURE_LIMIT", "50"))
AXES_COOLOFF_TIME = 0.25  # hours
AXES_RESET_ON_SUCCESS = True
# The client address as the trusted proxies give it (TRUSTED_PROXY_COUNT), as the API limit sees it.
AXES_CLIENT_IP_CALLABLE = "nodelodge.hardening.proxies.client_address"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("de", "Deutsch")]
# The console's own translations; sizing/locale holds the engine's (found as an installed app's).
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Where collectstatic writes and the console serves from: the checkout's staticfiles/ unless set.
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"]
# Pages name static files by the hashed names in collectstatic's manifest, which production and
# bin/run (STATIC_FILES_COLLECTED=1) write before they serve, compressed copies beside each file.
# With DEBUG on and without it (manage.py runserver in a checkout), the source files as they are.
STATIC_FILES_COLLECTED = not DEBUG or env_bool("STATIC_FILES_COLLECTED", False)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "nodelodge.static_files.HashedStaticFilesStorage"
        if STATIC_FILES_COLLECTED
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "console@nodelodge.example")
# Sign-up and password resets send e-mail: production sets EMAIL_BACKEND to SMTP and these.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)

# Redis is the Celery broker in production. In the embedded run (no REDIS_URL) tasks run
# eagerly in-process, so a refresh works with no services at all.
REDIS_URL = os.environ.get("REDIS_URL", "")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# No task holds a worker process for long, whatever it waits on (a feed fetch has its own deadline,
# PROVIDER_FEED_TIMEOUT_SECONDS; this is the backstop for the rest): at the soft limit the task is
# interrupted and records why, at the hard limit the worker replaces the process. Both need the
# prefork pool (`celery worker`'s default).
CELERY_TASK_SOFT_TIME_LIMIT = int(os.environ.get("TASK_SOFT_TIME_LIMIT_SECONDS", "120"))
CELERY_TASK_TIME_LIMIT = int(os.environ.get("TASK_TIME_LIMIT_SECONDS", str(CELERY_TASK_SOFT_TIME_LIMIT + 30)))
CELERY_BEAT_SCHEDULE = {
    "refresh-all-providers": {
        "task": "nodelodge.refresh.tasks.refresh_all_providers",
        "schedule": float(os.environ.get("PROVIDER_REFRESH_INTERVAL_SECONDS", "60")),
    },
    # Bookings that reached their machine's booking limit end by themselves (and before My launches
    # is shown); the GPUs go back to the machine.
    "end-expired-bookings": {
        "task": "nodelodge.launches.tasks.end_expired_bookings",
        "schedule": 60.0,
    },
    # Watches are checked after every refresh, and on this schedule besides (machines go stale
    # without any refresh).
    "evaluate-due-watches": {
        "task": "nodelodge.watches.tasks.evaluate_due_watches",
        "schedule": float(os.environ.get("WATCH_BEAT_SECONDS", "60")),
    },
    # The price history keeps PRICE_HISTORY_RETENTION_DAYS; older hours are deleted once an hour.
    "prune-price-history": {
        "task": "nodelodge.refresh.tasks.prune_price_history",
        "schedule": 3600.0,
    },
}
# How long the refreshes' price and stock history is kept (nodelodge/refresh/history.py).
PRICE_HISTORY_RETENTION_DAYS = int(os.environ.get("PRICE_HISTORY_RETENTION_DAYS", "90"))
# A refresh samples the whole fleet into that history at most this often, across all providers.
PRICE_HISTORY_SAMPLE_SECONDS = int(os.environ.get("PRICE_HISTORY_SAMPLE_SECONDS", "300"))

# Watches (docs/guides/watches.md): how often each is checked at the latest, the public address its
# e-mails and feeds link to, the webhook's retries (seconds before each) and when it is disabled.
WATCH_CHECK_INTERVAL_SECONDS = int(os.environ.get("WATCH_CHECK_INTERVAL_SECONDS", "300"))
CONSOLE_BASE_URL = os.environ.get("CONSOLE_BASE_URL", "http://127.0.0.1:8000")
WATCH_WEBHOOK_RETRY_DELAYS = [
    int(s) for s in os.environ.get("WATCH_WEBHOOK_RETRY_DELAYS", "30,120,600").split(",") if s.strip()
]
WATCH_WEBHOOK_MAX_FAILURES = int(os.environ.get("WATCH_WEBHOOK_MAX_FAILURES", "5"))
# The only ports a webhook address may name (none named: 443); any other is refused when the watch
# is made and at delivery, so a webhook cannot probe a public host's other services.
WATCH_WEBHOOK_ALLOWED_PORTS = [
    int(s) for s in os.environ.get("WATCH_WEBHOOK_ALLOWED_PORTS", "443,8443").split(",") if s.strip()
]
# Tests only: lets a webhook reach a receiver on 127.0.0.1 / ::1 over http. Never set in production.
WATCH_WEBHOOK_ALLOW_LOOPBACK = env_bool("WATCH_WEBHOOK_ALLOW_LOOPBACK", False)

# A machine not heard from within this window no longer counts as available.
MACHINE_STALE_AFTER_SECONDS = int(os.environ.get("MACHINE_STALE_AFTER_SECONDS", str(15 * 60)))
# An answer (page, HTMX partial, API) is served again, from the cache or as a 304, for at most this many
# seconds of the same fleet state, and at most a tenth of the stale window (nodelodge/recommendations/
# fleet_state.py); 0 turns ETags and the cache of answers off.
ANSWER_CACHE_SECONDS = int(os.environ.get("ANSWER_CACHE_SECONDS", "60"))
# The demo providers' feeds are served by the console itself (see nodelodge/refresh/views.py).
DEMO_FEED_BASE_URL = os.environ.get(
    "DEMO_FEED_BASE_URL", f"http://127.0.0.1:{os.environ.get('PORT', '8000')}"
)
# Whether the console serves those demo feeds at /feeds/demo/<slug>.json; on with DEBUG unless set.
DEMO_FEEDS_ENABLED = env_bool("DEMO_FEEDS_ENABLED", DEBUG)
PROVIDER_FEED_TIMEOUT_SECONDS = float(os.environ.get("PROVIDER_FEED_TIMEOUT_SECONDS", "10"))

# A hung Redis must not hold requests: each cache call waits at most REDIS_SOCKET_TIMEOUT_SECONDS,
# and after a failure the cache is skipped for REDIS_BREAKER_SECONDS (nodelodge/hardening/cache_breaker.py).
REDIS_SOCKET_TIMEOUT_SECONDS = float(os.environ.get("REDIS_SOCKET_TIMEOUT_SECONDS", "0.25"))
REDIS_BREAKER_SECONDS = float(os.environ.get("REDIS_BREAKER_SECONDS", "5"))
CACHES = {
    "default": (
        {
            "BACKEND": "nodelodge.hardening.cache_breaker.BreakerRedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {
                "socket_connect_timeout": REDIS_SOCKET_TIMEOUT_SECONDS,
                "socket_timeout": REDIS_SOCKET_TIMEOUT_SECONDS,
            },
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# Production hardening, active whenever DEBUG is off.
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# Content-Security-Policy: scripts and styles only from our own static files (htmx is vendored and
# configured without eval or injected styles; the pages carry no inline script or style).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# JSON API rate limit per client address ("120/min"; "off" turns it off). Counted in the cache.
API_RATE_LIMIT = os.environ.get("API_RATE_LIMIT", "120/min")
# The wizard page and its partials, per client address (nodelodge/hardening/page_limit.py).
PAGE_RATE_LIMIT = os.environ.get("PAGE_RATE_LIMIT", "240/min")
# Sign-up and password reset mail any address typed: per client address, and per e-mail address for
# the reset (nodelodge/hardening/mail_limit.py).
SIGNUP_RATE_LIMIT = os.environ.get("SIGNUP_RATE_LIMIT", "10/hour")
PASSWORD_RESET_RATE_LIMIT = os.environ.get("PASSWORD_RESET_RATE_LIMIT", "10/hour")
PASSWORD_RESET_EMAIL_RATE_LIMIT = os.environ.get("PASSWORD_RESET_EMAIL_RATE_LIMIT", "3/hour")
# Proxies in front of the console whose X-Forwarded-For and X-Forwarded-Proto are believed
# (nodelodge/hardening/proxies.py). 0: neither is, the connection speaks for itself.
TRUSTED_PROXY_COUNT = int(os.environ.get("TRUSTED_PROXY_COUNT", "0"))
NINJA_NUM_PROXIES = TRUSTED_PROXY_COUNT
# nginx's proxy_read_timeout (deploy/nginx.conf) and a margin: a request that came through a trusted
# proxy more than their difference ago (its X-Request-Start) is dropped, not worked on
# (nodelodge/hardening/deadline.py).
PROXY_READ_TIMEOUT_SECONDS = float(os.environ.get("PROXY_READ_TIMEOUT_SECONDS", "60"))
PROXY_DEADLINE_MARGIN_SECONDS = float(os.environ.get("PROXY_DEADLINE_MARGIN_SECONDS", "5"))
# Every request's own deadline, from when the console starts on it: past it the answer's work stops at
# its next step and the request is answered 503 with a Retry-After, nothing changed. It must stay below
# gunicorn's timeout (GUNICORN_TIMEOUT, 30 s in deploy/gunicorn.conf.py), which kills the worker.
REQUEST_WORK_SECONDS = float(os.environ.get("REQUEST_WORK_SECONDS", "20"))
# Dear answers (throughput plans, long or deep lists) worked out at once across the console's workers
# (nodelodge/hardening/slots.py): one more is answered 503 with a Retry-After at once. 0: no limit.
DEAR_ANSWERS_AT_ONCE = int(os.environ.get("DEAR_ANSWERS_AT_ONCE", "1"))
# Read only as TrustedProxyMiddleware leaves it: the trusted proxy's value, or absent.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
