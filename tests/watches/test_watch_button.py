""""Watch this result" on the wizard's answer: on an empty answer first, and signing in on the way."""
import pytest

from nodelodge.watches.models import Watch
from tests.factories import make_user
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db


def test_an_empty_answer_offers_to_watch_it_and_the_button_makes_the_watch(client, catalog):
    page = client.get(f"/?{LLAMA_8B}").content.decode()
    assert 'data-testid="empty-reason"' in page
    assert "Watch this result: tell me when a machine appears" in page
    owner = make_user()
    client.force_login(owner)

    made = client.post("/watches/", {"query": LLAMA_8B, "condition": "appears"})

    assert made.status_code == 302 and made["Location"] == "/launches/#watches-heading"
    assert Watch.objects.get(owner=owner).query["model"] == "llama-3-1-8b"


def test_an_answer_with_machines_offers_a_price_watch(client, catalog):
    catalog.machine()

    page = client.get(f"/?{LLAMA_8B}").content.decode()

    assert '<option value="cheapest_below" selected>' in page


def test_signed_out_the_button_leads_to_sign_in_and_back_to_the_result(client, catalog):
    answer = client.post("/watches/", {"query": LLAMA_8B})

    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/?next=/%3Fworkload")
    assert not Watch.objects.exists()


def test_a_german_page_offers_it_in_german(client, catalog):
    page = client.get(f"/de/?{LLAMA_8B}").content.decode()

    assert "Dieses Ergebnis beobachten" in page


def test_the_form_takes_a_webhook_and_auto_launch_and_says_what_is_wrong(client, catalog):
    owner = make_user()
    client.force_login(owner)

    refused = client.post("/watches/", {"query": LLAMA_8B, "webhook_url": "https://10.0.0.5/hook"}, follow=True)
    assert "10.0.0.5 is a private address." in refused.content.decode()
    assert not Watch.objects.exists()

    client.post("/watches/", {"query": LLAMA_8B, "webhook_url": "https://93.184.215.14/hook",
                              "webhook_format": "slack", "auto_launch": "1", "auto_launch_max_price": "3.5"})

    watch = Watch.objects.get(owner=owner)
    assert (watch.webhook_url, watch.webhook_format, watch.auto_launch, str(watch.auto_launch_max_price)) == (
        "https://93.184.215.14/hook", "slack", True, "3.5000"
    )
