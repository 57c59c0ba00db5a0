"""Delivery of a firing: the e-mail in the owner's language with its links, the signed webhook to a real
receiver on loopback (retries, disabling, Slack's form), the unsubscribe page and the Atom feed."""
from decimal import Decimal
from xml.etree import ElementTree

import pytest
from django.core import mail
from django.utils import timezone

from nodelodge.celery import app
from nodelodge.watches import tasks
from nodelodge.watches.evaluation import evaluate_watches
from nodelodge.watches.models import Firing, Watch
from nodelodge.watches.services import WatchRequest, create_watch
from tests.factories import make_user
from tests.helpers import LLAMA_8B
from tests.webhooks import Receiver

pytestmark = pytest.mark.django_db(transaction=True)
QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))


@pytest.fixture(autouse=True)
def in_process(settings):
    """Tasks run in this process, as on the embedded run; the receiver is on loopback."""
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.WATCH_WEBHOOK_ALLOW_LOOPBACK = True
    settings.WATCH_WEBHOOK_RETRY_DELAYS = [1, 2]
    settings.WATCH_WEBHOOK_MAX_FAILURES = 3
    settings.CONSOLE_BASE_URL = "https://console.example"
    yield
    app.conf.task_always_eager = eager


@pytest.fixture
def receiver(settings):
    """A receiver on loopback, its port the one allowed (the default allows 443 and 8443 only)."""
    server = Receiver()
    settings.WATCH_WEBHOOK_ALLOWED_PORTS = [server.port]
    yield server
    server.close()


def fired(catalog, **fields) -> tuple[Watch, Firing]:
    watch = create_watch(make_user(), WatchRequest(query=QUERY, **fields))
    catalog.machine(provider_machine_id="fra-1", price_per_gpu_hour=Decimal("2.49"))
    evaluate_watches()
    return Watch.objects.get(pk=watch.pk), Firing.objects.get(watch=watch)


def test_the_email_says_what_matched_in_english_with_its_links(catalog):
    watch, firing = fired(catalog)

    [message] = mail.outbox
    assert message.to == [watch.owner.email]
    assert message.subject == "Node Lodge: your watch found machines"
    assert "1 machine fits, from $2.49/h." in message.body
    assert "Alpine Compute fra-1: 1 × H100 SXM 80GB, DE, $2.49/h" in message.body
    assert f"https://console.example/?{'workload=inference&model=llama-3-1-8b'}" in message.body
    assert f"https://console.example/watches/unsubscribe/{watch.unsubscribe_token}/" in message.body
    assert f"https://console.example/watches/feed/{watch.feed_token}.atom" in message.body
    assert Firing.objects.get(pk=firing.pk).emailed_at is not None


def test_the_email_is_german_for_a_german_watch(catalog):
    watch, _firing = fired(catalog, language="de")

    [message] = mail.outbox
    assert message.subject == "Node Lodge: Ihre Beobachtung hat Maschinen gefunden"
    assert "1 Maschine passt, ab 2,49 $/h." in message.body
    assert "https://console.example/de/?workload=inference" in message.body
    assert f"https://console.example/de/watches/unsubscribe/{watch.unsubscribe_token}/" in message.body


def test_the_webhook_is_signed_over_the_timestamp_and_the_exact_body(catalog, receiver):
    watch, firing = fired(catalog, email=False, webhook_url=receiver.url())

    [call] = receiver.wait_for(1)
    assert call.signed_by(watch.secret)
    assert not call.signed_by("another secret")
    document = call.document
    assert document["query"] == watch.query
    assert document["condition"] == {"kind": "appears", "price_per_hour": None, "machines": None}
    assert [(m["provider_machine_id"], m["price_per_hour"]) for m in document["matches"]] == [("fra-1", "2.4900")]
    assert document["machines_total"] == 1
    assert Firing.objects.get(pk=firing.pk).webhook_delivered_at is not None
    assert mail.outbox == []


def test_a_slack_payload_carries_text(catalog, receiver):
    watch, _firing = fired(catalog, email=False, webhook_url=receiver.url(), webhook_format="slack")

    [call] = receiver.wait_for(1)
    assert call.document["text"] == "1 machine fits, from $2.49/h."
    assert call.signed_by(watch.secret)


def test_a_discord_payload_carries_content(catalog, receiver):
    watch, _firing = fired(catalog, email=False, webhook_url=receiver.url(), webhook_format="discord")

    [call] = receiver.wait_for(1)
    assert call.document == {"content": "1 machine fits, from $2.49/h."}
    assert call.signed_by(watch.secret)


def test_a_failing_webhook_is_retried_then_disabled_with_the_reason(catalog, receiver):
    receiver.status = 500
    watch, firing = fired(catalog, email=False, webhook_url=receiver.url())

    assert len(receiver.wait_for(3)) == 3  # the first try and two retries, then disabled
    watch.refresh_from_db()
    assert watch.webhook_failures == 3
    assert watch.webhook_disabled_reason == (
        "Disabled after 3 failed deliveries in a row. Last: The receiver answered 500."
    )
    assert Firing.objects.get(pk=firing.pk).webhook_error == "The receiver answered 500."
    tasks.deliver_webhook(firing.pk, 0)
    assert len(receiver.received) == 3  # disabled: not called again


def test_a_redirect_is_not_followed(catalog, receiver):
    receiver.status = 302
    watch, firing = fired(catalog, email=False, webhook_url=receiver.url())

    calls = receiver.wait_for(3)
    assert {call.path for call in calls} == {"/hook"}  # never /elsewhere
    assert "redirects are not followed" in Firing.objects.get(pk=firing.pk).webhook_error


def test_the_unsubscribe_link_changes_nothing_until_its_button_is_pressed(catalog, client):
    watch, _firing = fired(catalog)
    address = f"/watches/unsubscribe/{watch.unsubscribe_token}/"

    page = client.get(address)
    assert page.status_code == 200
    assert b"Stop these e-mails" in page.content
    watch.refresh_from_db()
    assert (watch.email, watch.state) == (True, "active")

    done = client.post(address)

    assert done.status_code == 200 and b"sends no more e-mails" in done.content
    watch.refresh_from_db()
    assert (watch.email, watch.state) == (False, "paused")
    assert client.get("/watches/unsubscribe/not-a-token/").status_code == 404


def test_the_atom_feed_lists_each_firing(catalog, client):
    watch, firing = fired(catalog)

    answer = client.get(f"/watches/feed/{watch.feed_token}.atom")

    assert answer.status_code == 200 and answer["Content-Type"].startswith("application/atom+xml")
    atom = "{http://www.w3.org/2005/Atom}"
    root = ElementTree.fromstring(answer.content)
    [entry] = root.findall(f"{atom}entry")
    assert entry.find(f"{atom}title").text == "1 machine fits, from $2.49/h."
    assert entry.find(f"{atom}id").text.endswith(f":firing:{firing.pk}")
    assert client.get("/watches/feed/guess.atom").status_code == 404
    assert timezone.now() >= firing.fired_at


def test_a_watch_whose_port_is_no_longer_allowed_is_refused_at_delivery_and_nothing_is_sent(
    catalog, receiver, settings
):
    watch = create_watch(make_user(), WatchRequest(query=QUERY, email=False, webhook_url=receiver.url()))
    settings.WATCH_WEBHOOK_ALLOWED_PORTS = [443, 8443]  # the ports narrowed after the watch was made
    catalog.machine(provider_machine_id="fra-1", price_per_gpu_hour=Decimal("2.49"))

    evaluate_watches()

    firing = Firing.objects.get(watch=watch)
    assert firing.webhook_error == f"Refused: A webhook may call only these ports: 443, 8443 (not {receiver.port})."
    assert firing.webhook_delivered_at is None
    assert receiver.received == []


def test_a_watch_saved_with_an_address_carrying_loopback_is_refused_at_delivery(catalog):
    """A watch saved before the rule, its webhook 6to4 of 127.0.0.1 (which Python calls global): every
    delivery is refused with the reason, then the webhook is disabled, even with loopback allowed."""
    watch = create_watch(make_user(), WatchRequest(query=QUERY, email=False, webhook_url="https://8.8.8.8/hook"))
    Watch.objects.filter(pk=watch.pk).update(webhook_url="https://[2002:7f00:1::]/hook")
    catalog.machine(provider_machine_id="fra-1", price_per_gpu_hour=Decimal("2.49"))

    evaluate_watches()

    why = "Refused: 2002:7f00:1:: carries the IPv4 address 127.0.0.1. 127.0.0.1 is a loopback address."
    assert Firing.objects.get(watch=watch).webhook_error == why
    watch.refresh_from_db()
    assert watch.webhook_disabled_reason == f"Disabled after 3 failed deliveries in a row. Last: {why}"
