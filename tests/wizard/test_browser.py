"""The wizard in Debian's chromium, driven by Playwright: the three steps for every workload."""
import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.a11y import assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"


def shoot(page, name, javascript=True):
    """A screenshot of each state, and axe-core over it (axe runs in the page, so only with JavaScript)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"wizard-{name}.png"), full_page=True)
    if javascript:
        assert_accessible(page, f"wizard, {name}")


def test_three_steps_for_every_workload(page, live_server, shipped_catalog):
    page.goto(live_server.url + "/")
    result = page.locator("#result")
    expect(result).to_contain_text("Your result appears here")
    shoot(page, "start")

    # Run a model: Llama 3.1 8B, 16-bit, 4,096 tokens, 1 request, EU only.
    page.get_by_label("Run a model").check()
    page.locator("#model-list").get_by_text("Llama 3.1 8B", exact=True).click()
    page.get_by_label("Precision", exact=True).select_option("16")
    page.get_by_label("Context per request (tokens)").fill("4096")
    page.get_by_label("Concurrent requests").fill("1")
    page.get_by_label("Budget (USD)").fill("100")
    page.get_by_label("All 27 EU member states").check()
    page.get_by_role("button", name="Show machines").click()
    expect(page.get_by_test_id("total-gib")).to_have_text("19.55 GiB")
    expect(result).to_contain_text("Recommended machines")
    expect(page).to_have_url(re.compile(r"(?=.*model=llama-3-1-8b)(?=.*countries=EU)"))
    first_row = page.locator("table.machines tbody.machine-row").first
    first_row.get_by_text("Why it fits · limits").click()
    # Loaded when opened: the why-it-fits lines, from the machine's page.
    expect(why_it_fits(page, first_row).first).to_have_text(re.compile(r" GiB of memory per GPU \("))
    shoot(page, "inference")

    # Typing a new context updates the result without a click.
    page.get_by_label("Context per request (tokens)").fill("128000")
    expect(page.get_by_test_id("total-gib")).not_to_have_text("19.55 GiB")
    expect(result).to_contain_text("15.63")

    # Fine-tune: labels change to sequence length and batch size.
    page.get_by_label("Fine-tune a model").check()
    expect(page.get_by_label("Sequence length (tokens)")).to_be_visible()
    page.get_by_label("Sequence length (tokens)").fill("2048")
    page.get_by_label("Batch size").fill("2")
    page.get_by_label("Precision", exact=True).select_option("4")
    page.get_by_role("button", name="Show machines").click()
    expect(result).to_contain_text("Korthikanti")
    expect(result).to_contain_text("LoRA adapters")
    shoot(page, "finetune")

    # Generate images: no context or requests fields; confidence is low.
    page.get_by_label("Generate images").check()
    expect(page.get_by_label("Context per request (tokens)")).to_have_count(0)
    page.locator("#model-list").get_by_text("FLUX.1 [dev]", exact=False).first.click()
    page.get_by_role("button", name="Show machines").click()
    expect(result).to_contain_text("native resolution")
    expect(result.locator(".badge.low").first).to_be_visible()
    shoot(page, "image")

    # Open a notebook: only the memory it needs.
    page.get_by_label("Open a notebook").check()
    page.get_by_label("GPU memory needed (GiB)").fill("30")
    page.get_by_role("button", name="Show machines").click()
    expect(page.get_by_test_id("total-gib")).to_have_text("30.00 GiB")
    shoot(page, "notebook")


VLLM_8B = "workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=1&engine=vllm"


def why_it_fits(page, within=None):
    """The lines under "Why it fits" in a row's details (`within`), or on a machine's page."""
    heading = page.locator("strong", has_text=re.compile(r"^Why it fits$"))
    return (within or page).locator(".machine-detail > div").filter(has=heading).locator("li")


def first_machine(query: str):
    """The answer's first machine, described as its row's details say it (the machine's page's own door)."""
    from django.http import QueryDict

    from nodelodge.recommendations.answer import recommendation_for
    from nodelodge.recommendations.query import parse_query

    return recommendation_for(parse_query(QueryDict(query))).recommendation.machines[0]


def test_opening_a_rows_details_shows_why_it_fits_and_the_command_to_copy(browser, live_server, shipped_catalog):
    """"Why it fits · limits" on the first row loads its details when opened (the panel writes a link
    alone): the person reads why it fits, the limits and the command, and its Copy button copies it."""
    machine = first_machine(VLLM_8B)
    context = browser.new_context(viewport={"width": 1440, "height": 1000},
                                  permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto(f"{live_server.url}/?{VLLM_8B}")
    first_row = page.locator("table.machines tbody.machine-row").first
    expect(first_row).to_have_attribute("data-machine-id", str(machine.offer.id))
    expect(first_row.get_by_test_id("command")).to_have_count(0)  # not in the panel until opened
    first_row.get_by_text("Why it fits · limits").click()
    expect(why_it_fits(page, first_row)).to_have_text(list(machine.why_it_fits))
    command = first_row.get_by_test_id("command")
    expect(command).to_have_text(machine.command)
    assert machine.command.startswith("vllm serve meta-llama/Llama-3.1-8B ")
    copy = first_row.locator("button.copy-command")
    expect(copy).to_have_text("Copy the command")
    expect(copy).to_be_visible()
    copy.click()
    expect(copy).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == machine.command
    expect(first_row.get_by_test_id("machine-detail-link")).to_have_count(0)
    shoot(page, "row-details-open")
    # The machine's own page (where the row's details come from), whole, passes axe too.
    page.goto(live_server.url + first_row.locator("details.machine").get_attribute("hx-get"))
    expect(page.get_by_test_id("command")).to_have_text(machine.command)
    shoot(page, "machine-page")
    context.close()


def test_without_javascript_a_rows_link_opens_the_machines_page(browser, live_server, shipped_catalog):
    machine = first_machine(VLLM_8B)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live_server.url}/?{VLLM_8B}")
    first_row = page.locator("table.machines tbody.machine-row").first
    first_row.get_by_text("Why it fits · limits").click()
    link = first_row.get_by_test_id("machine-detail-link")
    expect(link).to_be_visible()
    link.click()
    expect(page.get_by_test_id("machine-page")).to_be_visible()
    expect(page.get_by_role("heading", level=1)).to_have_text(
        f"{machine.offer.provider} {machine.offer.provider_machine_id}: {machine.fit.gpus_used} × {machine.offer.gpu_type}")
    expect(page.get_by_test_id("command")).to_have_text(machine.command)
    expect(why_it_fits(page)).to_have_text(list(machine.why_it_fits))
    launch = page.get_by_role("button", name=f"Launch {machine.offer.provider} {machine.offer.provider_machine_id}: "
                                             "review first")
    expect(launch).to_be_visible()
    shoot(page, "machine-page", javascript=False)
    page.get_by_role("link", name="Back to the answer").click()
    expect(page.locator("#result")).to_contain_text("Recommended machines")
    context.close()


def test_model_search_filters_the_list(page, live_server, shipped_catalog):
    page.goto(live_server.url + "/?workload=inference")
    page.get_by_label("Search models").fill("whisper")
    expect(page.locator("#model-list label")).to_have_count(6)
    page.locator("#model-list").get_by_text("Whisper large-v3-turbo", exact=True).click()
    expect(page.get_by_label("Concurrent audio streams")).to_be_visible()
    shoot(page, "speech")


def test_wizard_works_without_javascript(browser, live_server, shipped_catalog):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server.url + "/")
    page.get_by_label("Context per request (tokens)").fill("8192")
    page.get_by_role("button", name="Show machines").click()
    expect(page).to_have_url(re.compile(r"context=8192"))
    expect(page.get_by_test_id("total-gib")).to_be_visible()
    expect(page.locator("#result")).to_contain_text("Recommended machines")
    shoot(page, "no-javascript", javascript=False)
    context.close()


def test_phone_width_keeps_the_result_readable(browser, live_server, shipped_catalog):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(live_server.url + "/?workload=inference&model=llama-3-1-70b&precision=16&context=8192&requests=2")
    expect(page.get_by_test_id("total-gib")).to_be_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390 + 1, f"the page scrolls sideways on a phone ({width}px)"
    shoot(page, "phone")
    context.close()


def test_kv_cache_precision_changes_the_cache_and_the_address(page, live_server, shipped_catalog):
    page.goto(live_server.url + "/?workload=inference&model=qwen3-8b&precision=16&context=32768&requests=1")
    result = page.locator("#result")
    expect(result).to_contain_text("4.50 GiB")
    page.get_by_label("KV cache precision").select_option("8")
    expect(result).to_contain_text("2.25 GiB")
    expect(page).to_have_url(re.compile(r"kv_cache=8"))


def test_back_after_a_select_change_shows_the_answer_before_it(page, live_server, shipped_catalog):
    """Swaps keep no copy of the page (hx-history="false"): Back asks the server for the earlier
    address, and the person sees the answer they had."""
    page.goto(live_server.url + "/?workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=1")
    expect(page.get_by_test_id("total-gib")).to_have_text("19.55 GiB")
    page.get_by_label("Precision", exact=True).select_option("8")
    expect(page).to_have_url(re.compile(r"precision=8"))
    expect(page.get_by_test_id("total-gib")).not_to_have_text("19.55 GiB")
    assert page.evaluate("sessionStorage.getItem('htmx-history-cache')") is None

    page.go_back()
    expect(page).to_have_url(re.compile(r"precision=16"))
    expect(page.get_by_test_id("total-gib")).to_have_text("19.55 GiB")
    expect(page.get_by_label("Precision", exact=True)).to_have_value("16")
