"""The throughput plan in Debian's chromium: a target typed into "Run a model" becomes the cheapest
plan of the demo fleet, with its formula, and the machines can be sorted by price per million tokens."""
import re

import pytest
from playwright.sync_api import expect

from catalog.services import load_catalog
from tests.helpers import LLAMA_8B

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_target_becomes_a_plan_and_the_list_sorts_by_price_per_million(page, live_server, transactional_db):
    load_catalog()
    page.goto(live_server.url + "/?" + LLAMA_8B)
    page.get_by_text("Serve a target throughput").click()
    page.get_by_label("Tokens per second to serve").fill("20000")
    page.get_by_role("button", name="Show machines").click()
    plan = page.get_by_test_id("throughput-plan")
    expect(plan).to_contain_text("Throughput plan: 20,000 tokens/s")
    expect(page.get_by_test_id("plan-1")).to_contain_text("Cheapest plan:")
    expect(page.get_by_test_id("plan-1")).to_contain_text("Total GPUs =")
    expect(plan).to_contain_text("no measured speed for this model and precision")
    expect(page).to_have_url(re.compile(r"target_tokens=20000"))
    page.wait_for_load_state("networkidle")  # typing and the button both asked; let both answers land
    page.get_by_label("Sort by").select_option("price_per_million_tokens")
    expect(page).to_have_url(re.compile(r"sort=price_per_million_tokens"))
    expect(page.get_by_test_id("sort-note")).to_contain_text("price per million tokens")
    first = page.locator("table.machines tbody.machine-row").first.get_by_test_id("per-million")
    expect(first).to_have_text(re.compile(r"^\$0\.\d+$"))


def test_a_long_plan_shows_its_first_machines_and_lists_every_one_on_request(page, live_server, transactional_db):
    load_catalog()
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(live_server.url + "/?" + LLAMA_8B +
              "&target_tokens=60000")
    plan = page.get_by_test_id("plan-1")
    expect(plan).to_contain_text("Total GPUs =")
    rows = plan.locator("tbody tr")
    expect(rows).to_have_count(10)
    more = plan.get_by_test_id("plan-rows-link")
    expect(more).to_be_visible()
    expect(more).to_contain_text(re.compile(r"… and \d+ more machines in this plan: list every one"))
    hidden = int(re.search(r"and (\d+) more", more.inner_text()).group(1))
    expect(plan.locator("ul.formula li.muted")).to_contain_text("… the same for")
    plan.screenshot(path="test-artifacts/plan-first-machines.png")
    more.click()
    expect(page).to_have_url(re.compile(r"plan_rows=all"))
    plan = page.get_by_test_id("plan-1")
    expect(plan.locator("tbody tr")).to_have_count(10 + hidden)
    expect(plan.get_by_test_id("plan-rows-link")).to_have_count(0)
    expect(plan.locator("ul.formula li").last).to_contain_text("Total GPUs =")
    expect(page.get_by_test_id("throughput-plan").locator("h2")).to_be_in_viewport()  # the link's #throughput
    plan.screenshot(path="test-artifacts/plan-every-machine.png")
