"""The 4-bit base's format in Debian's chromium: a fine-tune switched to 4-bit shows the field, a GPTQ
base changes the items it names and the address keeps it, and back at 16-bit the field and the address
entry are gone."""
import re

import pytest
from playwright.sync_api import expect

from tests.a11y import assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FINETUNE_16 = "/?workload=finetune&model=mistral-7b-v0-3&precision=16&context=4096&requests=4"


def test_switching_to_4_bit_shows_the_base_format_and_gptq_changes_the_items(page, live_server, shipped_catalog):
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(live_server.url + FINETUNE_16)
    result = page.locator("#result")
    expect(page.get_by_test_id("training-inputs")).to_be_visible()
    expect(page.locator("#id_base_format")).to_have_count(0)

    page.locator("#id_precision").select_option("4")
    expect(page.locator("#id_base_format")).to_have_value("nf4")
    expect(result).to_contain_text("fine-tuning (QLoRA)")
    nf4_total = page.get_by_test_id("total-gib").inner_text()

    page.get_by_label("4-bit base").select_option("gptq")
    expect(result).to_contain_text("Dequantized matrix")
    expect(result).to_contain_text("GPTQ checkpoint, group 128")  # constraints applied
    expect(page).to_have_url(re.compile(r"base_format=gptq"))
    expect(page.get_by_test_id("total-gib")).not_to_have_text(nf4_total)
    assert_accessible(page, "fine-tune, GPTQ base")

    page.locator("#id_precision").select_option("16")
    expect(page.locator("#id_base_format")).to_have_count(0)
    expect(result).not_to_contain_text("Dequantized matrix")
    expect(page).not_to_have_url(re.compile(r"base_format"))
