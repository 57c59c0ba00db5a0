"""Where a webhook may go: https to a public address only, on an allowed port (443 and 8443 unless
set), an IPv6 address that carries an IPv4 one judged by the IPv4 address inside; checked when the
watch is made (the page's form, the API) and again on the address the name resolves to at delivery
(which is the one connected to)."""
import ipaddress
import runpy
import socket

import pytest
from django.conf import settings as django_settings
from django.utils import translation

from nodelodge.accounts import tokens
from nodelodge.watches import webhooks
from nodelodge.watches.models import Watch
from nodelodge.watches.services import WatchError, WatchRequest, create_watch
from tests.factories import make_user
from tests.helpers import LLAMA_8B
from tests.webhooks import Receiver

QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))


def resolving_to(monkeypatch, addresses: dict[str, str]):
    """The system resolver, answering these names with these addresses (as a DNS server a hostile
    owner runs would), every other name as usual."""
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in addresses:
            if ipaddress.ip_address(addresses[host]).version == 6:
                return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (addresses[host], port, 0, 0))]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (addresses[host], port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(webhooks.socket, "getaddrinfo", getaddrinfo)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://93.184.215.14/hook", "must start with https://"),
        ("https://127.0.0.1/hook", "127.0.0.1 is a loopback address"),
        ("https://[::1]/hook", "::1 is a loopback address"),
        ("https://localhost/hook", "is a loopback address"),
        ("https://10.1.2.3/hook", "10.1.2.3 is a private address"),
        ("https://192.168.0.9/hook", "192.168.0.9 is a private address"),
        ("https://172.16.5.5/hook", "172.16.5.5 is a private address"),
        ("https://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address"),
        ("https://[fe80::1]/hook", "fe80::1 is a link-local address"),
        ("https://[::ffff:10.0.0.1]/hook", "10.0.0.1 is a private address"),
        ("https://100.64.0.1/hook", "100.64.0.1 is not a public address"),
        ("https://0.0.0.0/hook", "0.0.0.0 is a private address"),
        ("https://user:pw@93.184.215.14/hook", "no user name or password"),
        ("ftp://93.184.215.14/hook", "must start with https://"),
    ],
)
def test_addresses_that_are_not_public_https_are_refused(url, why):
    assert why in webhooks.url_problem(url)


def test_a_public_https_address_is_accepted():
    assert webhooks.url_problem("https://93.184.215.14/hook") is None


def test_a_name_resolving_to_a_private_address_is_refused(monkeypatch):
    resolving_to(monkeypatch, {"hooks.example.net": "10.9.8.7"})

    assert webhooks.url_problem("https://hooks.example.net/x") == "10.9.8.7 is a private address."


@pytest.mark.django_db
def test_a_watch_with_a_refused_address_is_not_made():
    with pytest.raises(WatchError) as refused:
        create_watch(make_user(), WatchRequest(query=QUERY, webhook_url="https://169.254.169.254/"))

    assert refused.value.errors == {"webhook_url": "169.254.169.254 is a link-local address."}
    assert not Watch.objects.exists()


def test_the_address_is_checked_again_at_delivery_and_nothing_is_sent(monkeypatch, settings):
    """A name that was public when the watch was made and resolves to a private address later (DNS
    rebinding) is refused at delivery, before any connection."""
    settings.WATCH_WEBHOOK_ALLOW_LOOPBACK = False
    receiver = Receiver()
    settings.WATCH_WEBHOOK_ALLOWED_PORTS = [443, receiver.port]
    try:
        resolving_to(monkeypatch, {"hooks.example.net": "93.184.215.14"})
        assert webhooks.url_problem("https://hooks.example.net/x") is None
        resolving_to(monkeypatch, {"hooks.example.net": "127.0.0.1"})

        with pytest.raises(webhooks.WebhookRefused, match="127.0.0.1 is a loopback address"):
            webhooks.post(f"https://hooks.example.net:{receiver.port}/x", b"{}", "s")

        assert receiver.received == []
    finally:
        receiver.close()


def test_loopback_is_reached_only_with_the_test_setting(settings):
    receiver = Receiver()
    settings.WATCH_WEBHOOK_ALLOWED_PORTS = [receiver.port]
    try:
        settings.WATCH_WEBHOOK_ALLOW_LOOPBACK = False
        with pytest.raises(webhooks.WebhookRefused):
            webhooks.post(receiver.url(), b"{}", "s")
        settings.WATCH_WEBHOOK_ALLOW_LOOPBACK = True

        assert webhooks.post(receiver.url(), b'{"a":1}', "s") == 204
        assert receiver.wait_for(1)[0].signed_by("s")
        # Still only loopback: private ranges stay refused.
        assert webhooks.url_problem(f"http://10.0.0.1:{receiver.port}/x") == "10.0.0.1 is a private address."
    finally:
        receiver.close()


def test_a_receiver_that_never_answers_is_given_up_at_five_seconds(settings):
    from tests.webhooks import SilentReceiver

    settings.WATCH_WEBHOOK_ALLOW_LOOPBACK = True
    receiver = SilentReceiver()
    settings.WATCH_WEBHOOK_ALLOWED_PORTS = [receiver.port]
    try:
        with pytest.raises(OSError):
            webhooks.post(receiver.url(), b"{}", "s")
    finally:
        receiver.close()


# An IPv6 address that carries an IPv4 one reaches that IPv4 address in the end (a 6to4 or Teredo
# relay, a NAT64 translator, the host's own stack), so it is judged by the IPv4 address inside.
CARRYING_A_NON_PUBLIC_IPV4 = [
    pytest.param("2002:7f00:1::", "127.0.0.1", "127.0.0.1 is a loopback address.", id="6to4-loopback"),
    pytest.param("2002:a9fe:a9fe::1", "169.254.169.254", "169.254.169.254 is a link-local address.",
                 id="6to4-metadata"),
    pytest.param("2001:0:808:808::80ff:fffe", "127.0.0.1", "127.0.0.1 is a loopback address.",
                 id="teredo-client-loopback"),
    pytest.param("2001:0:a00:1::f7f7:f7f7", "10.0.0.1", "10.0.0.1 is a private address.", id="teredo-server-private"),
    pytest.param("64:ff9b::7f00:1", "127.0.0.1", "127.0.0.1 is a loopback address.", id="nat64-loopback"),
    pytest.param("64:ff9b::a9fe:a9fe", "169.254.169.254", "169.254.169.254 is a link-local address.",
                 id="nat64-metadata"),
    pytest.param("64:ff9b:1::a00:1", "10.0.0.1", "10.0.0.1 is a private address.", id="local-nat64-private"),
    pytest.param("::7f00:1", "127.0.0.1", "127.0.0.1 is a loopback address.", id="compatible-loopback"),
    pytest.param("::c0a8:1", "192.168.0.1", "192.168.0.1 is a private address.", id="compatible-private"),
    pytest.param("::ffff:7f00:1", "127.0.0.1", "127.0.0.1 is a loopback address.", id="mapped-loopback"),
    pytest.param("::ffff:6440:1", "100.64.0.1", "100.64.0.1 is not a public address.", id="mapped-shared"),
]
CARRYING_A_PUBLIC_IPV4 = [
    pytest.param("2002:808:808::1", id="6to4"),
    pytest.param("2001:0:808:808::f7f7:f7f7", id="teredo"),  # server and client 8.8.8.8
    pytest.param("64:ff9b::808:808", id="nat64"),
    pytest.param("64:ff9b:1::808:808", id="local-nat64"),
    pytest.param("::808:808", id="compatible"),
    pytest.param("::ffff:808:808", id="mapped"),
]


@pytest.mark.parametrize(("address", "ipv4", "why"), CARRYING_A_NON_PUBLIC_IPV4)
def test_an_ipv6_address_carrying_a_non_public_ipv4_address_is_refused_naming_it(address, ipv4, why):
    assert webhooks.url_problem(f"https://[{address}]/hook") == f"{address} carries the IPv4 address {ipv4}. {why}"


@pytest.mark.parametrize("address", CARRYING_A_PUBLIC_IPV4)
def test_an_ipv6_address_carrying_a_public_ipv4_address_is_judged_by_it_and_accepted(address):
    assert webhooks.url_problem(f"https://[{address}]/hook") is None


def test_a_local_use_nat64_address_that_could_carry_an_ipv4_address_in_other_bits_is_refused():
    """Inside 64:ff9b:1::/48 a translator with a /48 prefix reads 127.0.0.x from these bits."""
    assert webhooks.url_problem("https://[64:ff9b:1:7f00:1::808:808]/hook") == (
        "64:ff9b:1:7f00:1:0:808:808 is not a public address."
    )


def test_the_loopback_test_setting_does_not_let_an_address_carrying_loopback_through(settings):
    settings.WATCH_WEBHOOK_ALLOW_LOOPBACK = True

    assert webhooks.url_problem("https://[2002:7f00:1::]/hook") == (
        "2002:7f00:1:: carries the IPv4 address 127.0.0.1. 127.0.0.1 is a loopback address."
    )


def test_a_name_resolving_to_nat64_of_loopback_is_refused(monkeypatch):
    resolving_to(monkeypatch, {"hooks.example.net": "64:ff9b::7f00:1"})

    assert webhooks.url_problem("https://hooks.example.net/x") == (
        "64:ff9b::7f00:1 carries the IPv4 address 127.0.0.1. 127.0.0.1 is a loopback address."
    )


def test_a_name_that_later_resolves_to_6to4_of_loopback_is_refused_at_delivery(monkeypatch):
    resolving_to(monkeypatch, {"hooks.example.net": "93.184.215.14"})
    assert webhooks.url_problem("https://hooks.example.net/x") is None
    resolving_to(monkeypatch, {"hooks.example.net": "2002:7f00:1::"})

    with pytest.raises(webhooks.WebhookRefused) as refused:
        webhooks.post("https://hooks.example.net/x", b"{}", "s")

    assert str(refused.value) == "2002:7f00:1:: carries the IPv4 address 127.0.0.1. 127.0.0.1 is a loopback address."


@pytest.mark.parametrize("port", [6390, 80, 22, 0])
def test_a_port_other_than_443_and_8443_is_refused_naming_the_allowed_ones(port):
    assert webhooks.url_problem(f"https://8.8.8.8:{port}/hook") == (
        f"A webhook may call only these ports: 443, 8443 (not {port})."
    )


@pytest.mark.parametrize("url", ["https://8.8.8.8/hook", "https://8.8.8.8:443/hook", "https://8.8.8.8:8443/hook"])
def test_ports_443_and_8443_are_accepted(url):
    assert webhooks.url_problem(url) is None


def test_the_allowed_ports_are_the_setting(settings):
    settings.WATCH_WEBHOOK_ALLOWED_PORTS = [6390]

    assert webhooks.url_problem("https://8.8.8.8:6390/hook") is None
    assert webhooks.url_problem("https://8.8.8.8/hook") == "A webhook may call only these ports: 6390 (not 443)."


def test_the_allowed_ports_are_read_from_the_environment(monkeypatch):
    settings_file = str(django_settings.BASE_DIR / "nodelodge" / "settings.py")
    monkeypatch.delenv("WATCH_WEBHOOK_ALLOWED_PORTS", raising=False)
    assert runpy.run_path(settings_file)["WATCH_WEBHOOK_ALLOWED_PORTS"] == [443, 8443]

    monkeypatch.setenv("WATCH_WEBHOOK_ALLOWED_PORTS", "443, 9443")

    assert runpy.run_path(settings_file)["WATCH_WEBHOOK_ALLOWED_PORTS"] == [443, 9443]


def test_a_port_outside_the_allowed_ones_is_refused_at_delivery_and_nothing_is_sent(settings):
    settings.WATCH_WEBHOOK_ALLOW_LOOPBACK = True
    receiver = Receiver()
    try:
        with pytest.raises(webhooks.WebhookRefused) as refused:
            webhooks.post(receiver.url(), b"{}", "s")

        assert str(refused.value) == f"A webhook may call only these ports: 443, 8443 (not {receiver.port})."
        assert receiver.received == []
        settings.WATCH_WEBHOOK_ALLOWED_PORTS = [receiver.port]
        assert webhooks.post(receiver.url(), b"{}", "s") == 204
    finally:
        receiver.close()


def test_the_reasons_are_in_german_for_a_german_page():
    with translation.override("de"):
        assert webhooks.url_problem("https://[2002:7f00:1::]/hook") == (
            "2002:7f00:1:: enthält die IPv4-Adresse 127.0.0.1. 127.0.0.1 ist eine Loopback-Adresse."
        )
        assert webhooks.url_problem("https://8.8.8.8:6390/hook") == (
            "Ein Webhook darf nur diese Ports aufrufen: 443, 8443 (nicht 6390)."
        )


REFUSED_ON_SAVE = [
    ("https://[2002:7f00:1::]/hook",
     "2002:7f00:1:: carries the IPv4 address 127.0.0.1. 127.0.0.1 is a loopback address."),
    ("https://[64:ff9b::a9fe:a9fe]/latest/meta-data",
     "64:ff9b::a9fe:a9fe carries the IPv4 address 169.254.169.254. 169.254.169.254 is a link-local address."),
    ("https://8.8.8.8:6390/", "A webhook may call only these ports: 443, 8443 (not 6390)."),
]


@pytest.mark.django_db
def test_the_page_refuses_an_address_carrying_loopback_and_a_port_outside_the_allowed_ones(client, catalog):
    client.force_login(make_user())

    for url, why in REFUSED_ON_SAVE:
        page = client.post("/watches/", {"query": LLAMA_8B, "webhook_url": url}, follow=True)
        assert why in page.content.decode(), url
    german = client.post("/de/watches/", {"query": LLAMA_8B, "webhook_url": "https://[2002:7f00:1::]/"}, follow=True)

    german_port = client.post("/de/watches/", {"query": LLAMA_8B, "webhook_url": "https://8.8.8.8:6390/"}, follow=True)

    assert "2002:7f00:1:: enthält die IPv4-Adresse 127.0.0.1. 127.0.0.1 ist eine Loopback-Adresse." in (
        german.content.decode()
    )
    assert "Ein Webhook darf nur diese Ports aufrufen: 443, 8443 (nicht 6390)." in german_port.content.decode()
    assert not Watch.objects.exists()


@pytest.mark.django_db
def test_the_api_refuses_an_address_carrying_loopback_and_a_port_outside_the_allowed_ones(client, catalog):
    _row, token = tokens.create_token(make_user())

    for url, why in REFUSED_ON_SAVE:
        answer = client.post("/api/v1/watches", {"query": QUERY, "webhook_url": url},
                             content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
        assert answer.status_code == 422, url  # the schema allows any address: refused by the rule
        assert answer.json() == {"errors": {"webhook_url": why}}
    for url in ("https://[2002:808:808::1]/hook", "https://8.8.8.8:8443/hook"):
        made = client.post("/api/v1/watches", {"query": QUERY, "webhook_url": url},
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
        assert made.status_code == 201 and made.json()["webhook_url"] == url

    assert Watch.objects.count() == 2
