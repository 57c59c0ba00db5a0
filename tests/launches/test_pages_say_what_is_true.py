"""Account and booking pages say what is true: a sign-up not yet confirmed is not signed in, and an
ended booking's page is not titled as a question about stopping it."""
import uuid
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from nodelodge.accounts import signup
from nodelodge.launches.booking import launch
from nodelodge.launches.holding import stop
from tests.helpers import LLAMA_8B as QUERY

pytestmark = pytest.mark.django_db


def test_the_signup_confirmation_page_does_not_show_the_pending_account_as_signed_in(client):
    pending = get_user_model().objects.create_user(
        username="newcomer", email="newcomer@example.com", password="a-long-test-passphrase", is_active=False
    )
    html = client.get(signup.activation_path(pending)).content.decode()
    header = html.split("<main", 1)[0]
    assert "Sign out" not in header and "newcomer" not in header
    assert 'href="/accounts/login/' in header and "Sign up" in header
    # the page itself names the account it activates
    assert "Activate the account <strong>newcomer</strong> and sign in." in html


def test_the_stop_page_of_an_ended_booking_is_titled_as_ended(client, small_catalog, make_user):
    user = make_user()
    client.force_login(user)
    machine = small_catalog.machine()
    booking = launch(
        user, machines=[(machine.pk, 1)], shown_price_per_hour=Decimal("2.49"), query_string=QUERY,
        idempotency_key=uuid.uuid4().hex,
    ).booking
    running = client.get(reverse("launches:stop", args=[booking.pk])).content.decode()
    assert "<h1>Stop this booking?</h1>" in running
    stop(user, booking.pk)
    ended = client.get(reverse("launches:stop", args=[booking.pk])).content.decode()
    assert "<h1>Booking ended</h1>" in ended and "<title>Booking ended · Node Lodge</title>" in ended
    assert "Stop this booking?" not in ended
    assert "This booking has already ended." in ended
