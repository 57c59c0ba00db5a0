"""What a person needs on every screen size the console names (1,024, 1,440 and 1,920 px desktops, a
390 px phone), in English and in German, in Debian's chromium: the first machine's name and its
Launch on screen without scrolling sideways (also after tabbing onto Launch), no table wider than
its panel, the throughput plan readable on a phone, and the breakdown's numbers never broken."""
import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.a11y import assert_accessible
from tests.helpers import LLAMA_8B

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
# Every column the machine list can have: a budget ("Budget reicht für"), a throughput target (the
# price per million tokens) and confidence, on the German page the longest labels it writes.
EVERY_COLUMN = f"{LLAMA_8B}&budget=100&target_tokens=20000"
WIDTHS = [1024, 1440, 1920, 390]
LANGUAGES = {"en": ("/", "en-US", "Launch"), "de": ("/de/", "de-DE", "Starten")}

# Each scrolling box of the page, with how much wider its content is than the box.
OVERFLOWS = """() => [document.documentElement, ...document.querySelectorAll('.table-scroll')]
  .filter(box => box.scrollWidth > box.clientWidth)
  .map(box => `${box === document.documentElement ? 'the page' : box.querySelector('table').getAttribute('aria-label')}:`
              + ` ${box.scrollWidth} px in ${box.clientWidth} px`)"""


def open_page(browser, width, language, url):
    prefix, locale, _ = LANGUAGES[language]
    context = browser.new_context(viewport={"width": width, "height": 900}, locale=locale)
    page = context.new_page()
    page.goto(url.format(prefix=prefix))
    expect(page.get_by_test_id("total-gib")).to_be_visible()
    return context, page


def shoot(page, name):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"layout-{name}.png"))


def assert_inside_viewport(page, locator, what):
    box = locator.bounding_box()
    width = page.viewport_size["width"]
    assert box is not None, f"{what} is not shown"
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, (
        f"{what} spans {box['x']:.0f}–{box['x'] + box['width']:.0f} px of a {width} px screen"
    )


def assert_first_machine_in_reach(page, language, shot):
    """The first machine's name and Launch on screen, no box wider than its content allows, and
    tabbing onto Launch scrolls nothing sideways."""
    row = page.locator("table.machines tbody.machine-row").first
    row.scroll_into_view_if_needed()
    shoot(page, shot)
    assert page.evaluate(OVERFLOWS) == []
    name = row.locator(".c-machine strong").first
    launch = row.locator(".c-launch button")
    expect(launch).to_have_text(LANGUAGES[language][2])
    assert_inside_viewport(page, name, "the machine's name")
    assert_inside_viewport(page, launch, "Launch")
    # Tabbing back onto Launch from the row's "why it fits" scrolls nothing sideways.
    row.locator("summary").focus()
    page.keyboard.press("Shift+Tab")
    expect(launch).to_be_focused()
    assert page.evaluate("[...document.querySelectorAll('.table-scroll')].map(box => box.scrollLeft)") == [0] * len(
        page.locator(".table-scroll").all()
    )
    assert page.evaluate("document.documentElement.scrollLeft") == 0
    assert_inside_viewport(page, name, "the machine's name after tabbing onto Launch")
    assert_inside_viewport(page, launch, "Launch after tabbing onto it")


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("width", WIDTHS)
def test_the_first_machine_and_its_launch_are_on_screen_without_scrolling_sideways(
    browser, live_server, shipped_catalog, width, language
):
    context, page = open_page(browser, width, language, live_server.url + "{prefix}?" + EVERY_COLUMN)
    expect(page.locator("table.machines tbody.machine-row").first.get_by_test_id("per-million")).to_be_visible()
    assert_first_machine_in_reach(page, language, f"{language}-{width}")
    context.close()


def test_a_many_gpu_answer_in_german_fits_the_narrowest_desktop(browser, live_server, shipped_catalog):
    """70B over several GPUs: the longest GPU names ("8 × H100 PCIe 80GB") and country names
    ("Vereinigtes Königreich") at 1,024 px, with a budget and the price per million tokens."""
    query = ("workload=inference&model=llama-3-1-70b&precision=16&context=32768&requests=8&budget=100"
             "&countries=GB,US,BR")
    context, page = open_page(browser, 1024, "de", live_server.url + "{prefix}?" + query)
    expect(page.locator("table.machines")).to_contain_text("Vereinigtes Königreich")
    assert_first_machine_in_reach(page, "de", "de-1024-many-gpus")
    context.close()


@pytest.mark.parametrize("language", LANGUAGES)
def test_on_a_phone_the_throughput_plan_shows_every_column_and_passes_axe(browser, live_server, shipped_catalog, language):
    context, page = open_page(browser, 390, language, live_server.url + "{prefix}?" + EVERY_COLUMN)
    plan = page.get_by_test_id("plan-1")
    plan.scroll_into_view_if_needed()
    shoot(page, f"{language}-plan-phone")
    plan.screenshot(path=str(ARTIFACTS / f"layout-{language}-plan-phone-whole.png"))
    assert page.evaluate(OVERFLOWS) == []
    first = plan.locator("tbody tr").first
    cells = first.locator("td")
    assert cells.count() == 5
    for index in range(5):
        assert_inside_viewport(page, cells.nth(index), f"the plan's column {index + 1}")
    # Each cell says what it is (its label written above it), since the phone shows no column headings.
    expect(cells.nth(3)).to_have_attribute("data-label", "Gemessen mit" if language == "de" else "Measured with")
    expect(cells.nth(4)).to_have_attribute("data-label", "Preis / h" if language == "de" else "Price / h")
    assert_accessible(page, f"{language}, throughput plan on a phone")
    context.close()


# The words and numbers of each cell that a line break cuts: a compound word may break after its
# hyphen ("Head-" / "Dimension"), nothing else inside a word or a number.
BROKEN = """table => [...table.querySelectorAll('td')].flatMap(cell => {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  const broken = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.data.matchAll(/(?:[^\\s-]|-(?!\\p{L}))+-?/gu)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (lines.size > 1) broken.push(match[0]);
    }
  }
  return broken;
})"""


@pytest.mark.parametrize("language", LANGUAGES)
def test_on_a_phone_the_breakdown_breaks_no_number_and_no_word(browser, live_server, shipped_catalog, language):
    context, page = open_page(browser, 390, language, live_server.url + "{prefix}?" + EVERY_COLUMN)
    table = page.get_by_role("table", name=re.compile("^(Memory breakdown|Aufschlüsselung des Speichers)$"))
    table.scroll_into_view_if_needed()
    table.screenshot(path=str(ARTIFACTS / f"layout-{language}-breakdown-phone.png"))
    assert table.evaluate("t => t.closest('.table-scroll').scrollWidth <= t.closest('.table-scroll').clientWidth")
    assert table.evaluate(BROKEN) == []
    context.close()
