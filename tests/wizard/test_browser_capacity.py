"""What each machine holds and the command that starts it, read in Debian's chromium on a desktop and a
phone, in English and German: the wizard under engine=vllm, and the GPU what-if on the calculators page."""
import re

import pytest
from playwright.sync_api import expect

from sizing.calculators.vllm_versions import DEFAULT
from tests.a11y import assert_accessible
from tests.helpers import llama_8b

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUERY = llama_8b(context=8192, requests=4, engine="vllm")
# The default release's default utilization, as commands write it (0.92 from vLLM 0.20).
DEFAULT_UTILIZATION = f"{float(DEFAULT.default_utilization):g}"
SCREENS = pytest.mark.parametrize(("width", "height"), [(1440, 1000), (390, 844)], ids=["desktop", "phone"])
LANGUAGES = pytest.mark.parametrize(
    ("prefix", "locale", "holds", "command_label"),
    [("", "en-US", "Holds", "Copy the command"), ("/de", "de-DE", "Fasst", "Befehl kopieren")],
    ids=["english", "german"],
)


@SCREENS
@LANGUAGES
def test_every_machine_row_says_what_it_holds_and_how_to_start_it(
    browser, live_server, shipped_catalog, width, height, prefix, locale, holds, command_label
):
    context = browser.new_context(locale=locale, viewport={"width": width, "height": height})
    page = context.new_page()
    page.goto(f"{live_server.url}{prefix}/?{QUERY}")
    rows = page.locator("#result tbody.machine-row")
    expect(rows.first).to_be_visible()
    first = rows.first
    capacity = first.get_by_test_id("capacity")
    expect(capacity).to_be_visible()
    expect(capacity).to_contain_text(holds)
    numbers = [int(n.replace(",", "").replace(".", "")) for n in re.findall(r"\d[\d.,]*", capacity.inner_text())]
    assert numbers[0] >= 4, "a machine recommended for 4 requests holds at least 4"
    assert numbers[-1] >= 8192, "and at least the asked context at the asked requests"
    first.locator("summary").click()
    command = first.get_by_test_id("command")
    expect(command).to_be_visible()
    expect(command).to_have_text(re.compile(
        r"^vllm serve meta-llama/Llama-3\.1-8B --tensor-parallel-size \d+ --max-model-len 8192 --max-num-seqs 4 "
        rf"--gpu-memory-utilization {re.escape(DEFAULT_UTILIZATION)}$"))
    expect(first.get_by_role("button", name=command_label)).to_be_visible()
    expect(page.locator("#result")).to_contain_text("vLLM")  # the constraints name the engine
    assert_accessible(page, f"capacity {locale} {width}")
    context.close()


@LANGUAGES
def test_the_gpu_what_if_answers_on_the_calculators_page(
    browser, live_server, shipped_catalog, prefix, locale, holds, command_label
):
    context = browser.new_context(locale=locale, viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.goto(f"{live_server.url}{prefix}/calculators/?model=llama-3-1-8b&gpu_memory_gib=79.19"
              "&gpu_memory_utilization=0.95&max_model_len=8192")
    result = page.get_by_test_id("what-if-result")
    expect(result).to_be_visible()
    expect(page.get_by_test_id("what-if-command")).to_have_text(re.compile(r"^vllm serve meta-llama/Llama-3\.1-8B "))
    pool = page.get_by_test_id("what-if-pool").inner_text()
    tokens = int(re.findall(r"(\d[\d.,]{5,}) (?:tokens|Token)", pool)[0].replace(",", "").replace(".", ""))
    assert 476_016 * 0.85 <= tokens <= 476_016 * 1.05
    assert_accessible(page, f"what-if {locale}")
    context.close()
