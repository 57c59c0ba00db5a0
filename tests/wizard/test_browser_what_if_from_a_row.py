"""From a vLLM machine row to the GPU what-if, in Debian's chromium on a desktop and a phone, in
English and German: the row shows the link on screen, and following it opens the what-if prefilled
with the row's GPU type and count and the query, already answered."""
import re

import pytest
from playwright.sync_api import expect

from tests.helpers import llama_8b

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUERY = llama_8b(context=8192, requests=4, engine="vllm")
SCREENS = pytest.mark.parametrize(("width", "height"), [(1440, 1000), (390, 844)], ids=["desktop", "phone"])
LANGUAGES = pytest.mark.parametrize(
    ("prefix", "locale", "link", "starts", "gpu_label", "tp_label"),
    [("", "en-US", "GPU what-if", "Starts", "GPU type", "Tensor-parallel size"),
     ("/de", "de-DE", "GPU-Was-wäre-wenn", "Startet", "GPU-Typ", "Tensor-Parallel-Größe")],
    ids=["english", "german"],
)


@SCREENS
@LANGUAGES
def test_a_vllm_machine_row_opens_the_what_if_for_its_gpus(
    browser, live_server, shipped_catalog, width, height, prefix, locale, link, starts, gpu_label, tp_label
):
    context = browser.new_context(locale=locale, viewport={"width": width, "height": height})
    page = context.new_page()
    page.goto(f"{live_server.url}{prefix}/?{QUERY}")
    row = page.locator("#result tbody.machine-row").first
    gpus, gpu_type = re.search(r"(\d+) ×\s*(.+)", row.locator(".c-gpu .nowrap").inner_text()).groups()
    what_if = row.get_by_role("link", name=re.compile(re.escape(link)))
    expect(what_if).to_be_visible()
    what_if.scroll_into_view_if_needed()
    expect(what_if).to_be_in_viewport()
    what_if.click()
    expect(page).to_have_url(re.compile(rf"{prefix}/calculators/\?.*tensor_parallel={gpus}"))
    expect(page.get_by_label(gpu_label, exact=True)).to_have_value(gpu_type.strip())
    expect(page.get_by_label(tp_label, exact=True)).to_have_value(gpus)
    expect(page.get_by_test_id("what-if-fits")).to_have_text(starts)
    expect(page.get_by_test_id("what-if-command")).to_contain_text("--max-model-len 8192")
    context.close()
