"""Real server processes on loopback ports for the production-layout tests: gunicorn as
deploy/gunicorn.conf.py runs it, nginx with deploy/nginx.conf, each in its own temporary folder."""
from __future__ import annotations

import grp
import os
import pwd
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .helpers import REPO

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
HOST = "console.example.com"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, what: str, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{what} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)  # polling a port coming up; nothing to wait on instead
    raise AssertionError(f"{what} did not listen on {port} within {timeout}s:\n{log.read_text()[-3000:]}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Gunicorn:
    """gunicorn nodelodge.wsgi --config deploy/gunicorn.conf.py, bound to a free loopback port."""

    def __init__(self, folder: Path, env: dict[str, str], workers: int = 2, collect_static: bool = True):
        self.port = free_port()
        self.log = folder / "gunicorn.log"
        # Static files collected into this server's own folder, never the checkout's staticfiles/: the
        # test processes' WhiteNoise lists that folder when a client starts, and a collectstatic
        # rewriting it at that moment leaves names that are gone by the time they are read.
        env = {"STATIC_ROOT": str(folder / "staticfiles"), **env,
               "GUNICORN_BIND": f"127.0.0.1:{self.port}", "WEB_CONCURRENCY": str(workers)}
        # As a deployment does before it starts: with DEBUG off, pages name static files by the hashed
        # names in collectstatic's manifest (a fresh clone has none). With DEBUG on, none is read.
        if collect_static:
            subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
                           cwd=REPO, env=env, check=True, capture_output=True, timeout=120)
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "nodelodge.wsgi", "--config", "deploy/gunicorn.conf.py"],
                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
            )
        wait_for_port(self.port, self.process, "gunicorn", self.log)

    def stop(self) -> None:
        stop(self.process)


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "fullchain.pem", folder / "privkey.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={HOST}",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )
    return cert, key


class Nginx:
    """Debian's nginx running the shipped deploy/nginx.conf whole, its ports, upstream, certificate,
    pid, logs and temporary files moved to loopback ports and a temporary folder (each change
    checked to apply); its events, limits, headers and error pages as shipped."""

    def __init__(self, folder: Path, upstream_port: int, one_address_crowd: bool = False,
                 read_timeout: str | None = None):
        """`one_address_crowd`: the per-address limits lifted, where a benchmark's many clients share
        one address (or a schemathesis run asks from one). `read_timeout`: proxy_read_timeout instead
        of the shipped 60s, where a test waits for nginx's 504."""
        self.http_port, self.https_port = free_port(), free_port()
        cert, key = self_signed_certificate(folder)
        self.shipped = (REPO / "deploy" / "nginx.conf").read_text()
        user = pwd.getpwuid(os.geteuid()).pw_name
        group = grp.getgrgid(os.getegid()).gr_name
        temp = "\n".join(f"    {kind}_temp_path {folder / kind};" for kind in
                         ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        config = self.shipped
        for shipped, here in (
            ("user www-data;", f"user {user} {group};"),
            ("worker_processes auto;", "worker_processes 1;"),
            ("pid /run/nginx.pid;", f"pid {folder / 'nginx.pid'};"),
            ("error_log /var/log/nginx/error.log warn;", f"error_log {folder / 'error.log'} warn;"),
            ("access_log /var/log/nginx/access.log;", f"access_log off;\n{temp}"),
            ("listen 80;", f"listen 127.0.0.1:{self.http_port};"),
            ("listen 443 ssl http2;", f"listen 127.0.0.1:{self.https_port} ssl http2;"),
            ("server 127.0.0.1:8000 ", f"server 127.0.0.1:{upstream_port} "),
            ("/etc/ssl/nodelodge/fullchain.pem", str(cert)),
            ("/etc/ssl/nodelodge/privkey.pem", str(key)),
            *([("limit_conn nodelodge_per_address 2;", "limit_conn nodelodge_per_address 10000;"),
               ("rate=10r/s;", "rate=100000r/s;")] if one_address_crowd else []),
            *([("proxy_read_timeout 60s;", f"proxy_read_timeout {read_timeout};")] if read_timeout else []),
        ):
            assert shipped in config, f"deploy/nginx.conf no longer has {shipped!r}"
            config = config.replace(shipped, here)
        (folder / "nginx.conf").write_text(config)
        self.log = folder / "error.log"
        self.log.touch()
        with open(folder / "nginx.stderr", "wb") as stderr:
            self.process = subprocess.Popen(
                [NGINX, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-g", "daemon off;"],
                stdout=subprocess.DEVNULL, stderr=stderr,
            )
        wait_for_port(self.https_port, self.process, "nginx", folder / "nginx.stderr")

    def stop(self) -> None:
        stop(self.process)


def tls_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the test's own self-signed certificate
    return context


def temporary_folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="nodelodge-layout-"))
