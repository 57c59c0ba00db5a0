"""The pages keep to the Content-Security-Policy in a real browser: the wizard, an HTMX swap of its
result and the API docs run with zero violations reported."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from catalog.services import load_catalog
from tests.helpers import LLAMA_8B

from .helpers import add_fleet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


# Runs before any page script (injected by the browser itself, so the policy does not apply to it).
RECORD_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.cspViolations.push(`${event.violatedDirective} blocked ${event.blockedURI || "inline"}`);
});
"""


@pytest.fixture
def watched_page(page):
    console_violations = []
    page.on(
        "console",
        lambda message: console_violations.append(message.text)
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text
        else None,
    )
    page.add_init_script(RECORD_VIOLATIONS)

    def violations():
        return console_violations + page.evaluate("window.cspViolations")

    page.violations = violations
    return page


@pytest.fixture
def fleet(transactional_db):
    load_catalog(fleet=False)
    return add_fleet()


def test_the_wizard_and_its_htmx_swap_keep_to_the_policy(watched_page, live_server, fleet):
    page = watched_page
    page.goto(f"{live_server.url}/?{LLAMA_8B}")
    total = page.get_by_test_id("total-gib")
    expect(total).to_be_visible()
    before = total.inner_text()

    with page.expect_response(lambda response: "context=131072" in response.url) as swapped:
        page.get_by_label("Context per request (tokens)").fill("131072")
    assert swapped.value.status == 200
    assert swapped.value.request.headers.get("hx-request") == "true"
    expect(page.get_by_test_id("total-gib")).not_to_have_text(before)
    expect(page).to_have_url(re.compile(r"context=131072"))

    assert page.violations() == []


def test_the_api_docs_keep_to_their_policy(watched_page, live_server):
    page = watched_page
    response = page.goto(f"{live_server.url}/api/v1/docs")
    assert "img-src 'self' data:" in response.headers["content-security-policy"]
    operation = page.get_by_text("/api/v1/recommendations", exact=True)
    expect(operation).to_be_visible()
    operation.click()  # opens the operation: parameters, "Try it out", response models and their icons
    expect(page.get_by_role("button", name="Try it out")).to_be_visible()
    page.get_by_role("button", name="Try it out").click()
    expect(page.get_by_role("button", name="Execute")).to_be_visible()
    assert page.violations() == []
