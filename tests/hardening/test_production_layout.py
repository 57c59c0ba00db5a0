"""The documented production layout, as real processes: nginx (deploy/nginx.conf) in front of
gunicorn (deploy/gunicorn.conf.py) on the test database and Redis, DEBUG=0, one trusted proxy.

- Slow clients: more connections than gunicorn has workers, each sending one header line at a time,
  hold gunicorn alone (shown first, as the control) but not the layout: through nginx, normal
  requests are answered while the attack goes on.
- The proxy's word: plain HTTP is sent to HTTPS, HTTPS through the proxy is believed.
- A database restart: every server connection terminated between requests costs no request.
- The shipped configuration whole: 1,000 simultaneous clients all answered; security headers on
  every answer, nginx's own errors included, each sent once; nginx's own errors JSON under /api/;
  a long review link's redirect to sign-in fits; HEAD answered like GET.
- Per address, by nginx before the console: two requests in flight at once, ten a second with a burst
  of forty; past either a 429 in the API's shape with Retry-After, other addresses unaffected.
- Methods: TRACE, which nginx refuses itself, answered by the console's own 405 with Allow (JSON
  under /api/); OPTIONS answered with Allow, not the page.
- Under /api/ every error JSON: gunicorn's HTML 500 (a worker killed past its timeout, for real and
  scripted) and nginx's 504 replaced, the console's own 400, 429 and 503 passed on with their words
  and Retry-After; a page's errors left as they were.
"""
from __future__ import annotations

import http.client
import json
import shutil
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

import psycopg
import pytest
from django.db import connection
from django.utils import translation

from nodelodge.hardening import errors
from tests.helpers import LLAMA_8B

from .helpers import add_fleet, check_static_files_served_like_a_product, production_env
from .servers import HOST, Gunicorn, Nginx, temporary_folder, tls_context

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgresql(
        reason="the production layout (nginx, gunicorn) runs on a PostgreSQL server, as production does, and restarts its connections"
    ),
]

WORKERS = 2


def database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.fixture(scope="module")
def layout(django_db_setup, django_db_blocker):
    folder = temporary_folder()
    with django_db_blocker.unblock():
        env = production_env(
            DATABASE_URL=database_url(), ALLOWED_HOSTS=HOST, TRUSTED_PROXY_COUNT="1", API_RATE_LIMIT="off",
            DB_CONN_MAX_AGE="600", LOG_LEVEL="CRITICAL",
        )
    app = Gunicorn(folder, env, workers=WORKERS)
    try:
        proxy = Nginx(folder, app.port)
    except BaseException:
        app.stop()
        raise
    yield app, proxy
    proxy.stop()
    app.stop()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def fleet(transactional_db):
    from catalog.services import load_catalog

    load_catalog(fleet=False)
    return add_fleet()


def https_get(proxy: Nginx, path: str, timeout: float) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPSConnection("127.0.0.1", proxy.https_port, timeout=timeout, context=tls_context())
    try:
        conn.request("GET", path, headers={"Host": HOST})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def plain_get(port: int, path: str, timeout: float, **headers) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Host": HOST, **headers})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


class SlowClients:
    """Connections that each send a request line, then one header line every `every` seconds,
    never finishing the request, until stopped."""

    def __init__(self, count: int, connect, every: float = 1.0):
        self.every = every
        self.stopped = threading.Event()
        self.ready = threading.Barrier(count + 1, timeout=30)
        self.lines_sent = [0] * count
        self.alive = [True] * count
        self.threads = [threading.Thread(target=self._run, args=(i, connect), daemon=True) for i in range(count)]

    def _run(self, index: int, connect) -> None:
        sock = connect()
        try:
            sock.sendall(f"GET /api/v1/models HTTP/1.1\r\nHost: {HOST}\r\n".encode())
            self.lines_sent[index] = 1
            self.ready.wait()
            while not self.stopped.wait(self.every):  # the attack's own pace
                sock.sendall(f"X-Slow-{self.lines_sent[index]}: still typing\r\n".encode())
                self.lines_sent[index] += 1
        except OSError:
            self.alive[index] = False
        finally:
            sock.close()

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        self.ready.wait()  # every connection is open and has sent its first line
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        for thread in self.threads:
            thread.join(timeout=10)


def plain_socket(port: int):
    return lambda: socket.create_connection(("127.0.0.1", port), timeout=30)


def tls_socket(port: int):
    def connect():
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        return tls_context().wrap_socket(raw, server_hostname=HOST)
    return connect


def test_slow_clients_hold_gunicorn_alone_but_not_the_layout(layout, fleet):
    app, proxy = layout
    # Control: straight at gunicorn, twice as many slow connections as workers starve everyone else.
    with SlowClients(2 * WORKERS, plain_socket(app.port)):
        with pytest.raises(TimeoutError):
            plain_get(app.port, "/api/v1/models", timeout=4, **{"X-Forwarded-Proto": "https"})

    # The layout: four times as many slow connections through nginx, normal requests meanwhile.
    with SlowClients(4 * WORKERS, tls_socket(proxy.https_port)) as attack:
        answers = [https_get(proxy, f"/api/v1/recommendations?{LLAMA_8B}", timeout=10) for _ in range(6)]
        pages = [https_get(proxy, "/api/v1/models", timeout=10) for _ in range(6)]
        still_attacking = all(attack.alive) and min(attack.lines_sent) >= 1
    assert still_attacking
    for status, headers, body in answers:
        assert status == 200, body[:300]
        assert json.loads(body)["machines"]
    assert {status for status, _, _ in pages} == {200}


def test_plain_http_is_sent_to_https_and_https_through_the_proxy_is_believed(layout, fleet):
    app, proxy = layout
    status, headers, _ = plain_get(proxy.http_port, "/api/v1/models", timeout=10)
    assert status == 301 and headers["Location"] == f"https://{HOST}/api/v1/models"

    status, headers, body = https_get(proxy, "/api/v1/models", timeout=10)
    assert status == 200 and json.loads(body)
    assert headers["Strict-Transport-Security"].startswith("max-age=31536000")

    # A client claiming HTTPS through the proxy's plain port: nginx sets the header from its own
    # scheme, so the console redirects (nginx's own port-80 site redirects first anyway).
    status, headers, _ = plain_get(proxy.http_port, "/api/v1/models", timeout=10,
                                   **{"X-Forwarded-Proto": "https"})
    assert status == 301 and urlparse(headers["Location"]).scheme == "https"


def test_a_database_restart_costs_no_request(layout, fleet):
    app, proxy = layout
    path = f"/api/v1/recommendations?{LLAMA_8B}"
    # Every worker has answered, so each keeps a connection to the database.
    before = [https_get(proxy, path, timeout=10)[0] for _ in range(4 * WORKERS)]
    assert set(before) == {200}

    settings = connection.settings_dict
    with psycopg.connect(host=settings["HOST"] or "127.0.0.1", port=settings["PORT"] or 5432,
                         user=settings["USER"], dbname=settings["NAME"], autocommit=True) as admin:
        terminated = admin.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> %s",
            [connection.connection.info.backend_pid if connection.connection else 0],
        ).fetchone()[0]
    assert terminated >= 1  # the workers' kept connections, as a restart would drop them

    after = [https_get(proxy, path, timeout=10) for _ in range(4 * WORKERS)]
    assert [status for status, _, _ in after] == [200] * (4 * WORKERS), [body[:200] for _, _, body in after]


SECURITY_HEADERS = ("X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy", "Content-Security-Policy")


def raw_request(port: int, method: str, path: str, *, tls: bool, body: bytes = b"",
                timeout: float = 10, source: str | None = None) -> tuple[int, list[tuple[str, str]], bytes]:
    """One request (from `source`, any address of 127/8); the answer's headers as a list, so a header
    sent twice shows twice."""
    connection_class = http.client.HTTPSConnection if tls else http.client.HTTPConnection
    extra = {"context": tls_context()} if tls else {}
    if source:
        extra["source_address"] = (source, 0)
    conn = connection_class("127.0.0.1", port, timeout=timeout, **extra)
    try:
        conn.request(method, path, body=body or None, headers={"Host": HOST})
        response = conn.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        conn.close()


def header_values(headers: list[tuple[str, str]], name: str) -> list[str]:
    return [value for key, value in headers if key.lower() == name.lower()]


def assert_security_headers(headers, *, https: bool = True) -> None:
    for name in SECURITY_HEADERS + (("Strict-Transport-Security",) if https else ()):
        assert len(header_values(headers, name)) == 1, (name, headers)
    assert header_values(headers, "X-Frame-Options") == ["DENY"]
    assert header_values(headers, "X-Content-Type-Options") == ["nosniff"]


def test_a_thousand_simultaneous_clients_are_all_answered(layout):
    app, proxy = layout
    clients = [socket.create_connection(("127.0.0.1", proxy.http_port), timeout=30) for _ in range(1000)]
    try:
        for sock in clients:  # every connection open at once, then each asks
            sock.sendall(f"GET /api/v1/models HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
        statuses = []
        for sock in clients:
            answer = b""
            try:
                while b"\r\n" not in answer:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    answer += chunk
            except OSError:
                pass
            statuses.append(answer.split(b"\r\n", 1)[0])
    finally:
        for sock in clients:
            sock.close()
    assert statuses == [b"HTTP/1.1 301 Moved Permanently"] * 1000


def test_the_shipped_configuration_is_sized_for_a_thousand_clients():
    from .servers import REPO

    config = (REPO / "deploy" / "nginx.conf").read_text()
    import re

    connections = int(re.search(r"worker_connections\s+(\d+);", config).group(1))
    files = int(re.search(r"worker_rlimit_nofile\s+(\d+);", config).group(1))
    assert connections >= 2 * 1000  # a proxied client holds two connections
    assert files >= 2 * connections


def test_answers_carry_each_security_header_once_the_consoles_own_kept(layout, fleet):
    app, proxy = layout
    status, headers, _ = raw_request(proxy.https_port, "GET", "/api/v1/models", tls=True)
    assert status == 200
    assert_security_headers(headers)

    status, headers, _ = raw_request(proxy.https_port, "GET", "/secure-and-community/", tls=True)
    assert status == 200
    assert_security_headers(headers)
    assert "script-src 'self'" in header_values(headers, "Content-Security-Policy")[0]  # the console's

    status, headers, _ = raw_request(proxy.http_port, "GET", "/api/v1/models", tls=False)
    assert status == 301
    assert_security_headers(headers, https=False)


def test_nginx_s_own_errors_carry_security_headers_and_are_json_under_the_api(layout, fleet):
    app, proxy = layout
    long_query = "x=" + "a" * 9000
    for path, wanted in ((f"/api/v1/models?{long_query}", "json"), (f"/?{long_query}", "html")):
        status, headers, body = raw_request(proxy.https_port, "GET", path, tls=True)
        assert status == 414, body[:200]
        assert_security_headers(headers)
        if wanted == "json":
            assert header_values(headers, "Content-Type")[0].startswith("application/json")
            assert json.loads(body)["errors"]["request"] == "The address is too long."
        else:
            assert header_values(headers, "Content-Type")[0].startswith("text/html")

    status, headers, body = raw_request(proxy.https_port, "POST", "/api/v1/models", tls=True,
                                        body=b"x" * (2 * 1024 * 1024))
    assert status == 413
    assert_security_headers(headers)
    assert json.loads(body)["errors"]["request"] == "The request is too large."


def test_with_the_console_down_nginx_answers_502_json_under_the_api_with_security_headers():
    folder = temporary_folder()
    try:
        from .servers import free_port

        proxy = Nginx(folder, free_port())  # nothing listens upstream
        try:
            status, headers, body = raw_request(proxy.https_port, "GET", "/api/v1/models", tls=True)
            assert status == 502
            assert_security_headers(headers)
            assert json.loads(body)["errors"]["server"].startswith("The console is not answering")

            status, headers, body = raw_request(proxy.https_port, "GET", "/calculators/", tls=True)
            assert status == 502
            assert_security_headers(headers)
            assert b"The console is not answering" in body
        finally:
            proxy.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class SilentConsole:
    """An upstream that takes connections and never answers: every request through nginx stays in
    flight until the test ends. Counts the connections nginx has opened to it."""

    def __init__(self):
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(64)
        self.port = self.socket.getsockname()[1]
        self.accepted = []
        self.arrived = threading.Condition()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                accepted, _ = self.socket.accept()
            except OSError:
                return
            with self.arrived:
                self.accepted.append(accepted)
                self.arrived.notify_all()

    def wait_for(self, count: int) -> bool:
        with self.arrived:
            return self.arrived.wait_for(lambda: len(self.accepted) >= count, timeout=10)

    def close(self):
        self.socket.close()
        for accepted in self.accepted:
            accepted.close()


def test_one_address_gets_two_requests_in_flight_a_third_is_refused_at_once_and_others_are_not():
    folder, console = temporary_folder(), SilentConsole()
    proxy = Nginx(folder, console.port)
    held = []
    try:
        def hold(source: str):
            try:
                raw_request(proxy.https_port, "GET", "/api/v1/models", tls=True, timeout=6, source=source)
            except OSError:  # the silent console: the request is still waiting when the test moves on
                held.append(source)

        holders = [threading.Thread(target=hold, args=("127.0.0.2",)) for _ in range(2)]
        for thread in holders:
            thread.start()
        assert console.wait_for(2)  # both requests are in the console

        status, headers, body = raw_request(proxy.https_port, "GET", "/api/v1/recommendations", tls=True,
                                            source="127.0.0.2", timeout=2)
        assert status == 429
        assert json.loads(body)["errors"]["request"].startswith("Too many requests from this address right now")
        assert header_values(headers, "Retry-After") == ["1"]
        assert_security_headers(headers)
        status, headers, body = raw_request(proxy.https_port, "GET", "/", tls=True, source="127.0.0.2",
                                            timeout=2)
        assert status == 429 and b"Too many requests from this address right now" in body

        # Static files are not counted, and another address is not refused: both reach the console
        # (which never answers them).
        for path, source in (("/static/css/console.css", "127.0.0.2"), ("/api/v1/models", "127.0.0.3")):
            reached = len(console.accepted)
            with pytest.raises(TimeoutError):
                raw_request(proxy.https_port, "GET", path, tls=True, source=source, timeout=1.5)
            assert len(console.accepted) == reached + 1
        for thread in holders:
            thread.join()
        assert held == ["127.0.0.2", "127.0.0.2"]
    finally:
        proxy.stop()
        console.close()
        shutil.rmtree(folder, ignore_errors=True)


class InstantConsole:
    """An upstream that answers every request at once: what nginx's own rate limit lets through is
    then all a loop's speed depends on."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 - the http.server API
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_client_looping_from_one_address_is_refused_by_nginx_past_its_burst():
    folder, console = temporary_folder(), InstantConsole()
    proxy = Nginx(folder, console.port)
    try:
        conn = http.client.HTTPSConnection("127.0.0.1", proxy.https_port, timeout=10, context=tls_context(),
                                           source_address=("127.0.0.5", 0))
        answers = []
        for _ in range(200):  # one keep-alive connection, as fast as it goes
            conn.request("GET", "/api/v1/models", headers={"Host": HOST})
            response = conn.getresponse()
            answers.append((response.status, response.getheaders(), response.read()))
        conn.close()

        statuses = [status for status, _, _ in answers]
        assert statuses[:40] == [200] * 40  # the burst
        refused = [(headers, body) for status, headers, body in answers if status == 429]
        assert len(refused) >= 100 and len(refused) + statuses.count(200) == 200
        headers, body = refused[0]
        assert json.loads(body)["errors"]["request"].startswith("Too many requests from this address right now")
        assert header_values(headers, "Retry-After") == ["1"]
        assert_security_headers(headers)
        # Another address is not refused meanwhile.
        assert raw_request(proxy.https_port, "GET", "/api/v1/models", tls=True, source="127.0.0.6")[0] == 200
    finally:
        proxy.stop()
        console.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_an_anonymous_review_link_with_a_long_query_is_sent_to_sign_in(layout, fleet):
    from nodelodge.launches.views import review_url

    app, proxy = layout
    query = LLAMA_8B + "&" + "&".join(f"countries=D{chr(65 + i % 26)}&gpu=h100" for i in range(100))
    query = query[:2400]  # the longest query a review link carries (ReviewForm)
    path = review_url(1, 1, "1.0000", query)
    assert len(path) >= 2400

    status, headers, body = raw_request(proxy.https_port, "GET", path, tls=True)

    assert status == 302, body[:300]
    assert urlparse(header_values(headers, "Location")[0]).path.endswith("/login/")


def test_head_through_the_layout_answers_like_get(layout, fleet):
    app, proxy = layout
    for path in ("/api/v1/models", "/calculators/"):
        status, headers, body = raw_request(proxy.https_port, "HEAD", path, tls=True)
        assert status == 200 and body == b""


def test_nginx_stamps_each_request_with_its_own_start_and_a_clients_forged_one_counts_for_nothing(
    layout, fleet
):
    app, proxy = layout
    ancient = {"X-Request-Start": "t=1000000000.000", "X-Forwarded-Proto": "https"}
    # Control: the header in the trusted proxy's place (only nginx reaches gunicorn) is believed, so
    # a request received long ago is dropped before any view runs.
    status, headers, body = plain_get(app.port, "/api/v1/models", timeout=10, **ancient)
    assert status == 503 and headers["Retry-After"] == "10"
    assert "too busy" in json.loads(body)["errors"]["service"]

    # Through nginx the same header from the client is replaced by nginx's own receipt time.
    conn = http.client.HTTPSConnection("127.0.0.1", proxy.https_port, timeout=10, context=tls_context())
    try:
        conn.request("GET", "/api/v1/models", headers={"Host": HOST, "X-Request-Start": ancient["X-Request-Start"]})
        response = conn.getresponse()
        status, body = response.status, response.read()
    finally:
        conn.close()
    assert status == 200 and json.loads(body)


def test_an_answer_is_revalidated_through_the_layout_with_a_304(layout, fleet):
    """The production layout passes the ETag and If-None-Match through: the client's copy is
    confirmed with a 304 and no body (the API's answer here; pages and partials alike)."""
    _, proxy = layout
    path = "/api/v1/recommendations?" + LLAMA_8B

    def get(**headers):
        conn = http.client.HTTPSConnection("127.0.0.1", proxy.https_port, timeout=30, context=tls_context())
        try:
            conn.request("GET", path, headers={"Host": HOST, **headers})
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    status, headers, body = get()
    assert status == 200 and headers["Cache-Control"].startswith("public, max-age=")
    for _ in range(2):  # a second try only when the minute's step ended between the two requests
        again, again_headers, again_body = get(**{"If-None-Match": headers["ETag"]})
        if again == 304:
            break
        headers = again_headers
    assert again == 304, again
    assert again_body == b""
    assert again_headers["ETag"] == headers["ETag"]


def test_trace_through_nginx_is_the_consoles_own_405_with_allow_json_under_the_api(layout, fleet):
    """nginx refuses TRACE itself, before any location; its 405 had no Allow and was HTML on /api/.
    The console's answer to the same address stands in: its Allow, JSON under /api/."""
    _, proxy = layout
    for path, allow in (("/api/v1/watches", "GET, POST, HEAD, OPTIONS"), ("/api/v1/watches/5", "DELETE, OPTIONS"),
                        (f"/api/v1/recommendations?{LLAMA_8B}", "GET, HEAD, OPTIONS")):
        status, headers, body = raw_request(proxy.https_port, "TRACE", path, tls=True)
        assert status == 405, body[:200]
        assert header_values(headers, "Allow") == [allow]
        assert header_values(headers, "Content-Type")[0].startswith("application/json")
        assert json.loads(body) == {"errors": {"method": f"TRACE is not allowed here; use {allow}."}}
        assert_security_headers(headers)

    status, headers, body = raw_request(proxy.https_port, "TRACE", "/calculators/", tls=True)
    assert status == 405 and header_values(headers, "Allow") == ["GET, HEAD, OPTIONS"]
    assert not header_values(headers, "Content-Type")[0].startswith("application/json")

    status, headers, body = raw_request(proxy.https_port, "TRACE", "/api/v1/no-such-thing", tls=True,
                                        body=b"a body nginx discards")
    assert status == 404 and json.loads(body)["errors"]["path"]


def test_options_through_nginx_answers_allow_without_the_page(layout, fleet):
    _, proxy = layout
    for path, allow in (("/api/v1/watches", "GET, POST, HEAD, OPTIONS"), ("/calculators/", "GET, HEAD, OPTIONS")):
        status, headers, body = raw_request(proxy.https_port, "OPTIONS", path, tls=True)
        assert (status, header_values(headers, "Allow"), body) == (204, [allow], b"")


class ScriptedConsole:
    """An upstream that answers each path as scripted: (status, headers, body), after `delay` seconds;
    the console's own JSON errors and gunicorn's plain HTML 500 as they come from them."""

    def __init__(self, answers: dict[str, tuple[int, dict, bytes]], delay: float = 0):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 - the http.server API
                status, headers, body = answers[self.path]
                if delay:
                    threading.Event().wait(delay)  # a console slower than nginx waits
                self.send_response(status)
                for name, value in {"Content-Length": str(len(body)), **headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


GUNICORN_500 = (500, {"Content-Type": "text/html", "Connection": "close"},
                b"<html><head><title>Internal Server Error</title></head><body><h1><p>Internal Server Error</p>"
                b"</h1></body></html>")
JSON = "application/json"


def scripted_request(proxy: Nginx, path: str, **headers) -> tuple[int, list, bytes]:
    conn = http.client.HTTPSConnection("127.0.0.1", proxy.https_port, timeout=30, context=tls_context())
    try:
        conn.request("GET", path, headers={"Host": HOST, **headers})
        response = conn.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        conn.close()


def test_gunicorns_html_500_under_the_api_is_json_and_the_consoles_own_errors_pass_through():
    busy = json.dumps({"errors": {"service": "The console was too busy to answer this request in time."}})
    limited = json.dumps({"errors": {"request": "Zu viele Anfragen: höchstens 120 pro min."}})
    own_500 = json.dumps({"errors": {"server": "Bei uns ist etwas schiefgegangen."}})
    console = ScriptedConsole({
        "/api/v1/gunicorn": GUNICORN_500,
        "/api/v1/busy": (503, {"Content-Type": JSON, "Retry-After": "10"}, busy.encode()),
        "/api/v1/limited": (429, {"Content-Type": JSON, "Retry-After": "7"}, limited.encode()),
        "/api/v1/own": (500, {"Content-Type": JSON, "Content-Language": "de"}, own_500.encode()),
        "/api/v1/refused": (400, {"Content-Type": JSON}, b'{"errors": {"context": "A whole number."}}'),
        "/calculators/": GUNICORN_500,
    })
    folder = temporary_folder()
    proxy = Nginx(folder, console.port)
    try:
        status, headers, body = scripted_request(proxy, "/api/v1/gunicorn")
        assert status == 500 and header_values(headers, "Content-Type") == [JSON]
        with translation.override("en"):
            assert json.loads(body) == {"errors": {"server": str(errors.SERVER_ERROR_MESSAGE)}}
        assert_security_headers(headers)
        status, headers, body = scripted_request(proxy, "/api/v1/gunicorn", **{"Accept-Language": "de-DE,de;q=0.9"})
        assert status == 500
        with translation.override("de"):
            assert json.loads(body) == {"errors": {"server": str(errors.SERVER_ERROR_MESSAGE)}}
        # The console's own JSON 500 in German stays German.
        status, headers, body = scripted_request(proxy, "/api/v1/own")
        assert status == 500 and json.loads(body)["errors"]["server"].startswith("Bei uns ist etwas schiefgegangen.")

        # The console's own errors pass untouched: its words, its Retry-After.
        for path, wanted_status, text, retry_after in (("/api/v1/busy", 503, busy, ["10"]),
                                                       ("/api/v1/limited", 429, limited, ["7"]),
                                                       ("/api/v1/refused", 400, None, [])):
            status, headers, body = scripted_request(proxy, path)
            assert status == wanted_status
            assert header_values(headers, "Retry-After") == retry_after
            assert text is None or json.loads(body) == json.loads(text)

        # A page's error is left as it was.
        status, headers, body = scripted_request(proxy, "/calculators/")
        assert status == 500 and b"Internal Server Error" in body
    finally:
        proxy.stop()
        console.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_console_slower_than_nginx_waits_is_a_json_504_under_the_api():
    console = ScriptedConsole({"/api/v1/models": (200, {"Content-Type": JSON}, b"[]"),
                               "/calculators/": (200, {"Content-Type": "text/html"}, b"<p>late</p>")}, delay=3)
    folder = temporary_folder()
    proxy = Nginx(folder, console.port, read_timeout="1s")
    try:
        status, headers, body = scripted_request(proxy, "/api/v1/models")
        assert status == 504 and header_values(headers, "Content-Type") == [JSON]
        assert json.loads(body)["errors"]["server"] == "The console took too long to answer. Try again in a minute."
        status, headers, body = scripted_request(proxy, "/calculators/")
        assert status == 504 and b"The console took too long to answer" in body
    finally:
        proxy.stop()
        console.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_gunicorn_worker_killed_past_its_timeout_answers_the_api_json_through_nginx(
    django_db_setup, django_db_blocker, fleet
):
    """gunicorn kills a worker that works past its timeout and answers its own HTML 500; under /api/
    nginx answers the API's JSON 500 instead. A lock that no request can pass holds the worker."""
    folder = temporary_folder()
    with django_db_blocker.unblock():
        env = production_env(DATABASE_URL=database_url(), ALLOWED_HOSTS=HOST, TRUSTED_PROXY_COUNT="1",
                             API_RATE_LIMIT="off", LOG_LEVEL="CRITICAL", GUNICORN_TIMEOUT="2")
    app = Gunicorn(folder, env, workers=1, collect_static=False)
    proxy = Nginx(folder, app.port)
    settings = connection.settings_dict
    try:
        with psycopg.connect(host=settings["HOST"] or "127.0.0.1", port=settings["PORT"] or 5432,
                             user=settings["USER"], dbname=settings["NAME"]) as locker:
            locker.execute("LOCK TABLE catalog_machine, catalog_languagemodel IN ACCESS EXCLUSIVE MODE")
            status, headers, body = scripted_request(proxy, f"/api/v1/recommendations?{LLAMA_8B}")
            locker.rollback()
        assert status == 500, body[:300]
        assert header_values(headers, "Content-Type") == [JSON]
        with translation.override("en"):
            assert json.loads(body) == {"errors": {"server": str(errors.SERVER_ERROR_MESSAGE)}}
        assert "WORKER TIMEOUT" in app.log.read_text()
    finally:
        proxy.stop()
        app.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_schemathesis_run_with_every_check_passes_through_nginx(layout, fleet, tmp_path):
    """`schemathesis run --checks all` against the production layout's front: nginx (deploy/nginx.conf,
    its per-address limits raised for a run that asks from one address) before gunicorn. Every answer
    nginx gives itself under /api/ (405 for TRACE, 413, 414, 429, 5xx) must be in the API's shape and
    the schema's statuses too. With an API token, so the operations behind sign-in are run."""
    from .helpers import api_token, schemathesis_run

    app, _ = layout
    folder = temporary_folder()
    front = Nginx(folder, app.port, one_address_crowd=True)
    try:
        status, _, schema = raw_request(front.https_port, "GET", "/api/v1/openapi.json", tls=True)
        assert status == 200
        (tmp_path / "openapi.json").write_bytes(schema)
        run = schemathesis_run(str(tmp_path / "openapi.json"), tmp_path, url=f"https://127.0.0.1:{front.https_port}",
                               tls_verify=False, headers={"Host": HOST, "Authorization": f"Bearer {api_token()}"})
        assert run.returncode == 0, run.stdout[-8000:] + run.stderr[-2000:]
    finally:
        front.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_static_files_through_the_layout_are_hashed_compressed_and_kept_a_year(layout, fleet):
    app, proxy = layout
    status, headers, page = https_get(proxy, "/", timeout=30)
    assert status == 200

    def get(path: str, encoding: str) -> tuple[dict, bytes]:
        conn = http.client.HTTPSConnection("127.0.0.1", proxy.https_port, timeout=30, context=tls_context())
        try:
            conn.request("GET", path, headers={"Host": HOST, "Accept-Encoding": encoding})
            response = conn.getresponse()
            return dict(response.getheaders()), response.read()
        finally:
            conn.close()

    assert check_static_files_served_like_a_product(page.decode(), get) >= 3
