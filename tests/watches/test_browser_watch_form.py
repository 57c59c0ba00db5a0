"""The watch form and the watches list in Debian's chromium, at 1,440 px and on a 390 px phone, in English
and German: a refused watch keeps the person on the result with each message beside its field and what
they typed still there (with htmx, and without JavaScript); Delete on the list asks first, on screen."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from nodelodge.watches import services
from nodelodge.watches.models import Watch
from tests.a11y import assert_accessible
from tests.factories import make_user
from tests.helpers import LLAMA_8B as QUERY

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}
WORDS = {
    "en": {"prefix": "", "cap": "Enter the Auto-Launch price cap per hour in USD, e.g. 5.00.",
           "price": "The price per hour must be above 0 and at most 1,000,000 USD.",
           "confirm": "Delete this watch?", "yes": "Yes, delete it", "delete": "Delete"},
    "de": {"prefix": "/de", "cap": "Geben Sie die Preisobergrenze pro Stunde für automatisches Starten in USD ein, "
                                   "z. B. 5,00.",
           "price": "Der Preis pro Stunde muss über 0 und höchstens 1.000.000 USD sein.",
           "confirm": "Diese Beobachtung löschen?", "yes": "Ja, löschen", "delete": "Löschen"},
}
CASES = [(width, language) for width in WIDTHS for language in WORDS]


def signed_in_page(browser, live_server, width, *, javascript=True):
    context = browser.new_context(viewport=WIDTHS[width], java_script_enabled=javascript)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.locator("input[name=username]").fill("ada")
    page.locator("input[name=password]").fill("a-long-test-passphrase")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    return page


def fits_the_screen(page, locator, width):
    box = locator.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= WIDTHS[width]["width"] + 1


@pytest.mark.parametrize("javascript", [True, False], ids=["htmx", "no-javascript"])
@pytest.mark.parametrize(("width", "language"), CASES)
def test_a_refused_watch_shows_each_message_beside_its_field_and_keeps_what_was_typed(
    browser, live_server, catalog, width, language, javascript
):
    make_user("ada")
    words = WORDS[language]
    page = signed_in_page(browser, live_server, width, javascript=javascript)
    page.goto(f"{live_server.url}{words['prefix']}/?{QUERY}")
    form = page.get_by_test_id("watch-form")
    form.locator("select[name=condition]").select_option("cheapest_below")
    form.locator("input[name=price_per_hour]").fill("2000000")
    form.locator("summary").click()
    form.locator("input[name=auto_launch]").check()
    form.locator("button[type=submit]").click()

    form = page.get_by_test_id("watch-form")
    price_error, cap_error = form.get_by_test_id("watch-price-error"), form.get_by_test_id("watch-cap-error")
    expect(price_error).to_have_text(words["price"])
    expect(cap_error).to_have_text(words["cap"])
    expect(price_error).to_be_visible()
    expect(cap_error).to_be_visible()
    # Beside its field: just below the input it speaks of, inside the form.
    price_box = form.locator("input[name=price_per_hour]").bounding_box()
    assert 0 <= price_error.bounding_box()["y"] - (price_box["y"] + price_box["height"]) < 60
    expect(form.locator("input[name=price_per_hour]")).to_have_value("2000000")
    expect(form.locator("input[name=price_per_hour]")).to_have_attribute("aria-invalid", "true")
    expect(form.locator("select[name=condition]")).to_have_value("cheapest_below")
    expect(form.locator("input[name=auto_launch]")).to_be_checked()
    expect(page.locator("#result")).to_be_visible()  # still the result, not My launches
    fits_the_screen(page, cap_error, width)
    if javascript:
        assert_accessible(page, f"refused watch, {width}, {language}")
    assert not Watch.objects.exists()

    form.locator("input[name=price_per_hour]").fill("12,50" if language == "de" else "12.50")
    form.locator("input[name=auto_launch_max_price]").fill("3,25" if language == "de" else "3.25")
    form.locator("button[type=submit]").click()
    expect(page).to_have_url(re.compile(rf"{words['prefix']}/launches/(#watches-heading)?$"))
    watch = Watch.objects.get()
    assert (str(watch.price_per_hour), str(watch.auto_launch_max_price)) == ("12.5000", "3.2500")


@pytest.mark.parametrize(("width", "language"), CASES)
def test_delete_on_the_watches_list_asks_on_screen_before_it_deletes(browser, live_server, catalog, width, language):
    owner = make_user("ada")
    services.create_watch(owner, services.WatchRequest(
        query=dict(pair.split("=") for pair in QUERY.split("&")), auto_launch=True, auto_launch_max_price="4",
    ))
    words = WORDS[language]
    page = signed_in_page(browser, live_server, width)
    page.goto(f"{live_server.url}{words['prefix']}/launches/")
    row = page.locator("table.watches tr.watch")
    expect(row.get_by_test_id("watch-feed")).to_be_visible()
    expect(row.get_by_test_id("watch-auto-launch")).to_contain_text("4,00 $/h" if language == "de" else "$4.00/h")

    row.get_by_role("button", name=words["delete"]).click()

    confirm = page.get_by_test_id("delete-confirm")
    expect(page.get_by_role("heading", name=words["confirm"])).to_be_visible()
    yes = confirm.get_by_role("button", name=words["yes"])
    expect(yes).to_be_visible()
    fits_the_screen(page, yes, width)
    assert_accessible(page, f"delete a watch, {width}, {language}")
    assert Watch.objects.exists()
    yes.click()
    expect(page.locator("table.watches tr.watch")).to_have_count(0)
    assert not Watch.objects.exists()
