"""The console at 390 px (a phone) and 1440 px (a desktop) in Debian's chromium: cards on the phone,
"Selected" following the choice, messages beside invalid fields, what to relax, keyboard focus, the
machine list's sort and pages; axe-core on every state."""
import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.a11y import assert_accessible
from tests.helpers import LLAMA_8B

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 1000}


def shoot(page, name, full_page=True):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"screens-{name}.png"), full_page=full_page)


def open_page(browser, viewport, url, javascript=True):
    context = browser.new_context(viewport=viewport, java_script_enabled=javascript)
    page = context.new_page()
    page.goto(url)
    return context, page


def test_on_a_phone_each_machine_is_a_card_with_launch_in_reach(browser, live_server, shipped_catalog):
    context, page = open_page(browser, PHONE, f"{live_server.url}/?{LLAMA_8B}&budget=100")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    # The total need stays in view while the form (at the top) is being changed.
    summary = page.get_by_test_id("need-summary")
    expect(summary).to_be_visible()
    expect(summary).to_contain_text("19.55 GiB")
    box = summary.bounding_box()
    assert box["y"] + box["height"] <= PHONE["height"] + 1
    shoot(page, "phone-top", full_page=False)
    card = page.locator("tbody.machine-row").first
    card.scroll_into_view_if_needed()
    card_box = card.bounding_box()
    assert card_box["x"] >= 0 and card_box["x"] + card_box["width"] <= PHONE["width"]
    for part in (".c-gpu", ".c-memory", ".c-price", ".c-launch button"):
        part_box = card.locator(part).bounding_box()
        assert part_box["x"] >= card_box["x"] - 1 and part_box["x"] + part_box["width"] <= card_box["x"] + card_box["width"] + 1, part
        assert part_box["y"] < card_box["y"] + 170, f"{part} is not at the top of the card"
    expect(card.get_by_role("button", name=re.compile("^Launch"))).to_be_in_viewport()
    shoot(page, "phone-cards", full_page=False)
    assert_accessible(page, "phone result")
    context.close()


def test_selected_follows_the_choice_in_the_list(browser, live_server, shipped_catalog):
    context, page = open_page(browser, DESKTOP, f"{live_server.url}/?{LLAMA_8B}")
    selected = page.get_by_test_id("selected-name")
    expect(selected).to_have_text("Llama 3.1 8B")
    page.locator("#model-list").get_by_text("Llama 3.1 70B", exact=True).click()
    expect(page.get_by_test_id("total-gib")).not_to_have_text("19.55 GiB")
    expect(selected).to_have_text("Llama 3.1 70B")
    page.get_by_label("Generate images").check()
    expect(page.get_by_test_id("selected-name")).to_have_text(re.compile("Stable Diffusion XL"))
    page.locator("label[for=model-flux-1-dev]").click()
    expect(page.get_by_test_id("selected-name")).to_have_text("FLUX.1 [dev]")
    shoot(page, "desktop-selected")
    assert_accessible(page, "desktop result after choosing a model")
    context.close()


@pytest.mark.parametrize(
    ("label", "typed", "field", "message"),
    [
        ("Context per request (tokens)", "-5", "context", "Context must be at least 1 token."),
        ("Context per request (tokens)", "20000000", "context", "Context can be at most 10,000,000 tokens."),
        ("Concurrent requests", "0", "requests", "Concurrent requests must be at least 1."),
        ("Concurrent requests", "2.5", "requests", "Concurrent requests must be a whole number"),
        ("Budget (USD)", "-50", "budget", "The budget must be more than $0"),
        ("Max price per hour (USD)", "0", "max_price", "The max price must be more than $0 per hour"),
        ("Countries", "UK", "countries", "UK is not an ISO code: did you mean GB?"),
    ],
)
def test_each_invalid_input_gets_its_message_beside_its_field(
    browser, live_server, shipped_catalog, label, typed, field, message
):
    context, page = open_page(browser, DESKTOP, f"{live_server.url}/?{LLAMA_8B}")
    expect(page.get_by_test_id("total-gib")).to_be_visible()
    page.get_by_label(label, exact=True).fill(typed)
    beside = page.locator(f"#err-{field}")
    expect(beside).to_contain_text(message)
    expect(page.get_by_label(label, exact=True)).to_have_attribute("aria-invalid", "true")
    # The server's answer replaces the stale result with what to fix.
    expect(page.get_by_test_id("input-errors")).to_contain_text(message)
    expect(page.get_by_test_id("total-gib")).to_have_count(0)
    assert_accessible(page, f"invalid {field}")
    # Fixing the field brings the result back and clears the message.
    page.get_by_label(label, exact=True).fill({"countries": "DE", "budget": "50", "max_price": "5"}.get(field, "2"))
    expect(page.get_by_test_id("total-gib")).to_be_visible()
    expect(beside).to_be_hidden()
    context.close()


def test_the_ch_example_says_what_to_relax(browser, live_server, shipped_catalog):
    url = (f"{live_server.url}/?workload=inference&model=llama-3-1-405b&precision=16&context=4096&requests=1"
           "&countries=CH&max_price=1")
    context, page = open_page(browser, DESKTOP, url)
    reason = page.get_by_test_id("empty-reason")
    expect(reason).to_contain_text("No machine in CH has enough memory")
    # each hint is a link that applies every change it names
    hint = reason.get_by_role("link", name=re.compile(r"^Outside CH at 4-bit, with the max price raised to \$[\d.]+\/h"))
    expect(hint).to_be_visible()
    shoot(page, "desktop-relax")
    assert_accessible(page, "empty result with what to relax")
    hint.click()
    expect(page.get_by_test_id("empty-reason")).to_have_count(0)
    expect(page).to_have_url(re.compile(r"precision=4.*max_price=[\d.]+.*countries=[A-Z]{2}"))
    context.close()


def test_switching_workloads_quickly_ends_on_the_last_choice(browser, live_server, shipped_catalog):
    """Each workload radio swaps the whole wizard; answers arriving out of order must not leave the
    form of an earlier choice under the last one chosen."""
    context, page = open_page(browser, DESKTOP, f"{live_server.url}/?{LLAMA_8B}")
    page.locator("#workload-inference").focus()
    for key in ("ArrowDown", "ArrowUp", "ArrowDown", "ArrowUp"):
        page.keyboard.press(key)
    expect(page.get_by_label("Context per request (tokens)")).to_be_visible(timeout=20_000)
    page.wait_for_load_state("networkidle")
    expect(page.get_by_label("Context per request (tokens)")).to_be_visible()
    expect(page.locator("#workload-inference")).to_be_checked()
    expect(page).to_have_url(re.compile(r"workload=inference"))
    context.close()


def test_keyboard_focus_skip_link_and_disclosure(browser, live_server, shipped_catalog):
    context, page = open_page(browser, DESKTOP, f"{live_server.url}/?{LLAMA_8B}")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to the content")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile("#main$"))
    # Arrowing between workloads swaps the wizard and keeps focus on the radio the user moved to.
    page.locator("#workload-inference").focus()
    page.keyboard.press("ArrowDown")
    # Each arrow swaps the whole wizard from the server: on a loaded machine that can take seconds.
    expect(page.get_by_label("Sequence length (tokens)")).to_be_visible(timeout=20_000)
    expect(page.locator("#workload-finetune")).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(page.get_by_label("Context per request (tokens)")).to_be_visible(timeout=20_000)
    expect(page.locator("#workload-inference")).to_be_focused()
    # From the model search to precision there is one stop per list entry at most: no links inside.
    expect(page.locator("#model-list a")).to_have_count(0)
    # The disclosure shows its marker and opens from the keyboard.
    summary = page.locator("details.machine > summary").first
    marker = summary.locator(".disclosure")
    assert page.evaluate("e => getComputedStyle(e, '::before').content", marker.element_handle()) == '"▸"'
    summary.focus()
    page.keyboard.press("Enter")
    expect(page.locator("details.machine").first).to_have_attribute("open", "")
    # Its details are loaded when opened: axe reads them as the person does.
    expect(page.locator("details.machine").first.locator(".machine-detail ul").first).to_be_visible()
    # The per-GPU bar says per GPU.
    expect(page.locator(".legend")).to_contain_text("GiB per GPU")
    expect(page.locator(".bar-title")).to_contain_text("Per GPU")
    assert_accessible(page, "desktop result, details open")
    context.close()


def test_sort_filter_group_and_pages_live_in_the_url(browser, live_server, shipped_catalog):
    context, page = open_page(browser, DESKTOP, f"{live_server.url}/?{LLAMA_8B}")
    note = page.get_by_test_id("sort-note")
    expect(note).to_contain_text("Cheapest first")
    page.get_by_label("Sort by").select_option("memory")
    expect(note).to_contain_text("Sorted by memory per GPU, most first")
    expect(page).to_have_url(re.compile(r"sort=memory"))
    page.get_by_label("Group by").select_option("gpu")
    expect(page.get_by_test_id("group-heading").first).to_be_visible()
    expect(page).to_have_url(re.compile(r"(?=.*sort=memory)(?=.*group=gpu)"))
    shoot(page, "desktop-sorted")
    assert_accessible(page, "sorted and grouped")
    page.get_by_label("Group by").select_option("")
    page.get_by_label("Sort by").select_option("price")
    # The list as a person sees it before paging on: cheapest first again, no groups.
    expect(note).to_contain_text("Cheapest first")
    expect(page.get_by_test_id("group-heading")).to_have_count(0)
    expect(page).not_to_have_url(re.compile(r"sort=memory|group=gpu"))
    pager = page.get_by_role("navigation", name="Pages of machines")
    expect(pager).to_be_visible()
    pager.get_by_role("link", name="2", exact=True).click()
    expect(page).to_have_url(re.compile(r"page=2"))
    expect(page.get_by_role("navigation", name="Pages of machines").locator("[aria-current=page]")).to_have_text("2")
    context.close()


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_other_pages_pass_axe(browser, live_server, shipped_catalog, viewport):
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    for path in ("/", "/calculators/?parameters=7B&precision=FP16", "/calculators/?parameters=7X",
                 "/secure-and-community/", "/no/such/page/", "/accounts/login/", "/accounts/signup/",
                 "/?workload=notebook&memory_gib=30", "/?workload=inference&model=whisper-small&precision=16&requests=2"):
        page.goto(live_server.url + path)
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"], path
        assert_accessible(page, f"{path} at {viewport['width']} px")
    context.close()


def test_readme_screenshots(browser, live_server, shipped_catalog):
    """The README's pictures of the result, rewritten by every run into test-artifacts/."""
    for name, viewport in (("phone", PHONE), ("desktop", {"width": 1440, "height": 1700})):
        context, page = open_page(browser, viewport, f"{live_server.url}/?{LLAMA_8B}&budget=100")
        expect(page.get_by_test_id("total-gib")).to_be_visible()
        if name == "phone":
            page.evaluate("document.getElementById('machines').scrollIntoView()")
        page.screenshot(path=str(ARTIFACTS / f"readme-{name}-result.png"), full_page=False)
        assert (ARTIFACTS / f"readme-{name}-result.png").stat().st_size > 10_000
        context.close()
