"""The throughput plan's two links, "list every one" (`plan_rows=all`) and "the cheapest plan on each
GPU type" (`gpu_plans=1`): following either keeps what the other one set."""
from __future__ import annotations

import html
import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from catalog.services import load_catalog
from tests.factories import make_measured_speed
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

# Fourteen one-GPU machines make a plan longer than the page lists at first; an L40S makes a second
# GPU type to plan on.
QUERY = f"{LLAMA_8B}&target_tokens=21500&efficiency=100&redundancy=1"


@pytest.fixture
def long_plan_fleet(make_machine):
    for index in range(14):
        machine = make_machine("RTX 4090", gpu_count=1, free_gpus=1,
                               price_per_gpu_hour=Decimal("0.30") + Decimal(index) / 100)
        make_measured_speed(machine, "2000")
    make_measured_speed(make_machine("L40S", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("1.90")), "9000")


def link(page: str, testid: str) -> str:
    match = re.search(rf'<a href="([^"]*)" data-testid="{testid}"', page)
    assert match, f"no {testid} on the page"
    return html.unescape(match.group(1))


def test_each_gpu_type_keeps_every_machine_listed(client, long_plan_fleet):
    every = client.get(f"/?{QUERY}&plan_rows=all").content.decode()
    assert 'data-testid="plan-rows-link"' not in every
    href = link(every, "gpu-plans-link")
    assert "plan_rows=all" in href and "gpu_plans=1" in href
    followed = client.get("/" + href.split("#")[0]).content.decode()
    assert 'data-testid="plan-2"' in followed
    assert 'data-testid="plan-rows-link"' not in followed  # still every machine of each plan


def test_listing_every_machine_keeps_the_plans_on_each_gpu_type(client, long_plan_fleet):
    with_types = client.get(f"/?{QUERY}&gpu_plans=1").content.decode()
    assert 'data-testid="plan-2"' in with_types
    href = link(with_types, "plan-rows-link")
    assert "plan_rows=all" in href and "gpu_plans=1" in href
    followed = client.get("/" + href.split("#")[0]).content.decode()
    assert 'data-testid="plan-2"' in followed and 'data-testid="plan-rows-link"' not in followed


def test_every_machine_listed_stays_so_when_the_form_asks_again(client, long_plan_fleet):
    """The form (a sort, a filter, a changed field) asks with the page's `plan_rows=all` too."""
    every = client.get(f"/?{QUERY}&plan_rows=all").content.decode()
    assert '<input type="hidden" name="plan_rows" value="all" form="wizard-form">' in every
    first = client.get(f"/?{QUERY}").content.decode()
    assert 'name="plan_rows"' not in first


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_sorting_the_list_keeps_every_plan_machine_listed_in_the_browser(page, live_server):
    load_catalog()
    page.goto(f"{live_server.url}/?{LLAMA_8B}&target_tokens=60000&plan_rows=all")
    expect(page.get_by_test_id("plan-1").get_by_test_id("plan-rows-link")).to_have_count(0)
    page.get_by_label("Sort by").select_option("price_per_million_tokens")
    expect(page).to_have_url(re.compile(r"(?=.*sort=price_per_million_tokens)(?=.*plan_rows=all)"))
    expect(page.get_by_test_id("sort-note")).to_contain_text("price per million tokens")
    expect(page.get_by_test_id("plan-1").get_by_test_id("plan-rows-link")).to_have_count(0)
