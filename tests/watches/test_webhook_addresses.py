"""Where a webhook may go: https to a public address only, checked when the watch is made and again on
the address the name resolves to at delivery (which is the one connected to)."""
import socket

import pytest

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
    try:
        resolving_to(monkeypatch, {"hooks.example.net": "93.184.215.14"})
        assert webhooks.url_problem("https://hooks.example.net/x") is None
        resolving_to(monkeypatch, {"hooks.example.net": "127.0.0.1"})

        with pytest.raises(webhooks.WebhookRefused, match="127.0.0.1 is a loopback address"):
            webhooks.post(f"https://hooks.example.net:{receiver.server.server_address[1]}/x", b"{}", "s")

        assert receiver.received == []
    finally:
        receiver.close()


def test_loopback_is_reached_only_with_the_test_setting(settings):
    receiver = Receiver()
    try:
        settings.WATCH_WEBHOOK_ALLOW_LOOPBACK = False
        with pytest.raises(webhooks.WebhookRefused):
            webhooks.post(receiver.url(), b"{}", "s")
        settings.WATCH_WEBHOOK_ALLOW_LOOPBACK = True

        assert webhooks.post(receiver.url(), b'{"a":1}', "s") == 204
        assert receiver.wait_for(1)[0].signed_by("s")
        # Still only loopback: private ranges stay refused.
        assert webhooks.url_problem("http://10.0.0.1/x") == "10.0.0.1 is a private address."
    finally:
        receiver.close()


def test_a_receiver_that_never_answers_is_given_up_at_five_seconds(settings):
    from tests.webhooks import SilentReceiver

    settings.WATCH_WEBHOOK_ALLOW_LOOPBACK = True
    receiver = SilentReceiver()
    try:
        with pytest.raises(OSError):
            webhooks.post(receiver.url(), b"{}", "s")
    finally:
        receiver.close()
