"""Launch in Debian's chromium: from a result, Launch, sign in, back to the result, Launch, the
booking in My launches, Stop. Screenshots land in test-artifacts/."""
from __future__ import annotations

import re
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from catalog.models import Machine
from nodelodge.launches.booking import launch
from nodelodge.launches.models import Booking
from tests.a11y import assert_accessible
from tests.helpers import LLAMA_8B as QUERY

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"


def shoot(page, name):
    """A screenshot of each state, and axe-core over it where the page runs JavaScript."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"launch-{name}.png"), full_page=True)
    if not name.endswith("-nojs"):
        assert_accessible(page, f"launch, {name}")


@pytest.mark.parametrize("javascript", [True, False], ids=["with-js", "without-js"])
def test_launch_sign_in_see_the_booking_and_stop_it(
    browser, live_server, small_catalog, make_user, javascript
):
    make_user("ada")
    cheapest = small_catalog.machine(price_per_gpu_hour=Decimal("2.49"), free_gpus=2)
    small_catalog.machine(price_per_gpu_hour=Decimal("3.10"), country="FR")
    suffix = "" if javascript else "-nojs"
    context = browser.new_context(java_script_enabled=javascript, viewport={"width": 1280, "height": 900})
    page = context.new_page()

    page.goto(f"{live_server.url}/?{QUERY}&budget=100")
    first_row = page.locator("table.machines tbody.machine-row").first
    expect(first_row).to_contain_text(cheapest.provider_machine_id)
    shoot(page, f"1-result{suffix}")
    first_row.get_by_role("button", name=re.compile("^Launch")).click()

    # Signed out: the sign-in page, which leads back to the review of the same machine.
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next="))
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    shoot(page, f"2-sign-in{suffix}")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("a-long-test-passphrase")
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/launch/review/\?(?=.*machine=)(?=.*budget%3D100)"))

    # The review: exactly what Confirm books; nothing booked yet.
    review = page.get_by_test_id("review")
    expect(review).to_contain_text(cheapest.provider_machine_id)
    expect(review).to_contain_text("$2.49/h")
    expect(review).to_contain_text("Interruptible")
    expect(review).to_contain_text("Booking limit")
    expect(review).to_contain_text("$100.00 covers 40.2 hours")
    expect(review).to_contain_text("Llama 3.1 8B")
    assert not Booking.objects.exists()
    shoot(page, f"2b-review{suffix}")
    page.get_by_role("button", name=re.compile("^Confirm and launch")).click()

    expect(page).to_have_url(re.compile(r"/launches/$"))
    expect(page.locator(".messages")).to_contain_text("Launched: 1 × H100 SXM 80GB on Alpine Compute")
    running = page.get_by_role("table", name="Running bookings")
    expect(running).to_contain_text(cheapest.provider_machine_id)
    expect(running).to_contain_text("$2.49")
    expect(running).to_contain_text("40.16 h")
    shoot(page, f"3-my-launches{suffix}")
    assert Machine.objects.get(pk=cheapest.pk).free_gpus == 1

    expect(running).to_contain_text("Llama 3.1 8B")
    running.get_by_role("link", name=re.compile("^Stop")).click()
    # Stop asks first.
    expect(page.get_by_role("heading", name="Stop this booking?")).to_be_visible()
    assert Booking.objects.get().status == Booking.Status.RUNNING
    shoot(page, f"3b-stop-confirmation{suffix}")
    page.get_by_role("button", name="Yes, stop it").click()
    expect(page.locator(".messages")).to_contain_text("Stopped. 1 GPU on Alpine Compute")
    expect(page.get_by_text("Nothing running.")).to_be_visible()
    expect(page.get_by_role("table", name="Ended bookings")).to_contain_text(cheapest.provider_machine_id)
    shoot(page, f"4-stopped{suffix}")
    assert Booking.objects.get().status == Booking.Status.ENDED
    assert Machine.objects.get(pk=cheapest.pk).free_gpus == 2
    context.close()


def test_losing_the_race_leads_back_to_the_result_and_launches_the_next_cheapest(
    page, live_server, small_catalog, make_user
):
    user = make_user("ada")
    taken = small_catalog.machine(price_per_gpu_hour=Decimal("2.49"), gpu_count=1, free_gpus=1)
    dearer = small_catalog.machine(price_per_gpu_hour=Decimal("3.10"), country="FR")
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("a-long-test-passphrase")
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{live_server.url}/?{QUERY}")
    expect(page.locator("table.machines tbody.machine-row").first).to_contain_text(taken.provider_machine_id)

    # Someone else takes the last GPU between the result and the click.
    first_row = page.locator("table.machines tbody.machine-row").first
    first_row.get_by_role("button", name=re.compile("^Launch")).click()
    expect(page.get_by_test_id("review")).to_contain_text(taken.provider_machine_id)
    launch(
        make_user("bob"), machines=[(taken.pk, 1)], shown_price_per_hour=taken.price_per_gpu_hour,
        query_string=QUERY, idempotency_key=uuid.uuid4().hex,
    )
    page.get_by_role("button", name=re.compile("^Confirm and launch")).click()

    expect(page.get_by_role("alert")).to_contain_text("someone else booked first")
    # Refused at once, nothing recomputed: the way back to the result, which lists the next-cheapest.
    expect(page.get_by_role("heading", name="Next-cheapest machine that fits")).to_have_count(0)
    shoot(page, "5-lost-the-race")
    page.get_by_role("link", name="Back to the result").click()
    offered = page.locator("table.machines tbody.machine-row").first
    expect(offered).to_contain_text(dearer.provider_machine_id)
    offered.get_by_role("button", name=re.compile("^Launch")).click()
    page.get_by_role("button", name=re.compile("^Confirm and launch")).click()

    expect(page.get_by_role("table", name="Running bookings")).to_contain_text(dearer.provider_machine_id)
    assert Booking.objects.get(user=user).machine_id == dearer.pk


def test_my_launches_on_a_phone_shows_when_and_stop(browser, live_server, small_catalog, make_user):
    from nodelodge.launches.booking import launch

    user = make_user("ada")
    machine = small_catalog.machine(price_per_gpu_hour=Decimal("2.49"), free_gpus=2)
    launch(
        user, machines=[(machine.pk, 1)], shown_price_per_hour=Decimal("2.49"), query_string=QUERY,
        idempotency_key="phone-key-0001",
    )
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("a-long-test-passphrase")
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{live_server.url}/launches/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    row = page.locator("tr.booking").first
    started = row.locator("td[data-label=Started]")
    assert started.bounding_box()["width"] > 120, "the start time is readable"
    expect(started).to_contain_text("UTC")
    stop = row.get_by_role("link", name=re.compile("^Stop"))
    stop.scroll_into_view_if_needed()
    expect(stop).to_be_in_viewport()
    box = stop.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    shoot(page, "6-my-launches-phone")
    context.close()
