"""A fine-tune run another way, in Debian's chromium on a desktop: the "How you train" fields change
the items they name, the address keeps them, and a bad rank is worded beside its field."""
import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.a11y import assert_accessible
from tests.helpers import LLAMA_8B_QLORA

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
FINETUNE = "/?" + LLAMA_8B_QLORA


def test_a_chunked_loss_without_checkpointing_changes_the_logits_and_activations(page, live_server, shipped_catalog):
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(live_server.url + FINETUNE)
    result = page.locator("#result")
    expect(page.get_by_test_id("training-inputs")).to_be_visible()
    expect(result).to_contain_text("fp32 logits, their log-softmax and its gradient")
    default_total = page.get_by_test_id("total-gib").inner_text()

    page.get_by_label("Loss", exact=True).select_option("chunked")
    expect(result).to_contain_text("chunked loss: the batch's logits never exist whole")
    page.get_by_label("Gradient checkpointing", exact=True).select_option("off")
    expect(result).to_contain_text("no gradient checkpointing")
    expect(page).to_have_url(re.compile(r"(?=.*loss=chunked)(?=.*gradient_checkpointing=off)"))
    expect(page.get_by_test_id("total-gib")).not_to_have_text(default_total)
    expect(result).to_contain_text("Liger")
    expect(result).to_contain_text("off (every layer's activations kept)")  # constraints applied
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "training-chunked-no-checkpointing.png"), full_page=True)
    page.get_by_test_id("training-inputs").screenshot(path=str(ARTIFACTS / "training-fields.png"))
    page.locator("table.breakdown").screenshot(path=str(ARTIFACTS / "training-breakdown.png"))
    assert_accessible(page, "fine-tune, chunked loss, no checkpointing")

    # A rank of 0 is worded beside its field; the loss and checkpointing chosen stay.
    page.get_by_label("LoRA rank").fill("0")
    page.get_by_role("button", name="Show machines").click()
    expect(page.locator("#err-lora_rank")).to_have_text("The LoRA rank must be at least 1.")
    expect(page.get_by_label("Loss", exact=True)).to_have_value("chunked")
    expect(page.get_by_label("Gradient checkpointing", exact=True)).to_have_value("off")

    # Another workload shows none of the fields.
    page.get_by_label("Run a model").check()
    expect(page.get_by_test_id("training-inputs")).to_have_count(0)
