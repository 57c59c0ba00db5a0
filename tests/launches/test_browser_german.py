"""Launch in German, in Debian's chromium, with JavaScript and without: Starten, sign in, the
review, Bestätigen, Meine Starts, Stoppen. Screenshots land in test-artifacts/."""
from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from nodelodge.launches.models import Booking
from tests.a11y import assert_accessible
from tests.helpers import LLAMA_8B as QUERY

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"


def shoot(page, name, javascript):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"launch-de-{name}{'' if javascript else '-nojs'}.png"), full_page=True)
    if javascript:
        assert_accessible(page, f"Launch in German, {name}")


@pytest.mark.parametrize("javascript", [True, False], ids=["with-js", "without-js"])
def test_launch_meine_starts_and_stop_in_german(browser, live_server, small_catalog, make_user, javascript):
    make_user("ada")
    cheapest = small_catalog.machine(price_per_gpu_hour=Decimal("2.49"), free_gpus=2)
    small_catalog.machine(price_per_gpu_hour=Decimal("3.10"), country="FR")
    context = browser.new_context(java_script_enabled=javascript, locale="de-DE",
                                  viewport={"width": 1280, "height": 900})
    page = context.new_page()

    page.goto(f"{live_server.url}/?{QUERY}&budget=100")
    expect(page).to_have_url(re.compile(r"/de/\?"))
    first_row = page.locator("table.machines tbody.machine-row").first
    expect(first_row).to_contain_text(cheapest.provider_machine_id)
    first_row.get_by_role("button", name=re.compile("^Alpine Compute .*: zuerst prüfen")).click()

    expect(page).to_have_url(re.compile(r"/de/accounts/login/\?next=/de/launch/review/"))
    expect(page.get_by_role("heading", name="Anmelden")).to_be_visible()
    expect(page.locator(".messages")).to_contain_text("Melden Sie sich zum Starten an")
    page.get_by_label("Benutzername").fill("ada")
    page.get_by_label("Passwort").fill("a-long-test-passphrase")
    page.get_by_role("button", name="Anmelden").click()

    expect(page.get_by_role("heading", name="Start prüfen")).to_be_visible()
    review = page.get_by_test_id("review")
    expect(review).to_contain_text(cheapest.provider_machine_id)
    expect(review).to_contain_text("Unterbrechbar")
    expect(review).to_contain_text("Budget reicht für")
    review_text = review.inner_text()
    shoot(page, "review", javascript)
    page.get_by_role("button", name=re.compile("^Bestätigen und für")).click()

    expect(page).to_have_url(re.compile(r"/de/launches/$"))
    expect(page.get_by_role("heading", name="Meine Starts")).to_be_visible()
    expect(page.locator(".messages")).to_contain_text("Gestartet: 1 × H100 SXM 80GB bei Alpine Compute")
    running = page.get_by_role("table", name="Laufende Buchungen")
    expect(running).to_contain_text(cheapest.provider_machine_id)
    shoot(page, "meine-starts", javascript)

    running.get_by_role("link", name=re.compile("stoppen …$")).click()
    expect(page.get_by_role("heading", name="Diese Buchung stoppen?")).to_be_visible()
    shoot(page, "stop", javascript)
    page.get_by_role("button", name="Ja, stoppen").click()
    expect(page.locator(".messages")).to_contain_text("Gestoppt. 1 GPU bei Alpine Compute")
    expect(page.get_by_text("Nichts läuft.")).to_be_visible()
    expect(page.get_by_role("table", name="Beendete Buchungen")).to_contain_text(cheapest.provider_machine_id)
    assert Booking.objects.get().status == Booking.Status.ENDED
    context.close()
    # The sizing engine's words on the review: what $100 covers, in German numbers ("40,2 Stunden").
    assert "40,2" in review_text, review_text
