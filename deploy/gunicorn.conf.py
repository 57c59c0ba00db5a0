"""gunicorn for the production layout: behind nginx (deploy/nginx.conf), on the loopback only.

gunicorn's sync workers each serve one connection at a time, so a client that sends its request
slowly holds a worker for as long as it likes. nginx reads every request whole (and buffers every
answer) before a worker sees it, so only nginx ever talks to slow clients; gunicorn listens where
nothing but nginx can reach it.

    gunicorn nodelodge.wsgi --config deploy/gunicorn.conf.py
"""
import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")  # or unix:/run/nodelodge/gunicorn.sock
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = 30
keepalive = 2
accesslog = "-"
# Whether a request came over HTTPS is Django's decision, from the proxies TRUSTED_PROXY_COUNT
# admits (nodelodge/hardening/proxies.py); gunicorn is not to decide it on its own.
secure_scheme_headers = {}
forwarded_allow_ips = "127.0.0.1,::1"
# Above nginx's own limits (an address of 8,000 characters, header lines of 32 KiB), so what is too
# long is refused by nginx, as JSON under /api/, before gunicorn's plain-text error could answer.
limit_request_line = 8190
limit_request_field_size = 32768
