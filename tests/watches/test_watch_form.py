"""The watch form under a result behaves as the wizard's fields do: a refusal shows the result again with
each message beside its field and everything typed kept (the whole page without JavaScript, the form
alone for htmx); money is read as the page's language writes it; the watches list says what each watch
does, and Delete asks first; Auto-Launch's bookings are marked with their watch on My launches."""
from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core import mail

from nodelodge.launches.models import Booking
from nodelodge.watches import auto, evaluation, services
from nodelodge.watches.evaluation import evaluate_watches
from nodelodge.watches.models import Firing, Watch
from nodelodge.watches.services import WatchRequest, create_watch
from tests.factories import make_user
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db
QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))
GERMAN = {"HTTP_ACCEPT_LANGUAGE": "de"}
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "watch"}


def field_error(html: str, testid: str) -> str:
    found = re.search(rf'data-testid="{testid}"[^>]*>([^<]*)<', html)
    return found.group(1) if found else ""


def signed_in(client):
    owner = make_user("ada")
    client.force_login(owner)
    return owner


def test_a_refused_watch_shows_the_result_again_with_each_message_beside_its_field_and_the_values_kept(
    client, catalog
):
    signed_in(client)

    answer = client.post("/watches/", {
        "query": LLAMA_8B, "condition": "cheapest_below", "price_per_hour": "",
        "webhook_url": "http://example.com/hook", "webhook_format": "slack", "auto_launch": "1",
        "auto_launch_max_price": "",
    })

    assert answer.status_code == 200  # no redirect to My launches: the result, its form, its values
    html = answer.content.decode()
    assert 'data-testid="watch-form"' in html and 'id="result"' in html
    assert field_error(html, "watch-price-error") == (
        "Enter the price per hour in USD the watch compares with, e.g. 5.00.")
    assert field_error(html, "watch-cap-error") == "Enter the Auto-Launch price cap per hour in USD, e.g. 5.00."
    assert "https" in field_error(html, "watch-webhook-error")
    assert 'value="http://example.com/hook"' in html
    assert '<option value="slack" selected>' in html
    assert '<option value="cheapest_below" selected>' in html
    assert 'name="auto_launch" value="1" checked' in html
    assert not Watch.objects.exists()


def test_a_refused_watch_by_htmx_swaps_the_form_alone_with_its_messages(client, catalog):
    signed_in(client)

    answer = client.post("/watches/", {
        "query": LLAMA_8B, "condition": "at_least", "machines": "lots", "price_per_hour": "7,25",
    }, **HTMX)

    assert answer.status_code == 200
    html = answer.content.decode()
    assert html.lstrip().startswith("<form") and 'id="result"' not in html
    assert field_error(html, "watch-machines-error") == "Enter a whole number of machines from 1 to 100,000."
    assert 'value="lots"' in html and 'value="7,25"' in html
    assert '<option value="at_least" selected>' in html


def test_a_watch_made_by_htmx_goes_on_to_my_launches(client, catalog):
    signed_in(client)

    answer = client.post("/watches/", {"query": LLAMA_8B}, **HTMX)

    assert answer.status_code == 200 and answer["HX-Redirect"] == "/launches/"
    assert Watch.objects.count() == 1


def test_a_cap_past_the_limit_names_the_auto_launch_cap(client, catalog):
    signed_in(client)

    html = client.post("/watches/", {
        "query": LLAMA_8B, "auto_launch": "1", "auto_launch_max_price": "1e12",
    }).content.decode()

    assert field_error(html, "watch-cap-error") == (
        "The Auto-Launch price cap per hour must be above 0 and at most 1,000,000 USD.")
    assert field_error(html, "watch-price-error") == ""


@pytest.mark.parametrize(("path", "typed"), [("/de/watches/", "12,50"), ("/watches/", "12,50"),
                                             ("/watches/", "12.50"), ("/de/watches/", "12.50")])
def test_a_watch_price_is_read_as_the_pages_language_writes_it(client, catalog, path, typed):
    signed_in(client)

    client.post(path, {"query": LLAMA_8B, "condition": "cheapest_below", "price_per_hour": typed,
                       "auto_launch": "1", "auto_launch_max_price": typed}, **GERMAN)

    watch = Watch.objects.get()
    assert (watch.price_per_hour, watch.auto_launch_max_price) == (Decimal("12.5"), Decimal("12.5"))


def test_the_german_page_gives_a_german_example_beside_the_price(client, catalog):
    signed_in(client)

    html = client.post("/de/watches/", {"query": LLAMA_8B, "condition": "cheapest_below",
                                        "price_per_hour": "zwölf"}, **GERMAN).content.decode()

    message = field_error(html, "watch-price-error")
    assert "5,00" in message and "5.00" not in message
    assert 'value="zwölf"' in html


def test_the_api_still_reads_plain_dot_decimals(catalog):
    with pytest.raises(services.WatchError) as refused:
        create_watch(make_user(), WatchRequest(query=QUERY, condition="cheapest_below", price_per_hour="12,50"))
    assert "price_per_hour" in refused.value.errors


def test_the_watches_list_shows_channels_feed_webhook_and_auto_launch_with_its_cap(client, catalog):
    owner = signed_in(client)
    watch = create_watch(owner, WatchRequest(query=QUERY, auto_launch=True, auto_launch_max_price="3.5"))
    # The address as kept (a test host that resolves nowhere; creation checks it resolves).
    Watch.objects.filter(pk=watch.pk).update(webhook_url="https://hooks.example.com/nl", webhook_format="discord")

    html = client.get("/launches/").content.decode()

    row = html[html.index(f'data-watch-id="{watch.pk}"'):]
    assert f'href="/watches/feed/{watch.feed_token}.atom"' in row
    assert "Webhook (Discord):" in row and "https://hooks.example.com/nl" in row
    assert "Auto-Launch up to $3.50/h" in row
    assert "E-mail" in row


def test_delete_asks_first_and_only_the_confirmation_deletes(client, catalog):
    owner = signed_in(client)
    watch = create_watch(owner, WatchRequest(query=QUERY))

    asked = client.post(f"/watches/{watch.pk}/delete/")

    assert asked.status_code == 200 and 'data-testid="delete-confirm"' in asked.content.decode()
    assert "Delete this watch?" in asked.content.decode()
    assert Watch.objects.filter(pk=watch.pk).exists()
    client.post(f"/watches/{watch.pk}/delete/", {"confirmed": "1"})
    assert not Watch.objects.filter(pk=watch.pk).exists()


def test_delete_of_another_users_watch_is_not_found_even_to_ask(client, catalog):
    signed_in(client)
    theirs = create_watch(make_user(), WatchRequest(query=QUERY))

    assert client.post(f"/watches/{theirs.pk}/delete/").status_code == 404
    assert client.post(f"/watches/{theirs.pk}/delete/", {"confirmed": "1"}).status_code == 404
    assert Watch.objects.filter(pk=theirs.pk).exists()


def test_the_auto_launch_terms_are_stated_beside_the_checkbox_with_the_real_limit(client, catalog):
    html = client.get(f"/?{LLAMA_8B}").content.decode()

    terms = field_error(html, "auto-launch-terms")
    assert "on your account" in terms and f"At most {auto.MAX_LIVE_AUTO_LAUNCHES} bookings" in terms
    assert "booking limit" in terms


@pytest.mark.django_db(transaction=True)
def test_a_booking_made_by_auto_launch_is_marked_with_its_watch_on_my_launches(client, catalog, monkeypatch):
    monkeypatch.setattr(evaluation, "_queue_delivery", lambda firing_id: None)
    owner = signed_in(client)
    watch = create_watch(owner, WatchRequest(query=QUERY, email=False, auto_launch=True,
                                             auto_launch_max_price="3.00"))
    catalog.machine(provider_machine_id="cheap", price_per_gpu_hour=Decimal("2.49"))
    evaluate_watches()
    auto.launch_for(Firing.objects.get(watch=watch).pk)
    booking = Booking.objects.get()

    html = client.get("/launches/").content.decode()

    row = html[html.index(f'data-booking-id="{booking.pk}"'):]
    row = row[:row.index("</tr>")]
    assert f"Auto-Launch of watch #{watch.pk}" in row and f'href="#watch-{watch.pk}"' in row


def test_the_german_watches_list_writes_money_and_counts_in_german(client, catalog):
    owner = signed_in(client)
    create_watch(owner, WatchRequest(query=QUERY, condition="cheapest_below", price_per_hour="1.5"))
    create_watch(owner, WatchRequest(query=QUERY, condition="at_least", machines=1))

    html = client.get("/de/launches/", **GERMAN).content.decode()

    assert "günstigste unter 1,50 $/h" in html and "$1,50" not in html
    assert "mindestens 1 Maschine<" in html


@pytest.mark.django_db(transaction=True)
def test_the_german_watch_email_writes_every_price_as_german_does(catalog, monkeypatch, settings):
    from nodelodge.watches import tasks

    settings.CONSOLE_BASE_URL = "https://console.example"
    monkeypatch.setattr(evaluation, "_queue_delivery", lambda firing_id: tasks.deliver_firing(firing_id))
    create_watch(make_user(), WatchRequest(query=QUERY, language="de"))
    catalog.machine(provider_machine_id="fra-1", price_per_gpu_hour=Decimal("0.098"))

    evaluate_watches()

    [message] = mail.outbox
    assert "ab 0,098 $/h" in message.body and ", 0,098 $/h" in message.body
    assert "0,10" not in message.body and "0.0980" not in message.body and "$0" not in message.body
