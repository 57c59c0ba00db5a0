"""A new user's first booking, in Debian's chromium, at a desktop (1,440 × 900) and a phone
(390 × 844) width, in English and in German: from a result, Launch, sign up, the e-mailed link
activates the account and comes back to the review, Confirm, the booking on My launches, Stop.

The suite runs on PostgreSQL and on SQLite (bin/test), so this runs on the embedded default too,
where My launches once crashed for every signed-in user."""
from __future__ import annotations

import re
from decimal import Decimal
from urllib.parse import urlparse

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from playwright.sync_api import expect

from catalog.models import Machine
from nodelodge.launches.models import Booking
from tests.helpers import LLAMA_8B as QUERY
from tests.screens import SCREENS, press

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# What the person reads and presses, in each language.
WORDS = {
    "en": {
        "prefix": "", "locale": "en-US", "launch": "^Launch", "sign_in": "Sign in", "sign_up": "Sign up",
        "create": "Create account", "check": "Check your email", "activate": "Activate and sign in",
        "review": "Review the launch", "confirm": "^Confirm and launch", "mine": "My launches",
        "running": "Running bookings", "stop": "^Stop", "stop_heading": "Stop this booking?",
        "yes": "Yes, stop it", "stopped": "Stopped. 1 GPU on Alpine Compute", "nothing": "Nothing running.",
        "ended": "Ended bookings",
    },
    "de": {
        "prefix": "/de", "locale": "de-DE", "launch": ": zuerst prüfen$", "sign_in": "Anmelden",
        "sign_up": "Registrieren", "create": "Konto anlegen", "check": "Sehen Sie in Ihre E-Mails",
        "activate": "Aktivieren und anmelden", "review": "Start prüfen", "confirm": "^Bestätigen und für",
        "mine": "Meine Starts", "running": "Laufende Buchungen", "stop": "stoppen …$",
        "stop_heading": "Diese Buchung stoppen?", "yes": "Ja, stoppen", "stopped": "Gestoppt. 1 GPU bei Alpine Compute",
        "nothing": "Nichts läuft.", "ended": "Beendete Buchungen",
    },
}


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_a_new_user_signs_up_launches_sees_the_booking_and_stops_it(
    browser, live_server, small_catalog, language, screen
):
    words, viewport = WORDS[language], SCREENS[screen]
    width = viewport["width"]
    cheapest = small_catalog.machine(price_per_gpu_hour=Decimal("2.49"), free_gpus=2)
    small_catalog.machine(price_per_gpu_hour=Decimal("3.10"), country="FR")
    context = browser.new_context(locale=words["locale"], viewport=viewport)
    page = context.new_page()
    base = f"{live_server.url}{words['prefix']}"

    # The result: the cheapest machine first, Launch on it.
    page.goto(f"{base}/?{QUERY}&budget=100")
    first_row = page.locator("table.machines tbody.machine-row").first
    expect(first_row).to_contain_text(cheapest.provider_machine_id)
    press(page, first_row.get_by_role("button", name=re.compile(words["launch"])), width)

    # Signed out: sign in, or sign up from there, keeping the way back to the review.
    expect(page.get_by_role("heading", name=words["sign_in"])).to_be_visible()
    press(page, page.get_by_role("main").get_by_role("link", name=words["sign_up"]), width)
    expect(page.get_by_role("heading", name=words["sign_up"])).to_be_visible()
    page.locator("input[name=username]").fill("grace")
    page.locator("input[name=email]").fill("grace@example.com")
    page.locator("input[name=password1]").fill("correct-horse-battery")
    page.locator("input[name=password2]").fill("correct-horse-battery")
    press(page, page.get_by_role("button", name=words["create"]), width)
    expect(page.get_by_role("heading", name=words["check"])).to_be_visible()
    expect(page.get_by_text("grace@example.com")).to_be_visible()
    assert not get_user_model().objects.get(username="grace").is_active

    # The e-mailed link: one button activates the account, signs in and comes back to the review.
    assert len(mail.outbox) == 1
    link = urlparse(re.search(r"https?://\S+/signup/confirm/\S+", mail.outbox[0].body).group(0))
    page.goto(f"{live_server.url}{link.path}?{link.query}")
    press(page, page.get_by_role("button", name=words["activate"]), width)
    expect(page.get_by_role("heading", name=words["review"])).to_be_visible()
    review = page.get_by_test_id("review")
    expect(review).to_contain_text(cheapest.provider_machine_id)
    assert get_user_model().objects.get(username="grace").is_active
    assert not Booking.objects.exists()
    press(page, page.get_by_role("button", name=re.compile(words["confirm"])), width)

    # My launches: the booking, running, with Stop.
    expect(page).to_have_url(re.compile(rf"{words['prefix']}/launches/$"))
    expect(page.get_by_role("heading", name=words["mine"], exact=True)).to_be_visible()
    running = page.get_by_role("table", name=words["running"])
    expect(running).to_contain_text(cheapest.provider_machine_id)
    booking = Booking.objects.get(user__username="grace")
    assert booking.is_running and booking.machine_id == cheapest.pk
    assert Machine.objects.get(pk=cheapest.pk).free_gpus == 1
    if width < 700:
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    press(page, running.get_by_role("link", name=re.compile(words["stop"])), width)

    # Stop asks first, then ends the booking and frees its GPU.
    expect(page.get_by_role("heading", name=words["stop_heading"])).to_be_visible()
    press(page, page.get_by_role("button", name=words["yes"]), width)
    expect(page.locator(".messages")).to_contain_text(words["stopped"])
    expect(page.get_by_text(words["nothing"])).to_be_visible()
    expect(page.get_by_role("table", name=words["ended"])).to_contain_text(cheapest.provider_machine_id)
    booking.refresh_from_db()
    assert booking.status == Booking.Status.ENDED
    assert Machine.objects.get(pk=cheapest.pk).free_gpus == 2
    context.close()
