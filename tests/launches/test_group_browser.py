"""Launch this plan in Debian's chromium, at a desktop (1,440 × 900) and a phone (390 × 844) width,
in English and German: the button on the plan's section, on screen and within the phone's width;
the review lists every machine; Confirm books them all; My launches shows the plan as one entry whose
one Stop stops every machine."""
from __future__ import annotations

import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from catalog.models import Machine
from nodelodge.launches.models import Booking, LaunchGroup
from tests.a11y import assert_accessible
from tests.factories import make_measured_speed
from tests.helpers import LLAMA_8B as QUERY
from tests.screens import SCREENS, press

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {"prefix": "", "locale": "en-US", "sign_in": "Sign in", "username": "Username", "password": "Password",
           "button": "Launch this plan: Cheapest plan", "review": "Review the plan",
           "confirm": "^Confirm and launch 3 machines at", "running": "Running clusters and plans",
           "stop": "Stop the plan…", "stop_heading": "Stop every machine?", "yes": "Yes, stop them all",
           "stopped": "Stopped. 5 GPUs on 3 machines freed.", "ended": "Ended clusters and plans"},
    "de": {"prefix": "/de", "locale": "de-DE", "sign_in": "Anmelden", "username": "Benutzername",
           "password": "Passwort", "button": "^Diesen Plan starten: ", "review": "Plan prüfen",
           "confirm": "^Bestätigen und 3 Maschinen für", "running": "Laufende Cluster und Pläne",
           "stop": "Den Plan stoppen …", "stop_heading": "Jede Maschine stoppen?", "yes": "Ja, alle stoppen",
           "stopped": "Gestoppt. 5 GPUs auf 3 Maschinen freigegeben.", "ended": "Beendete Cluster und Pläne"},
}


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_launch_this_plan_is_on_screen_books_every_machine_and_stops_them_all(
    browser, live_server, cluster_catalog, make_user, language, screen
):
    words, viewport = WORDS[language], SCREENS[screen]
    width = viewport["width"]
    machines = []
    for price in ("2.10", "2.20", "2.30"):
        machine = cluster_catalog.machine(gpu_count=2, free_gpus=2, price_per_gpu_hour=Decimal(price))
        make_measured_speed(machine, "2000")
        machines.append(machine)
    make_user("ada")
    context = browser.new_context(locale=words["locale"], viewport=viewport)
    page = context.new_page()
    base = f"{live_server.url}{words['prefix']}"

    page.goto(f"{base}/accounts/login/")
    page.get_by_label(words["username"]).fill("ada")
    page.get_by_label(words["password"]).fill("a-long-test-passphrase")
    page.get_by_role("main").get_by_role("button", name=words["sign_in"]).click()

    page.goto(f"{base}/?{QUERY}&target_tokens=9000&efficiency=100&redundancy=0")
    plan = page.get_by_test_id("plan-1")
    button = plan.get_by_role("button", name=re.compile(words["button"]))
    if screen == "desktop" and language == "en":
        assert_accessible(page, "the result with Launch this plan")
    press(page, button, width)

    expect(page.get_by_role("heading", name=words["review"])).to_be_visible()
    review = page.get_by_test_id("group-review")
    for machine in machines:
        expect(review).to_contain_text(machine.provider_machine_id)
    assert not Booking.objects.exists()
    if width < 700:
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    press(page, page.get_by_role("button", name=re.compile(words["confirm"])), width)

    running = page.get_by_role("table", name=words["running"])
    for machine in machines:
        expect(running).to_contain_text(machine.provider_machine_id)
    group = LaunchGroup.objects.get(user__username="ada")
    assert group.kind == "plan" and group.bookings.filter(status="running").count() == 3
    assert [m.free_gpus for m in Machine.objects.filter(pk__in=[m.pk for m in machines]).order_by("pk")] == [0, 0, 1]
    if width < 700:
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    if screen == "desktop" and language == "en":
        assert_accessible(page, "My launches with a plan")
    press(page, running.get_by_role("link", name=words["stop"]), width)

    expect(page.get_by_role("heading", name=words["stop_heading"])).to_be_visible()
    press(page, page.get_by_role("button", name=words["yes"]), width)
    expect(page.locator(".messages")).to_contain_text(words["stopped"])
    expect(page.get_by_role("table", name=words["ended"])).to_contain_text(machines[0].provider_machine_id)
    assert set(Booking.objects.values_list("status", flat=True)) == {"ended"}
    assert [m.free_gpus for m in Machine.objects.filter(pk__in=[m.pk for m in machines])] == [2, 2, 2]
    context.close()
