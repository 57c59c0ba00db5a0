"""Numbers typed in Debian's chromium never change silently, on a desktop and a phone, in English and
German: "2,5" typed as concurrent requests and "abc" as the LoRA rank get the field's message beside
the field and stay in the box as typed (a number box would have made them 25 and an empty box)."""
import re

import pytest
from playwright.sync_api import expect

from catalog.services import load_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

INFERENCE = "?workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=1"
FINETUNE = "?workload=finetune&model=llama-3-1-8b&precision=4&context=4096&requests=4"
WIDTHS = pytest.mark.parametrize("width", [1440, 390], ids=["desktop", "phone"])
LANGUAGES = {
    "en": {"prefix": "/", "locale": "en-US", "requests": "Concurrent requests",
           "requests_message": "Concurrent requests must be a whole number, such as 1 or 8.",
           "rank": "LoRA rank", "rank_message": "The LoRA rank must be a whole number, such as 16."},
    "de": {"prefix": "/de/", "locale": "de-DE", "requests": "Gleichzeitige Anfragen",
           "requests_message": "Gleichzeitige Anfragen müssen eine ganze Zahl sein, etwa 1 oder 8.",
           "rank": "LoRA-Rang", "rank_message": "Der LoRA-Rang muss eine ganze Zahl sein, etwa 16."},
}
LANGUAGE = pytest.mark.parametrize("language", list(LANGUAGES))


@pytest.fixture
def shipped_catalog(transactional_db):
    load_catalog()


def open_page(browser, width, language, address):
    words = LANGUAGES[language]
    context = browser.new_context(locale=words["locale"], viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(address)
    return context, page, words


@WIDTHS
@LANGUAGE
def test_a_fractional_request_count_is_refused_beside_its_field_as_typed(
    browser, live_server, shipped_catalog, width, language
):
    context, page, words = open_page(browser, width, language, live_server.url + LANGUAGES[language]["prefix"] + INFERENCE)
    box = page.get_by_label(words["requests"], exact=True)
    box.fill("")
    box.press_sequentially("2,5")
    box.blur()
    message = page.locator("#err-requests")
    expect(message).to_have_text(words["requests_message"])
    expect(message).to_be_visible()
    expect(page.get_by_label(words["requests"], exact=True)).to_have_value("2,5")
    expect(page).not_to_have_url(re.compile(r"requests=25\b"))
    context.close()


@WIDTHS
@LANGUAGE
def test_a_lora_rank_that_is_not_a_number_is_refused_beside_its_field_as_typed(
    browser, live_server, shipped_catalog, width, language
):
    context, page, words = open_page(browser, width, language, live_server.url + LANGUAGES[language]["prefix"] + FINETUNE)
    box = page.get_by_label(words["rank"], exact=True)
    box.fill("")
    box.press_sequentially("abc")
    box.blur()
    message = page.locator("#err-lora_rank")
    expect(message).to_have_text(words["rank_message"])
    expect(message).to_be_visible()
    expect(page.get_by_label(words["rank"], exact=True)).to_have_value("abc")
    context.close()
