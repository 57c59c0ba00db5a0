"""Every address the console serves answers, on whichever database the run is on (bin/test runs the
suite on PostgreSQL and on SQLite, the embedded default): every page in both languages, every API
operation, every account step, Launch, My launches and Stop, and every admin list and form.

The tables below name every route of the URL configuration and every operation of the API's schema;
a new view or operation without a line here fails `test_every_route_and_api_operation_is_listed`."""
from __future__ import annotations

import re
import uuid
from decimal import Decimal

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core import mail
from django.urls import URLResolver, get_resolver
from django.urls import reverse as reverse_in_current_language
from django.utils import translation
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from nodelodge.launches.booking import launch
from nodelodge.launches.models import Booking
from nodelodge.wizard.api import api
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-test-passphrase"

# Pages that have an English and a German address, with the query that makes them show a result.
PAGES = {
    "wizard:start": f"?{LLAMA_8B}",
    "wizard:tiers": "",
    "wizard:calculators": "",
    "login": "",
    "signup": "",
    "password_reset": "",
    "password_reset_done": "",
    "password_reset_complete": "",
}
# Routes answered by their own steps below (with a signed-in user, a booking, a token or a POST).
STEPS = {
    "logout", "password_change", "password_change_done", "password_reset_confirm", "signup_confirm",
    "launches:launch", "launches:review", "launches:list", "launches:stop", "switch_language",
    "launches:group_review", "launches:group_launch", "launches:group_stop",
    "refresh:demo_feed", "wizard:cluster", "wizard:machine", "wizard:gpu_history",
    "watches:create", "watches:act", "watches:unsubscribe", "watches:feed", "watches:token_create",
    "watches:token_revoke",
}
API_ROUTES = {"api:openapi-json", "api:openapi-view", "api:estimate", "api:recommendations", "api:models",
              "api:capacity", "api:api-root", "api:watches", "api:watches_create", "api:watch",
              "api:launches", "api:launches_group", "api:gpu_history"}
API_OPERATIONS = {
    ("get", "/api/v1/estimate"): f"/api/v1/estimate?{LLAMA_8B}",
    ("get", "/api/v1/recommendations"): f"/api/v1/recommendations?{LLAMA_8B}",
    ("get", "/api/v1/models"): "/api/v1/models?workload=inference",
    ("get", "/api/v1/capacity"): "/api/v1/capacity?model=llama-3-1-8b&gpu_memory_gib=79.19&max_model_len=8192",
    ("get", "/api/v1/gpu-types/{slug}/history"): "/api/v1/gpu-types/h100-sxm-80gb/history",
}


def reverse(name: str, args=None) -> str:
    """The English address (a request to a /de/ page leaves German active in the test's thread)."""
    with translation.override("en"):
        return reverse_in_current_language(name, args=args)


def route_names(patterns=None, namespace: str | None = None):
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin":
                continue  # the admin's own routes: every registered model's list and form, below
            inner = ":".join(part for part in (namespace, pattern.namespace) if part) or None
            yield from route_names(pattern.url_patterns, inner)
        elif pattern.name:
            yield f"{namespace}:{pattern.name}" if namespace else pattern.name


def test_every_route_and_api_operation_is_listed():
    assert set(route_names()) == set(PAGES) | STEPS | API_ROUTES
    operations = {
        (method, path) for path, methods in api.get_openapi_schema()["paths"].items() for method in methods
    }
    assert operations == set(API_OPERATIONS) | WATCH_OPERATIONS | {
        ("post", "/api/v1/launches"), ("post", "/api/v1/launches/group")
    }


# The signed-in user's watches: asked with a session below.
WATCH_OPERATIONS = {("get", "/api/v1/watches"), ("post", "/api/v1/watches"), ("delete", "/api/v1/watches/{watch_id}")}


@pytest.fixture
def ada(db):
    return get_user_model().objects.create_user("ada", "ada@example.com", PASSWORD)


@pytest.mark.parametrize("prefix", ["", "/de"])
def test_every_page_answers_in_both_languages(client, catalog_fleet, prefix):
    for name, query in PAGES.items():
        response = client.get(f"{prefix}{reverse(name)}{query}")
        assert response.status_code == 200, name
        assert response["Content-Language"] == (prefix.strip("/") or "en"), name
        assert b"<main" in response.content, name


def test_the_history_page_answers_in_both_languages(client, catalog_fleet):
    """Its route takes a GPU type (wizard:gpu_history); tests/wizard/test_gpu_history.py has the rest."""
    for prefix in ("", "/de"):
        response = client.get(f"{prefix}{reverse('wizard:gpu_history', args=['h100-sxm-80gb'])}")
        assert response.status_code == 200 and b"<main" in response.content
        assert response["Content-Language"] == (prefix.strip("/") or "en")


def test_every_api_operation_answers_json(client, catalog_fleet):
    for path in API_OPERATIONS.values():
        response = client.get(path)
        assert response.status_code == 200, path
        assert response["Content-Type"].startswith("application/json"), path
    assert client.get(API_OPERATIONS["get", "/api/v1/recommendations"]).json()["machines"]
    assert client.get(reverse("api:openapi-json")).json()["paths"]
    assert client.get(reverse("api:openapi-view")).status_code == 200
    root = client.get(reverse("api:api-root"))
    assert root.status_code == 404 and root["Content-Type"].startswith("application/json")


def linked_page(client, prefix: str, query: str, test_id: str):
    """The page the answer's first link marked `test_id` opens, in the answer's language (checked)."""
    page = client.get(f"{prefix}{reverse('wizard:start')}?{query}").content.decode()
    link = re.search(rf'<a href="([^"]+)" data-testid="{test_id}"', page).group(1).replace("&amp;", "&")
    response = client.get(link)
    assert response.status_code == 200
    assert response["Content-Language"] == (prefix.strip("/") or "en")
    return response


@pytest.mark.parametrize("prefix", ["", "/de"])
def test_a_clusters_page_answers_in_both_languages(client, h100_site, prefix):
    query = "workload=inference&model=llama-3-1-405b&precision=16&context=8192&requests=1&clusters=show"
    response = linked_page(client, prefix, query, "cluster-detail-link")
    assert b"<main" in response.content and b'data-testid="cluster-vllm"' in response.content


@pytest.mark.parametrize("prefix", ["", "/de"])
def test_a_machines_page_answers_in_both_languages(client, small_fleet, prefix):
    response = linked_page(client, prefix, LLAMA_8B, "machine-detail-link")
    assert b"<main" in response.content and b'<details class="machine" open>' in response.content


def test_the_demo_feed_and_the_language_switch_answer(client, catalog_fleet):
    feed = client.get(reverse("refresh:demo_feed", args=["harbor"]))
    assert feed.status_code == 200 and feed.json()
    switched = client.get(reverse("switch_language", args=["de"]), {"next": "/calculators/"})
    assert switched.status_code == 302 and switched["Location"] == "/de/calculators/"


def test_sign_up_activate_change_and_reset_the_password_and_sign_out(client, catalog_fleet):
    sent = client.post(reverse("signup"), {
        "username": "grace", "email": "grace@example.com", "password1": PASSWORD, "password2": PASSWORD,
    })
    assert sent.status_code == 200 and len(mail.outbox) == 1
    link = re.search(r"https?://[^/\s]+(/\S*/signup/confirm/\S+)", mail.outbox[0].body).group(1)
    assert client.get(link).status_code == 200
    assert client.post(link).status_code == 302
    user = get_user_model().objects.get(username="grace")
    assert user.is_active

    assert client.get(reverse("password_change")).status_code == 200
    changed = client.post(reverse("password_change"), {
        "old_password": PASSWORD, "new_password1": "another-long-passphrase", "new_password2": "another-long-passphrase",
    }, follow=True)
    assert changed.redirect_chain[-1][0] == reverse("password_change_done") and changed.status_code == 200

    user.refresh_from_db()  # the token is made from the password now set
    uid, token = urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)
    confirm = client.get(reverse("password_reset_confirm", args=[uid, token]), follow=True)
    assert confirm.status_code == 200 and b'name="new_password1"' in confirm.content

    signed_out = client.post(reverse("logout"))
    assert signed_out.status_code == 302
    assert client.get(reverse("password_change")).status_code == 302  # to the sign-in page now


def test_review_launch_my_launches_and_stop_answer(client, catalog_fleet, ada):
    client.force_login(ada)
    machine = catalog_fleet["h100x8"]
    terms = {"machine": machine.pk, "gpus": 1, "price_per_hour": "2.50", "query": LLAMA_8B}
    assert client.get(reverse("launches:review"), terms).status_code == 200
    launched = client.post(reverse("launches:launch"), {**terms, "idempotency_key": uuid.uuid4().hex})
    assert launched.status_code == 303 and launched["Location"] == reverse("launches:list")
    booking = Booking.objects.get(user=ada)
    for prefix in ("", "/de"):
        listing = client.get(prefix + reverse("launches:list"))
        assert listing.status_code == 200
        assert reverse("launches:stop", args=[booking.pk]) in listing.content.decode()
        assert client.get(prefix + reverse("launches:stop", args=[booking.pk])).status_code == 200
    stopped = client.post(reverse("launches:stop", args=[booking.pk]))
    assert stopped.status_code == 303
    booking.refresh_from_db()
    assert not booking.is_running
    api_terms = {**terms, "machine": machine.pk, "query": {"model": "llama-3-1-8b"},
                 "idempotency_key": uuid.uuid4().hex}
    made = client.post("/api/v1/launches", api_terms, content_type="application/json")
    assert made.status_code == 201 and made.json()["machine_id"] == machine.pk


def test_a_group_review_confirm_its_stop_and_its_api_answer(client, catalog_fleet, ada):
    """A throughput plan's button (the same form a cluster's row carries): review, Confirm, Stop."""
    client.force_login(ada)
    machine = catalog_fleet["h100x8"]
    terms = {"kind": "plan", "machines": f"{machine.pk}:1", "price_per_hour": "2.50", "query": LLAMA_8B}
    assert client.post(reverse("launches:group_review"), terms).status_code == 200
    launched = client.post(reverse("launches:group_launch"), {**terms, "idempotency_key": uuid.uuid4().hex})
    assert launched.status_code == 303 and launched["Location"] == reverse("launches:list")
    group = ada.launch_groups.get()
    for prefix in ("", "/de"):
        assert client.get(prefix + reverse("launches:group_stop", args=[group.pk])).status_code == 200
    assert client.post(reverse("launches:group_stop", args=[group.pk])).status_code == 303
    api_terms = {"kind": "plan", "machines": [{"id": machine.pk, "gpus": 1}], "price_per_hour": "2.50",
                 "query": {"model": "llama-3-1-8b"}, "idempotency_key": uuid.uuid4().hex}
    made = client.post("/api/v1/launches/group", api_terms, content_type="application/json")
    assert made.status_code == 201 and made.json()["bookings"][0]["machine_id"] == machine.pk


def test_every_admin_list_and_form_answers(client, catalog_fleet, ada):
    launch(
        ada, machines=[(catalog_fleet["rtx4090"].pk, 1)], shown_price_per_hour=Decimal("0.40"),
        query_string=LLAMA_8B, idempotency_key=uuid.uuid4().hex,
    )
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", PASSWORD))
    assert client.get(reverse("admin:index")).status_code == 200
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        changelist = client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        assert changelist.status_code == 200, meta.label
        if model_admin.has_add_permission(changelist.wsgi_request):
            assert client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_add")).status_code == 200, meta.label
        first = model._default_manager.order_by("pk").first()
        if first is not None:
            change = client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[first.pk]))
            assert change.status_code == 200, meta.label


def test_watches_their_pages_feed_tokens_and_api_answer(client, catalog_fleet, ada):
    client.force_login(ada)
    assert client.post(reverse("watches:create"), {"query": LLAMA_8B}).status_code == 302
    watch = ada.watches.get()
    for action in ("pause", "resume"):
        assert client.post(reverse("watches:act", args=[watch.pk, action])).status_code == 302
    assert client.get(reverse("watches:feed", args=[watch.feed_token])).status_code == 200
    for prefix in ("", "/de"):
        assert client.get(prefix + reverse("watches:unsubscribe", args=[watch.unsubscribe_token])).status_code == 200
    assert client.post(reverse("watches:token_create")).status_code == 302
    token = ada.api_tokens.get()
    assert client.post(reverse("watches:token_revoke", args=[token.pk])).status_code == 302
    listed = client.get("/api/v1/watches")
    assert listed.status_code == 200 and listed.json()[0]["id"] == watch.pk
    made = client.post("/api/v1/watches", {"query": {"model": "llama-3-1-8b"}}, content_type="application/json")
    assert made.status_code == 201
    assert client.delete(f"/api/v1/watches/{made.json()['id']}").status_code == 204
    assert client.post(reverse("watches:act", args=[watch.pk, "delete"])).status_code == 200  # asks first
    assert ada.watches.exists()
    assert client.post(reverse("watches:act", args=[watch.pk, "delete"]), {"confirmed": "1"}).status_code == 302
    assert not ada.watches.exists()
