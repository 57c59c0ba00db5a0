"""The Clusters section on every screen size the console names (1,024, 1,440 and 1,920 px desktops, a
390 px phone), in English and German, in Debian's chromium: the first cluster's shape, its need per GPU
and its Launch cluster button on screen without scrolling sideways, its details open onto the per-GPU
items and both commands with their copy buttons (loaded when opened); without JavaScript, the details'
link opens the cluster's own page with its commands and Launch button; axe-core over it."""
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.a11y import assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
WIDTHS = [1024, 1440, 1920, 390]
# The need per GPU at the current stable release: 51.08 GiB by hand (tests/sizing/test_cluster_plan.py)
# and its CUDA graphs' estimate of 1 GiB inside the budget.
LANGUAGES = {"en": ("/", "en-US", "52.08 of 72.85 GiB"), "de": ("/de/", "de-DE", "52,08 von 72,85 GiB")}
LLAMA_405B_8K = "workload=inference&model=llama-3-1-405b&precision=16&context=8192&requests=1"
OVERFLOWS = """() => [document.documentElement, ...document.querySelectorAll('.table-scroll')]
  .filter(box => box.scrollWidth > box.clientWidth)
  .map(box => `${box === document.documentElement ? 'the page' : box.querySelector('table').getAttribute('aria-label')}:`
              + ` ${box.scrollWidth} px in ${box.clientWidth} px`)"""


def assert_inside_viewport(page, locator, what):
    box = locator.bounding_box()
    width = page.viewport_size["width"]
    assert box is not None, f"{what} is not shown"
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, (
        f"{what} spans {box['x']:.0f}–{box['x'] + box['width']:.0f} px of a {width} px screen")


@pytest.mark.parametrize("language", ["en", "de"])
@pytest.mark.parametrize("width", WIDTHS)
def test_the_first_cluster_and_its_launch_button_are_on_screen(browser, live_server, h100_site, width, language):
    prefix, locale, need = LANGUAGES[language]
    context = browser.new_context(viewport={"width": width, "height": 900}, locale=locale)
    page = context.new_page()
    page.goto(f"{live_server.url}{prefix}?{LLAMA_405B_8K}")
    section = page.get_by_test_id("clusters")
    row = section.get_by_test_id("cluster-row").first
    row.scroll_into_view_if_needed()
    launch = row.get_by_test_id("cluster-launch").get_by_role("button")
    expect(launch).to_be_in_viewport()
    expect(row.locator(".c-gpu")).to_contain_text("2 × (8 × H100 SXM 80GB)")
    expect(row.locator(".c-memory")).to_contain_text(need)
    assert page.evaluate(OVERFLOWS) == []
    assert_inside_viewport(page, launch, "Launch cluster")
    assert_inside_viewport(page, row.locator(".c-machine strong").first, "the cluster's provider")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"clusters-{language}-{width}.png"))
    row.locator("summary").click()
    expect(row.get_by_test_id("cluster-vllm")).to_be_visible()
    expect(row.get_by_test_id("cluster-vllm")).to_contain_text("--pipeline-parallel-size 2")
    expect(row.get_by_test_id("cluster-sglang")).to_contain_text("--nnodes 2 --node-rank 1")
    copy = row.locator("button.copy-command").first
    copy.scroll_into_view_if_needed()
    assert_inside_viewport(page, copy, "the copy button")
    assert page.evaluate(OVERFLOWS) == []
    row.screenshot(path=str(ARTIFACTS / f"clusters-{language}-{width}-open.png"))
    if width in (390, 1440):
        assert_accessible(page, f"clusters at {width} px ({language})")
    context.close()


@pytest.mark.parametrize("width", [1440, 390])
def test_without_javascript_a_clusters_link_opens_its_page_with_commands_and_launch(browser, live_server,
                                                                                     h100_site, width):
    context = browser.new_context(viewport={"width": width, "height": 900}, java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live_server.url}/?{LLAMA_405B_8K}")
    row = page.get_by_test_id("clusters").get_by_test_id("cluster-row").first
    row.locator("summary").click()
    link = row.get_by_test_id("cluster-detail-link")
    expect(link).to_be_visible()
    link.click()
    expect(page.get_by_test_id("cluster-page")).to_be_visible()
    expect(page.get_by_role("heading", level=1)).to_contain_text("2 × (8 × H100 SXM 80GB)")
    expect(page.get_by_test_id("cluster-vllm")).to_contain_text("--pipeline-parallel-size 2")
    expect(page.get_by_test_id("cluster-sglang")).to_contain_text("--nnodes 2 --node-rank 1")
    launch = page.get_by_test_id("cluster-launch").get_by_role("button")
    expect(launch).to_be_in_viewport()
    assert_inside_viewport(page, launch, "Launch cluster")
    assert page.evaluate(OVERFLOWS) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"cluster-page-{width}.png"), full_page=True)
    context.close()
