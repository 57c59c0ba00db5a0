"""Launch, the review, My launches (Meine Starts), Stop, sign-up and its e-mail in German, at /de/."""
from __future__ import annotations

import re
import uuid
from decimal import Decimal

import pytest
from django.core import mail

from nodelodge.launches.models import Booking
from tests.helpers import LLAMA_8B as QUERY

pytestmark = pytest.mark.django_db


def test_launch_review_confirm_my_launches_and_stop_in_german(client, small_catalog, make_user):
    user = make_user("ada")
    client.force_login(user)
    machine = small_catalog.machine(price_per_gpu_hour=Decimal("2.49"), booking_limit_hours=1200)

    result = client.get(f"/de/?{QUERY}&budget=100").content.decode()
    assert 'action="/de/launch/review/"' in result

    review = client.get(
        "/de/launch/review/", {"machine": machine.pk, "gpus": 1, "price_per_hour": "2.49",
                               "query": QUERY + "&budget=100"}
    )
    html = review.content.decode()
    assert review.status_code == 200
    for words in ("Start prüfen", "Genau das bucht Bestätigen.", "Preis pro Stunde", "Unterbrechbar",
                  "Buchungslimit", "endet von selbst nach 1200 Std.", "Dimensioniert für",
                  "Bestätigen und für", "je 81.559 MiB"):
        assert words in html, words
    # The form's values stay as the server reads them, whatever the language.
    assert 'name="price_per_hour" value="2.4900"' in html
    key = re.search(r'name="idempotency_key" value="([^"]+)"', html).group(1)

    response = client.post("/de/launch/", {"machine": machine.pk, "gpus": 1, "price_per_hour": "2.49",
                                           "query": QUERY + "&budget=100", "idempotency_key": key})
    assert response.status_code == 303 and response["Location"] == "/de/launches/"
    listing = client.get("/de/launches/").content.decode()
    assert "<h1>Meine Starts</h1>" in listing
    assert "Gestartet: 1 × H100 SXM 80GB bei Alpine Compute" in listing
    assert "Laufende Buchungen" in listing and "Stoppen …" in listing
    booking = Booking.objects.get()
    # Dates the German way; the result link leads to the German result.
    assert booking.started_at.strftime("%d.%m.%Y") in listing
    assert f'href="/de/?{QUERY.split("&")[0]}' in listing

    confirm = client.get(f"/de/launches/{booking.pk}/stop/").content.decode()
    assert "Diese Buchung stoppen?" in confirm and "Ja, stoppen" in confirm
    stopped = client.post(f"/de/launches/{booking.pk}/stop/", follow=True).content.decode()
    assert "Gestoppt. 1 GPU bei Alpine Compute" in stopped
    assert "Nichts läuft." in stopped and "Beendete Buchungen" in stopped


def test_the_english_booking_link_is_german_on_the_german_page(client, small_catalog, make_user):
    from nodelodge.launches.booking import launch

    user = make_user("ada")
    machine = small_catalog.machine()
    launch(
        user, machines=[(machine.pk, 1)], shown_price_per_hour=Decimal("4.98") / 2, query_string=QUERY,
        idempotency_key=uuid.uuid4().hex,
    )
    client.force_login(user)
    assert f'href="/?{QUERY.split("&")[0]}' in client.get("/launches/").content.decode()
    assert f'href="/de/?{QUERY.split("&")[0]}' in client.get("/de/launches/").content.decode()


def test_signed_out_launch_goes_to_the_german_sign_in(client, small_catalog):
    machine = small_catalog.machine()
    response = client.get("/de/launch/review/", {"machine": machine.pk, "gpus": 1, "price_per_hour": "2.49",
                                                 "query": QUERY})
    assert response["Location"].startswith("/de/accounts/login/?next=/de/launch/review/")
    page = client.get(response["Location"]).content.decode()
    assert "<h1>Anmelden</h1>" in page
    assert "Melden Sie sich zum Starten an; danach kommen Sie zu dieser Prüfung zurück." in page


def test_german_sign_up_mails_a_german_link(client, db):
    response = client.post("/de/accounts/signup/", {
        "username": "grete", "email": "grete@example.com",
        "password1": "a-long-test-passphrase", "password2": "a-long-test-passphrase",
    })
    assert response.status_code == 200 and "Sehen Sie in Ihre E-Mails" in response.content.decode()
    message = mail.outbox[-1]
    assert message.subject == "Registrierung bei Node Lodge abschließen"
    assert "Jemand, wahrscheinlich Sie, hat angefordert" in message.body
    assert "/de/accounts/signup/confirm/" in message.body
