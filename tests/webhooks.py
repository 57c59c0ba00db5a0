"""A webhook receiver for the watch tests: a real HTTP server on loopback that records each POST, checks
its signature with the watch's secret, and answers as the test says (a status, a redirect)."""
from __future__ import annotations

import hashlib
import hmac
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict
    body: bytes

    @property
    def document(self) -> dict:
        return json.loads(self.body)

    def signed_by(self, secret: str) -> bool:
        timestamp = self.headers.get("X-Timestamp", "")
        expected = hmac.new(secret.encode(), timestamp.encode() + b"." + self.body, hashlib.sha256).hexdigest()
        return bool(timestamp) and hmac.compare_digest(expected, self.headers.get("X-Signature", ""))


class Receiver:
    """Answers POST /<anything> with `status` (and a Location to /elsewhere for a 3xx)."""

    def __init__(self):
        self.received: list[Received] = []
        self.status = 204
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server API
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver.arrived:
                    receiver.received.append(Received(self.path, dict(self.headers), body))
                    receiver.arrived.notify_all()
                self.send_response(receiver.status)
                if 300 <= receiver.status < 400:
                    self.send_header("Location", f"http://127.0.0.1:{self.server.server_address[1]}/elsewhere")
                self.send_header("Content-Length", "5")
                self.end_headers()
                self.wfile.write(b"ignored"[:5])

            def log_message(self, format, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        """The port it listens on, which a test allows explicitly (WATCH_WEBHOOK_ALLOWED_PORTS)."""
        return self.server.server_address[1]

    def url(self, path: str = "hook") -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.received) >= count, timeout=timeout)
        return list(self.received)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class SilentReceiver:
    """Accepts the connection and never answers: a receiver past the 5 s timeout."""

    def __init__(self):
        import socket

        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(4)

    @property
    def port(self) -> int:
        return self.socket.getsockname()[1]

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def close(self):
        self.socket.close()
