"""Watches in Debian's chromium: an empty answer → "Watch this result" → a provider refresh brings a
machine → the e-mail's link opens the result with it; the Watches list in My launches on a phone.
Screenshots land in test-artifacts/."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core import mail
from playwright.sync_api import expect

from nodelodge.refresh import services as refresh
from nodelodge.watches import evaluation, services, tasks
from nodelodge.watches.models import Watch
from tests.a11y import assert_accessible
from tests.factories import make_user
from tests.feeds import feed, record
from tests.helpers import LLAMA_8B as QUERY

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
PHONE = {"width": 390, "height": 844}


def shoot(page, name):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"watch-{name}.png"), full_page=True)
    assert_accessible(page, f"watch, {name}")


def sign_in(page, base):
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("a-long-test-passphrase")
    page.get_by_role("button", name="Sign in").click()


def test_an_empty_answer_watched_fires_when_a_refresh_brings_a_machine(
    browser, live_server, catalog, feed_server, monkeypatch, settings
):
    settings.CONSOLE_BASE_URL = live_server.url
    # Delivery in this process, as the worker would run it.
    monkeypatch.setattr(evaluation, "_queue_delivery", lambda firing_id: tasks.deliver_firing(firing_id))
    make_user("ada")
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    sign_in(page, live_server.url)

    page.goto(f"{live_server.url}/?{QUERY}")
    expect(page.get_by_test_id("empty-reason")).to_be_visible()
    form = page.get_by_test_id("watch-form")
    expect(form).to_contain_text("tell me when a machine appears")
    shoot(page, "1-empty-answer")
    form.get_by_role("button", name="Watch this result").click()

    expect(page).to_have_url(re.compile(r"/launches/$"))
    watches = page.get_by_role("table", name="Watches")
    expect(watches).to_contain_text("a machine appears")
    expect(watches).to_contain_text("never")
    watch = Watch.objects.get()

    catalog.provider.feed_url = feed_server.serve_json("p", feed(catalog.provider.slug, [
        record("fra-42", gpu_count=1, free_gpus=1, price_per_gpu_hour="2.49"),
    ]))
    catalog.provider.save()
    assert refresh.refresh_provider(catalog.provider.pk).status == "ok"
    evaluation.evaluate_watches()

    [message] = mail.outbox
    link = re.search(r"^(http://\S+/\?\S+)$", message.body, re.MULTILINE).group(1)
    assert link.startswith(live_server.url)
    page.goto(link)
    expect(page.locator("table.machines tbody.machine-row").first).to_contain_text("fra-42")
    shoot(page, "2-result-from-the-email")
    page.goto(f"{live_server.url}/launches/")
    expect(page.get_by_role("table", name="Watches")).not_to_contain_text("never")
    assert Watch.objects.get(pk=watch.pk).last_fired_at is not None


def test_the_watches_list_on_a_phone(browser, live_server, catalog):
    owner = make_user("ada")
    for condition, fields in (("appears", {}), ("cheapest_below", {"price_per_hour": "4.5"})):
        services.create_watch(owner, services.WatchRequest(
            query=dict(pair.split("=") for pair in QUERY.split("&")), condition=condition, **fields,
        ))
    page = browser.new_context(viewport=PHONE).new_page()
    sign_in(page, live_server.url)

    page.goto(f"{live_server.url}/launches/")

    cards = page.locator("table.watches tr.watch")
    expect(cards).to_have_count(2)
    for index in range(2):
        box = cards.nth(index).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        for name in ("Pause", "Delete"):
            button = cards.nth(index).get_by_role("button", name=name).bounding_box()
            assert button["x"] >= 0 and button["x"] + button["width"] <= PHONE["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    expect(cards.first).to_contain_text("cheapest below $4.50/h")
    shoot(page, "3-watches-on-a-phone")
    cards.first.get_by_role("button", name="Pause").click()
    expect(page.locator("table.watches tr.watch").first).to_contain_text("paused")
    expect(page.locator("table.watches tr.watch").first.get_by_role("button", name="Resume")).to_be_visible()
