"""Numbers typed in a real browser: a German budget with a decimal comma is the same amount as the
English one whatever the browser's own language (a number box would read 12,50 as 1250 where its
language groups with a comma), and the GPU-count calculator shows the server's message beside the
field instead of stopping the form with the browser's bubble."""
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from tests.a11y import assert_accessible
from tests.helpers import LLAMA_8B

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EXAMPLE = LLAMA_8B
JAVASCRIPT = pytest.mark.parametrize("javascript", [True, False], ids=["with-js", "without-js"])


def open_page(browser, javascript, locale):
    context = browser.new_context(
        java_script_enabled=javascript, locale=locale, viewport={"width": 1440, "height": 1000}
    )
    return context, context.new_page()


def linked_query(page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.get_by_test_id("permalink").get_attribute("href")).query)


@JAVASCRIPT
@pytest.mark.parametrize("locale", ["en-US", "de-DE"])
def test_a_german_budget_typed_with_a_comma_is_the_english_amount(
    browser, live_server, shipped_catalog, javascript, locale
):
    context, page = open_page(browser, javascript, locale)
    page.goto(f"{live_server.url}/de/?{EXAMPLE}")
    # Typed key by key, as a person types (the browser's own number box would take the keys its way).
    page.get_by_label("Budget (USD)").press_sequentially("12,50")
    page.get_by_label("Höchstpreis pro Stunde (USD)").press_sequentially("1.000,5")
    if javascript:
        expect(page).to_have_url(re.compile(r"budget=12\.50&max_price=1000\.5"))
    else:
        page.get_by_role("button", name="Maschinen anzeigen").click()
    query = linked_query(page)
    assert query["budget"] == ["12.50"] and query["max_price"] == ["1000.5"]
    # What was typed stays as typed.
    expect(page.get_by_label("Budget (USD)")).to_have_value("12,50")
    context.close()


@JAVASCRIPT
@pytest.mark.parametrize(
    ("path", "button", "message"),
    [("/calculators/", "Count GPUs", "Enter the throughput target in tokens per second."),
     ("/de/calculators/", "GPUs zählen", "Geben Sie den Zieldurchsatz in Token pro Sekunde ein.")],
)
def test_the_gpu_count_form_shows_the_servers_message_beside_the_field(
    browser, live_server, shipped_catalog, javascript, path, button, message
):
    context, page = open_page(browser, javascript, "de-DE" if path.startswith("/de/") else "en-US")
    page.goto(live_server.url + path)
    page.get_by_role("button", name=button).click()
    # Submitted, not stopped by the browser: the server's words, beside the field, tied to it.
    expect(page).to_have_url(re.compile(r"\?target="))
    expect(page.locator("#err-target")).to_have_text(message)
    expect(page.locator("#id_target")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#id_target")).to_have_attribute("aria-describedby", re.compile(r"\berr-target\b"))
    if javascript:
        assert_accessible(page, f"calculators with a message, {path}")
    context.close()
