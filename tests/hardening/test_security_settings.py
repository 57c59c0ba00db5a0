"""Production settings, security headers, the admin's door and CSRF on every state change."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from catalog.models import Machine
from nodelodge.launches.models import Booking
from tests.helpers import LLAMA_8B

from .helpers import REPO, production_env, run_python


@pytest.mark.slow  # a subprocess
def test_production_settings_pass_the_deploy_check_without_a_warning():
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO, env=production_env(), capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout


@pytest.mark.slow  # a subprocess
def test_production_refuses_to_start_without_a_secret_key():
    env = production_env()
    del env["SECRET_KEY"]
    done = run_python("import django; django.setup()", env)
    assert done.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off." in done.stderr


PRODUCTION_RESPONSE = """
import json, django
from django.conf import settings
# The hashed-name static storage needs collectstatic's manifest; these checks are about headers.
settings.STORAGES["staticfiles"]["BACKEND"] = "django.contrib.staticfiles.storage.StaticFilesStorage"
django.setup()
from django.test import Client
client = Client()
plain = client.get("/", HTTP_HOST="example.com")
page = client.get("/accounts/login/", secure=True, HTTP_HOST="example.com")
print(json.dumps({
    "plain_status": plain.status_code, "plain_location": plain.get("Location"),
    "headers": dict(page.headers),
    "cookies": {name: {"secure": bool(c["secure"]), "httponly": bool(c["httponly"]),
                       "samesite": c["samesite"]} for name, c in page.cookies.items()},
}))
"""


@pytest.fixture(scope="module")
def production_response():
    done = run_python(PRODUCTION_RESPONSE, production_env(DATABASE_URL="sqlite:///:memory:"))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_production_redirects_plain_http_to_https(production_response):
    assert production_response["plain_status"] == 301
    assert production_response["plain_location"] == "https://example.com/"


def test_production_sends_hsts_frame_denial_and_nosniff(production_response):
    headers = production_response["headers"]
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert "script-src 'self'" in headers["Content-Security-Policy"]


def test_production_cookies_are_secure(production_response):
    csrf = production_response["cookies"]["csrftoken"]
    assert csrf["secure"] and csrf["samesite"] == "Lax"


@pytest.mark.django_db
def test_every_page_carries_the_content_security_policy(client, catalog_fleet):
    policy = client.get("/?" + LLAMA_8B)["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["default-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"
    htmx = client.get("/?" + LLAMA_8B, headers={"HX-Request": "true", "HX-Target": "result"})
    assert htmx["Content-Security-Policy"] == policy
    assert client.get("/api/v1/estimate?" + LLAMA_8B)["Content-Security-Policy"] == policy


@pytest.mark.django_db
def test_only_the_api_docs_may_load_data_images(client):
    docs = client.get("/api/v1/docs")
    assert docs.status_code == 200
    directives = dict(part.strip().split(" ", 1) for part in docs["Content-Security-Policy"].split(";"))
    assert directives["img-src"] == "'self' data:"
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert "data:" not in client.get("/")["Content-Security-Policy"]


def test_templates_carry_no_inline_script_or_style():
    offenders = []
    for folder in (REPO / "templates", REPO / "nodelodge", REPO / "catalog"):
        for template in Path(folder).rglob("*.html"):
            text = template.read_text()
            inline_script = re.search(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", text)
            handler = re.search(r"\son[a-z]+\s*=", text)
            if inline_script or handler or "<style" in text or "javascript:" in text:
                offenders.append(str(template.relative_to(REPO)))
    assert offenders == []


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/admin/", "/admin/launches/booking/", "/admin/catalog/machine/"])
def test_the_admin_sends_anonymous_and_non_staff_to_its_sign_in(client, django_user_model, path):
    anonymous = client.get(path)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/admin/login/")
    client.force_login(django_user_model.objects.create_user("ada", password="a-long-test-passphrase"))
    member = client.get(path)
    assert member.status_code == 302 and member["Location"].startswith("/admin/login/")
    client.force_login(django_user_model.objects.create_user("sam", password="x", is_staff=True,
                                                             is_superuser=True))
    assert client.get(path).status_code == 200


@pytest.mark.django_db
def test_a_non_staff_user_cannot_sign_in_to_the_admin(client, django_user_model):
    django_user_model.objects.create_user("ada", password="a-long-test-passphrase")
    response = client.post("/admin/login/", {"username": "ada", "password": "a-long-test-passphrase"})
    assert response.status_code == 200
    assert b"Please enter the correct username and password for a staff account" in response.content


def htmx_csrf_client(user) -> Client:
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(user)
    return csrf_client


HTMX = {"HX-Request": "true", "HX-Target": "result"}


@pytest.mark.django_db
def test_htmx_launch_and_stop_without_the_csrf_header_are_forbidden(catalog_fleet, django_user_model):
    from nodelodge.launches.booking import launch

    user = django_user_model.objects.create_user("ada", password="a-long-test-passphrase")
    machine = catalog_fleet["h100x8"]
    data = {"machine": machine.pk, "gpus": 1, "price_per_hour": "2.50", "query": LLAMA_8B,
            "idempotency_key": uuid.uuid4().hex}
    csrf_client = htmx_csrf_client(user)
    assert csrf_client.post(reverse("launches:launch"), data, headers=HTMX).status_code == 403
    assert not Booking.objects.exists()

    from decimal import Decimal
    booking = launch(
        user, machines=[(catalog_fleet["rtx4090"].pk, 1)], shown_price_per_hour=Decimal("0.40"),
        query_string=LLAMA_8B, idempotency_key=uuid.uuid4().hex,
    ).booking
    assert csrf_client.post(reverse("launches:stop", args=[booking.pk]), headers=HTMX).status_code == 403
    booking.refresh_from_db()
    assert booking.is_running
    assert csrf_client.post(reverse("logout"), headers=HTMX).status_code == 403


@pytest.mark.django_db
def test_htmx_launch_with_the_pages_csrf_header_books(catalog_fleet, django_user_model):
    user = django_user_model.objects.create_user("ada", password="a-long-test-passphrase")
    machine = catalog_fleet["rtx4090"]
    csrf_client = htmx_csrf_client(user)
    page = csrf_client.get("/?" + LLAMA_8B)
    # base.html hands the token to htmx as hx-headers; htmx sends it as X-CSRFToken.
    token = re.search(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'', page.content.decode()).group(1)
    data = {"machine": machine.pk, "gpus": 1, "price_per_hour": "0.40", "query": LLAMA_8B,
            "idempotency_key": uuid.uuid4().hex}
    response = csrf_client.post(reverse("launches:launch"), data, headers={**HTMX, "X-CSRFToken": token})
    assert response.status_code == 200 and response["HX-Redirect"] == reverse("launches:list")
    assert Machine.objects.get(pk=machine.pk).free_gpus == 0
