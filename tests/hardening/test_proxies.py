"""X-Forwarded-Proto and X-Forwarded-For are believed only from the proxies TRUSTED_PROXY_COUNT
admits: a client that writes them itself gets the HTTPS redirect, its own address, its own lockout."""
from __future__ import annotations

import json

import pytest
from django.urls import reverse

from .helpers import production_env, run_python

# A production process (DEBUG=0) answering plain-HTTP requests with the given headers.
ANSWERS = """
import json, django
from django.conf import settings
settings.STORAGES["staticfiles"]["BACKEND"] = "django.contrib.staticfiles.storage.StaticFilesStorage"
django.setup()
from django.test import Client
client = Client()
answers = {}
for name, headers in %(cases)r:
    response = client.get("/accounts/login/", HTTP_HOST="example.com", headers=headers)
    answers[name] = [response.status_code, response.get("Location")]
print(json.dumps(answers))
"""
CASES = [
    ("none", {}),
    ("https", {"X-Forwarded-Proto": "https"}),
    ("client_https_proxy_http", {"X-Forwarded-Proto": "https, http"}),
    ("proxy_https_upper", {"X-Forwarded-Proto": "HTTPS"}),
]
REDIRECT = [301, "https://example.com/accounts/login/"]


def answers_with(trusted_proxies: int) -> dict:
    env = production_env(DATABASE_URL="sqlite:///:memory:", TRUSTED_PROXY_COUNT=str(trusted_proxies))
    done = run_python(ANSWERS % {"cases": CASES}, env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_with_no_trusted_proxy_a_client_claiming_https_is_still_redirected():
    answers = answers_with(0)
    assert answers == {name: REDIRECT for name, _ in CASES}


def test_behind_one_trusted_proxy_its_https_is_honored_and_a_clients_own_claim_is_not():
    answers = answers_with(1)
    assert answers["none"] == REDIRECT
    assert answers["https"] == [200, None]  # the proxy terminated TLS and says so
    assert answers["proxy_https_upper"] == [200, None]
    # The client wrote "https", the proxy appended what it saw: plain HTTP.
    assert answers["client_https_proxy_http"] == REDIRECT


def fail_sign_ins(client, username, times, **meta):
    return [
        client.post(reverse("login"), {"username": username, "password": f"wrong-{n}"}, **meta).status_code
        for n in range(times)
    ]


@pytest.mark.django_db
def test_a_forged_forwarded_for_does_not_dodge_the_sign_in_lockout(client, django_user_model, settings):
    settings.TRUSTED_PROXY_COUNT = 0
    django_user_model.objects.create_user("ada", password="a-long-test-passphrase")
    statuses = [
        client.post(reverse("login"), {"username": "ada", "password": f"wrong-{n}"},
                    REMOTE_ADDR="198.51.100.7", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}").status_code
        for n in range(6)
    ]
    assert statuses == [200, 200, 200, 200, 429, 429]


@pytest.mark.django_db
def test_behind_the_trusted_proxy_each_client_is_its_forwarded_address(client, django_user_model, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    django_user_model.objects.create_user("ada", password="a-long-test-passphrase")
    proxy = {"REMOTE_ADDR": "127.0.0.1"}
    # Through the proxy, ada's five failures from one address lock that address's ada out...
    office = fail_sign_ins(client, "ada", 5, HTTP_X_FORWARDED_FOR="forged, 198.51.100.7", **proxy)
    assert office == [200, 200, 200, 200, 429]
    # ...not ada at home, although both arrive from the proxy's own address.
    home = client.post(reverse("login"), {"username": "ada", "password": "a-long-test-passphrase"},
                       HTTP_X_FORWARDED_FOR="203.0.113.9", **proxy)
    assert home.status_code == 302
