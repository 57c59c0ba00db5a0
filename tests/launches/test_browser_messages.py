"""A flash message belongs to the page load that follows what it reports: the next change on the
wizard (a swap that also changes the address) no longer shows it."""
import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from catalog.services import load_catalog
from nodelodge.accounts import signup
from tests.helpers import LLAMA_8B as QUERY

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_welcome_message_goes_with_the_next_change_on_the_wizard(page, live_server):
    load_catalog()
    pending = get_user_model().objects.create_user(
        username="newcomer", email="newcomer@example.com", password="a-long-test-passphrase", is_active=False
    )
    page.goto(live_server.url + signup.activation_path(pending, "/?" + QUERY))
    page.get_by_role("button", name="Activate and sign in").click()
    welcome = page.locator("main > .messages")
    expect(welcome).to_contain_text("Welcome, newcomer. Your account is ready.")
    page.get_by_label("Precision", exact=True).select_option("8")
    expect(page).to_have_url(re.compile(r"precision=8"))
    expect(page.get_by_test_id("total-gib")).to_be_visible()
    expect(welcome).to_have_count(0)
    page.go_back()
    expect(page).to_have_url(re.compile(r"precision=16"))
    expect(page.get_by_test_id("total-gib")).to_be_visible()
    expect(page.locator("main > .messages")).to_have_count(0)
