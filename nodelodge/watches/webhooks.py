"""A watch's webhook: which addresses it may call, the signed body, and one delivery.

Rules (SECURITY.md, "Watches"): https only, on a port of `WATCH_WEBHOOK_ALLOWED_PORTS` (443 and
8443 unless set), to a public address — no loopback, private ranges, link-local, shared or reserved
space, and an IPv6 address that carries an IPv4 one (IPv4-mapped and -compatible, 6to4, Teredo,
NAT64) is judged by the IPv4 address inside — checked when the watch is made and again on the
address the name resolves to at delivery, which is the address then connected to (no second lookup
a DNS answer could change); redirects are never followed (a 3xx is a failure); 5 s for the whole
call; the answer's body is never read. `WATCH_WEBHOOK_ALLOW_LOOPBACK` (tests only) lets http and
https reach 127.0.0.1 and ::1, nothing else (the ports stay limited).
"""
from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import json
import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext

TIMEOUT_SECONDS = 5
SIGNATURE_HEADER = "X-Signature"
TIMESTAMP_HEADER = "X-Timestamp"
DEFAULT_PORTS = (443, 8443)


class WebhookRefused(Exception):
    """The address may not be called; the message says why."""


def _loopback_allowed() -> bool:
    return bool(getattr(settings, "WATCH_WEBHOOK_ALLOW_LOOPBACK", False))


# NAT64: the well-known prefix (RFC 6052) and the local-use one (RFC 8215), the IPv4 address in the
# last 32 bits. Inside the local-use /48 a translator may be set up to read the IPv4 address from
# other bits (a /48, /56 or /64 prefix), so only its /96 form is accepted: bits 48 to 95 all zero.
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address carries, which a call to it reaches in the end (none: it
    carries none): IPv4-mapped ::ffff:a.b.c.d, 6to4 2002::/16, Teredo 2001::/32 (its server and its
    client, the client's bits inverted), NAT64 64:ff9b::/96 and 64:ff9b:1::/48, and IPv4-compatible
    ::a.b.c.d (not :: or ::1, which are themselves)."""
    last_32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.ipv4_mapped is not None:
        return (ip.ipv4_mapped,)
    if ip.sixtofour is not None:
        return (ip.sixtofour,)
    if ip.teredo is not None:
        return ip.teredo
    if ip in NAT64 or ip in LOCAL_NAT64:
        return (last_32,)
    if int(ip) >> 32 == 0 and int(ip) > 1:
        return (last_32,)
    return ()


def _not_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if ip.is_loopback:
        return gettext("%(address)s is a loopback address.") % {"address": ip}
    if ip.is_link_local:
        return gettext("%(address)s is a link-local address.") % {"address": ip}
    if ip.is_private:
        return gettext("%(address)s is a private address.") % {"address": ip}
    if not ip.is_global or ip.is_multicast or ip.is_reserved or ip.is_unspecified:
        return gettext("%(address)s is not a public address.") % {"address": ip}
    return None


def address_problem(address: str) -> str | None:
    """Why this IP address may not be called (None: it may). The one judgment of an address: the
    typed one when a watch is made, each one the name resolves to then and at every delivery."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if _loopback_allowed() and (ip.is_loopback or _mapped_loopback(ip)):
        return None  # tests only: 127.0.0.1, ::1 and ::ffff:127.0.0.1, never an address that leads there
    if isinstance(ip, ipaddress.IPv4Address):
        return _not_public(ip)
    if ip in LOCAL_NAT64 and (int(ip) >> 32) & ((1 << 48) - 1):
        return gettext("%(address)s is not a public address.") % {"address": ip}
    inside = embedded_ipv4(ip)
    if not inside:
        return _not_public(ip)
    for ipv4 in inside:  # judged by the IPv4 address inside, not by the IPv6 one
        problem = _not_public(ipv4)
        if problem:
            return gettext("%(address)s carries the IPv4 address %(ipv4)s. %(problem)s") % {
                "address": ip, "ipv4": ipv4, "problem": problem,
            }
    return None


def _mapped_loopback(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None and ip.ipv4_mapped.is_loopback


def allowed_ports() -> list[int]:
    return list(getattr(settings, "WATCH_WEBHOOK_ALLOWED_PORTS", DEFAULT_PORTS))


def _parts(url: str):
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme != "https" and not (scheme == "http" and _loopback_allowed()):
        raise WebhookRefused(gettext("A webhook address must start with https://."))
    if not parts.hostname or parts.username or parts.password:
        raise WebhookRefused(gettext("A webhook address needs a host name and no user name or password."))
    try:
        port = parts.port if parts.port is not None else (443 if scheme == "https" else 80)
    except ValueError:
        raise WebhookRefused(gettext("The webhook address has a bad port.")) from None
    ports = allowed_ports()
    if port not in ports:
        raise WebhookRefused(gettext("A webhook may call only these ports: %(ports)s (not %(port)s).") % {
            "ports": ", ".join(str(allowed) for allowed in ports), "port": port,
        })
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return scheme, parts.hostname, port, path


def resolve(host: str, port: int) -> list[str]:
    """Every address the name resolves to; WebhookRefused when it resolves to none or to any that may
    not be called (a name with one private address among public ones is refused whole)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise WebhookRefused(gettext("%(host)s does not resolve.") % {"host": host}) from error
    addresses = sorted({str(info[4][0]) for info in infos})
    if not addresses:
        raise WebhookRefused(gettext("%(host)s does not resolve.") % {"host": host})
    for address in addresses:
        problem = address_problem(address)
        if problem:
            raise WebhookRefused(problem)
    return addresses


def url_problem(url: str) -> str | None:
    """Why a watch may not be made with this webhook address (None: it may)."""
    if len(url) > 2000:
        return gettext("A webhook address is at most 2,000 characters.")
    try:
        _scheme, host, port, _path = _parts(url)
        resolve(host, port)
    except WebhookRefused as refusal:
        return str(refusal)
    return None


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """Hex HMAC-SHA256 with the watch's secret over the timestamp, a dot and the exact body."""
    return hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def body_for(payload: dict, webhook_format: str, text: str) -> bytes:
    """The exact bytes sent: the JSON payload, or a Slack (`text`) or Discord (`content`) message
    that carries the payload's words and still its figures."""
    if webhook_format == "slack":
        document = {"text": text, "nodelodge": payload}
    elif webhook_format == "discord":
        document = {"content": text[:2000]}
    else:
        document = payload
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


class _Pinned:
    """Connects to the address already checked, never looking the name up again."""

    def __init__(self, address: str):
        self.address = address

    def connect(self, connection):
        connection.sock = socket.create_connection((self.address, connection.port), connection.timeout)


class PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host, port, address, timeout):
        super().__init__(host, port, timeout=timeout)
        self._pin = _Pinned(address)

    def connect(self):
        self._pin.connect(self)


class PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host, port, address, timeout, context):
        super().__init__(host, port, timeout=timeout, context=context)
        self._pin = _Pinned(address)

    def connect(self):
        self._pin.connect(self)
        self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]  # HTTPSConnection's own
            self.sock, server_hostname=self.host)


def post(url: str, body: bytes, secret: str, *, now: float | None = None) -> int:
    """POSTs the body, signed, to the resolved and checked address. Returns the status (2xx: done);
    WebhookRefused for an address that may not be called, OSError for a failed connection."""
    scheme, host, port, path = _parts(url)
    address = resolve(host, port)[0]
    timestamp = str(int(now if now is not None else time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "NodeLodge-Watches/1",
        TIMESTAMP_HEADER: timestamp,
        SIGNATURE_HEADER: signature(secret, timestamp, body),
    }
    connection: http.client.HTTPConnection
    if scheme == "https":
        connection = PinnedHTTPSConnection(host, port, address, TIMEOUT_SECONDS, ssl.create_default_context())
    else:
        connection = PinnedHTTPConnection(host, port, address, TIMEOUT_SECONDS)
    # The whole call within TIMEOUT_SECONDS: at the deadline the socket is shut down, which ends a
    # read waiting on a receiver that trickles its answer.
    timer = threading.Timer(TIMEOUT_SECONDS, _shut, args=(connection,))
    timer.daemon = True
    timer.start()
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()  # the status line and headers; the body is never read
        return response.status
    finally:
        timer.cancel()
        connection.close()


def _shut(connection) -> None:
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
