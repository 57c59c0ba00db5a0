"""The API reference (Swagger UI at /api/v1/docs) passes axe, opened and tried out, and leads back
to the console."""
import pytest
from playwright.sync_api import expect

from tests.a11y import assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_api_docs_pass_axe_and_lead_back_to_the_console(page, live_server):
    page.goto(f"{live_server.url}/api/v1/docs")
    expect(page.get_by_text("/api/v1/recommendations", exact=True)).to_be_visible()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    assert_accessible(page, "the API docs")
    page.get_by_text("/api/v1/recommendations", exact=True).click()
    page.get_by_role("button", name="Try it out").click()
    page.get_by_role("button", name="Execute").click()
    expect(page.locator(".live-responses-table")).to_be_visible()
    expect(page.get_by_role("button", name="Copy to clipboard").first).to_be_attached()
    assert_accessible(page, "the API docs with an operation tried out")
    page.get_by_role("link", name="Back to the Node Lodge console").click()
    expect(page).to_have_url(f"{live_server.url}/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Launch by workload")
