"""A newcomer's first look, as `bin/run` sets it up: the shipped catalog loaded with its demo fleet, the
console serving the demo feeds, one round of `refresh_providers` against them (whatever the minute), then
Llama 3.1 405B at 131,072 tokens × 8 requests in Debian's chromium finds a cluster on screen."""
from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from catalog.models import Provider
from nodelodge.refresh.models import SyncRun

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LLAMA_405B_128K = "workload=inference&model=llama-3-1-405b&precision=16&context=131072&requests=8"


def test_a_fresh_demo_finds_a_cluster_for_llama_405b_at_128k_after_its_first_refresh(browser, live_server,
                                                                                      settings):
    settings.DEMO_FEEDS_ENABLED = True
    settings.DEMO_FEED_BASE_URL = live_server.url
    call_command("load_catalog", stdout=StringIO())
    assert Provider.objects.filter(feed_url__startswith=f"{live_server.url}/feeds/demo/").count() == 7
    call_command("refresh_providers", stdout=StringIO())
    assert set(SyncRun.objects.values_list("status", flat=True)) == {"ok"}

    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/?{LLAMA_405B_128K}")
    rows = page.get_by_test_id("clusters").get_by_test_id("cluster-row")
    expect(rows.first).to_be_visible()
    assert rows.count() >= 2
    first = rows.first
    first.scroll_into_view_if_needed()
    expect(first).to_be_in_viewport()
    expect(first.locator(".c-gpu")).to_contain_text("× (8 ×")
    expect(first.get_by_test_id("cluster-launch").get_by_role("button")).to_be_visible()
    expect(page.get_by_text("No site has identical machines free")).to_have_count(0)
    page.close()
