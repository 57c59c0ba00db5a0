"""The spec's example in German, in Debian's chromium, with JavaScript and without: a German browser
lands on /de/, the breakdown reads as the documentation writes it, a German field message, a German
empty result, and the language switch keeps the same result and address."""
import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.a11y import assert_accessible
from tests.helpers import LLAMA_8B

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
EXAMPLE = LLAMA_8B
JAVASCRIPT = pytest.mark.parametrize("javascript", [True, False], ids=["with-js", "without-js"])


def shoot(page, name, javascript):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"german-{name}{'' if javascript else '-nojs'}.png"), full_page=True)
    if javascript:
        assert_accessible(page, f"German, {name}")


def german_page(browser, javascript):
    context = browser.new_context(
        java_script_enabled=javascript, locale="de-DE", viewport={"width": 1440, "height": 1000}
    )
    return context, context.new_page()


def breakdown_row(page, item):
    """The row whose item (first cell) is `item`: another item's formula may name it too."""
    item_cell = page.locator("td:first-child", has_text=re.compile("^" + re.escape(item)))
    return page.get_by_role("table", name="Aufschlüsselung des Speichers").locator("tr").filter(has=item_cell)


@JAVASCRIPT
def test_the_example_in_german(browser, live_server, shipped_catalog, javascript):
    context, page = german_page(browser, javascript)
    page.goto(live_server.url + "/")
    expect(page).to_have_url(live_server.url + "/de/")  # the browser asks for German
    expect(page.locator("html")).to_have_attribute("lang", "de")
    expect(page.locator("#result")).to_contain_text("Hier erscheint Ihr Ergebnis")

    page.get_by_label("Kontext pro Anfrage (Token)").fill("4096")
    page.get_by_label("Gleichzeitige Anfragen").fill("1")
    page.get_by_label("Budget (USD)").fill("100")
    page.get_by_role("button", name="Maschinen anzeigen").click()
    expect(page).to_have_url(re.compile(r"/de/\?(?=.*model=llama-3-1-8b)(?=.*context=4096)(?=.*budget=100)"))
    expect(page.locator("#result")).to_contain_text("Empfohlene Maschinen")

    first_row = page.locator("table.machines tbody.machine-row").first
    first_row.get_by_text("Warum sie passt · Grenzen").click()
    expect(first_row).to_contain_text("Budget reicht für")
    shoot(page, "example", javascript)

    # The documentation's table, in its words and its numbers (the sizing engine's German).
    expect(breakdown_row(page, "Modellgewichte")).to_contain_text("14,96")
    expect(breakdown_row(page, "KV-Cache")).to_contain_text("0,50")
    expect(breakdown_row(page, "Sicherheitsmarge")).to_contain_text("3,09")
    expect(breakdown_row(page, "CUDA-Laufzeit")).to_contain_text("1,00")
    expect(breakdown_row(page, "Summe")).to_contain_text("19,55")
    expect(page.get_by_test_id("total-gib")).to_have_text("19,55 GiB")
    context.close()


@JAVASCRIPT
def test_a_german_field_message(browser, live_server, shipped_catalog, javascript):
    context, page = german_page(browser, javascript)
    page.goto(f"{live_server.url}/de/?{EXAMPLE}")
    context_field = page.get_by_label("Kontext pro Anfrage (Token)")
    context_field.fill("0")
    if not javascript:
        page.get_by_role("button", name="Maschinen anzeigen").click()
    # As you type (from the input's German data-msg-*), and from the server without JavaScript.
    expect(page.locator("#err-context")).to_have_text("Der Kontext muss mindestens 1 Token umfassen.")
    expect(context_field).to_have_attribute("aria-invalid", "true")
    # The server's answer replaces the dimmed result with what to fix, in German too.
    expect(page.get_by_test_id("input-errors")).to_contain_text("Der Kontext muss mindestens 1 Token umfassen.")
    shoot(page, "field-message", javascript)
    context.close()


@JAVASCRIPT
def test_a_german_empty_result(browser, live_server, shipped_catalog, javascript):
    context, page = german_page(browser, javascript)
    page.goto(f"{live_server.url}/de/?{EXAMPLE}&max_price=0.01")
    empty = page.get_by_test_id("empty-reason")
    expect(empty).to_contain_text("Keine Maschine erfüllt jede Präferenz.")
    # The hint itself (what relaxing the price opens) is the sizing engine's, in German.
    expect(empty).not_to_contain_text("machine")
    expect(empty).to_contain_text("Maschine")
    shoot(page, "empty-result", javascript)
    context.close()


@JAVASCRIPT
def test_switching_language_keeps_the_result_and_its_address(browser, live_server, shipped_catalog, javascript):
    context, page = german_page(browser, javascript)
    page.goto(f"{live_server.url}/de/?{EXAMPLE}&budget=100")
    if javascript:
        # Changed in place by HTMX: the switch must carry the address as it is now.
        page.get_by_label("Kontext pro Anfrage (Token)").fill("8192")
        expect(page).to_have_url(re.compile(r"/de/\?.*context=8192"))
    else:
        page.get_by_label("Kontext pro Anfrage (Token)").fill("8192")
        page.get_by_role("button", name="Maschinen anzeigen").click()
    german_url = page.url
    german_total = page.get_by_test_id("total-gib").inner_text()

    page.get_by_role("navigation", name="Sprache").get_by_role("link", name="English").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    # The switch carries the answer's canonical address (what the address bar shows after a swap).
    assert "/de/" not in page.url and "context=8192" in page.url and "budget=100" in page.url
    if javascript:
        assert page.url == german_url.replace("/de/?", "/?")
    expect(page.get_by_test_id("total-gib")).to_have_text(german_total.replace(",", "."))
    expect(page.get_by_label("Context per request (tokens)")).to_have_value("8192")
    shoot(page, "switched-to-english", javascript)

    # Remembered: the English address stays English although the browser prefers German.
    page.goto(f"{live_server.url}/?{EXAMPLE}")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.get_by_role("navigation", name="Language").get_by_role("link", name="Deutsch").click()
    expect(page).to_have_url(f"{live_server.url}/de/?{EXAMPLE}&tier=both")
    expect(page.locator("html")).to_have_attribute("lang", "de")
    context.close()


def test_on_a_german_phone_launch_stays_at_the_top_of_each_card(browser, live_server, shipped_catalog):
    """German words run longer than English ones: the phone card must still hold GPU, memory, price
    and Starten at its top, inside the screen, and the total need in its bar."""
    context = browser.new_context(locale="de-DE", viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(f"{live_server.url}/de/?{EXAMPLE}&budget=100")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    summary = page.get_by_test_id("need-summary")
    expect(summary).to_contain_text("19,55 GiB")
    card = page.locator("tbody.machine-row").first
    card.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "german-phone-card.png"))
    card_box = card.bounding_box()
    assert card_box["x"] >= 0 and card_box["x"] + card_box["width"] <= 390
    for part in (".c-gpu", ".c-memory", ".c-price", ".c-launch button"):
        part_box = card.locator(part).bounding_box()
        assert part_box["x"] + part_box["width"] <= card_box["x"] + card_box["width"] + 1, part
        assert part_box["y"] < card_box["y"] + 170, f"{part} is not at the top of the card"
    expect(card.get_by_role("button", name=re.compile("starten: zuerst prüfen$"))).to_be_in_viewport()
    expect(card.get_by_role("button", name=re.compile("starten"))).to_have_text("Starten")
    assert_accessible(page, "German, phone result")
    context.close()
