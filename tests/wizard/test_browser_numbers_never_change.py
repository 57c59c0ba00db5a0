"""Numbers typed in Debian's chromium never change silently, on a desktop and a phone, in English and
German: "2,5" typed as concurrent requests and "abc" as the LoRA rank get the field's message beside
the field and stay in the box as typed (a number box would have made them 25 and an empty box)."""
import re

import pytest
from playwright.sync_api import expect

from tests.helpers import LLAMA_8B, LLAMA_8B_QLORA

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

INFERENCE = "?" + LLAMA_8B
FINETUNE = "?" + LLAMA_8B_QLORA
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


WHAT_IF = {
    "en": {"prefix": "/", "button": "Size it", "tp": "Tensor-parallel size",
           "tp_message": "has 32 attention heads: the tensor-parallel size must divide them.",
           "seqs": "Sequences per step (max_num_seqs)",
           "seqs_message": "max_num_seqs must be a whole number, such as 256."},
    "de": {"prefix": "/de/", "button": "Berechnen", "tp": "Tensor-Parallel-Größe",
           "tp_message": "hat 32 Attention-Köpfe: die Tensor-Parallel-Größe muss sie teilen.",
           "seqs": "Sequenzen pro Schritt (max_num_seqs)",
           "seqs_message": "max_num_seqs muss eine ganze Zahl sein, etwa 256."},
}


@WIDTHS
@LANGUAGE
def test_every_bad_what_if_field_is_refused_at_once_beside_it_as_typed(
    browser, live_server, shipped_catalog, width, language
):
    words = WHAT_IF[language]
    context = browser.new_context(locale=LANGUAGES[language]["locale"], viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server.url}{words['prefix']}calculators/")
    page.get_by_label(words["tp"], exact=True).fill("3")  # a whole number the model refuses
    page.get_by_label(words["seqs"], exact=True).fill("2,5")
    page.get_by_role("button", name=words["button"]).click()
    expect(page.locator("#err-tensor_parallel")).to_contain_text(words["tp_message"])
    expect(page.locator("#err-max_num_seqs")).to_have_text(words["seqs_message"])
    expect(page.locator("#err-max_num_seqs")).to_be_visible()
    expect(page.get_by_label(words["tp"], exact=True)).to_have_value("3")
    expect(page.get_by_label(words["seqs"], exact=True)).to_have_value("2,5")
    expect(page.get_by_test_id("what-if-result")).to_have_count(0)
    context.close()
