"""The API is rate-limited per client address; the sign-in form locks out after repeated failures."""
from __future__ import annotations

import uuid

import pytest
from django.core.cache import cache
from django.test import override_settings
from django.urls import reverse

from catalog.models import Machine
from tests.helpers import LLAMA_8B

# The per-address limits on at their production values; each test sets the one it tests.
pytestmark = [pytest.mark.django_db, pytest.mark.rate_limits]

CLOSED_REDIS = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                            "LOCATION": "redis://127.0.0.1:1/0"}}


@pytest.fixture
def client_address():
    """A fresh address per test, so counts left in the shared cache by other runs never matter."""
    address = f"192.0.2.{uuid.uuid4().int % 250 + 1}-{uuid.uuid4().hex[:8]}"
    yield address
    cache.delete(f"api-rate_{address}")


def api_get(client, address, path="estimate", query=LLAMA_8B, **headers):
    return client.get(f"/api/v1/{path}?{query}", REMOTE_ADDR=address, headers=headers)


def test_the_api_answers_429_with_a_reason_and_retry_after_past_the_limit(
    client, catalog_fleet, settings, client_address
):
    settings.API_RATE_LIMIT = "3/min"
    statuses = [api_get(client, client_address).status_code for _ in range(3)]
    assert statuses == [200, 200, 200]

    refused = api_get(client, client_address, path="recommendations")

    assert refused.status_code == 429
    message = refused.json()["errors"]["request"]
    assert message.startswith("Too many requests from this client: at most 3 per min.")
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert "Try again in" in message


def test_the_limit_is_per_client(client, catalog_fleet, settings, client_address):
    settings.API_RATE_LIMIT = "2/min"
    for _ in range(2):
        api_get(client, client_address)
    assert api_get(client, client_address).status_code == 429
    other = client_address + "-other"
    try:
        assert api_get(client, other).status_code == 200
    finally:
        cache.delete(f"api-rate_{other}")


def test_a_later_or_longer_api_page_counts_the_first_pages_it_costs(client, catalog_fleet, settings, client_address):
    settings.API_RATE_LIMIT = "20/min"
    # Page 10 of 100 and one page of 1,000 each describe the cheapest 1,000 machines: 10 first pages.
    assert api_get(client, client_address, path="recommendations", query=LLAMA_8B + "&page=10").status_code in (200, 404)
    assert api_get(client, client_address, path="recommendations", query=LLAMA_8B + "&limit=1000").status_code == 200
    refused = api_get(client, client_address)
    assert refused.status_code == 429
    assert refused.json()["errors"]["request"].startswith("Too many requests from this client: at most 20 per min.")


def test_a_forged_forwarded_for_header_does_not_lift_the_limit(client, catalog_fleet, settings, client_address):
    settings.API_RATE_LIMIT = "2/min"
    for _ in range(2):
        api_get(client, client_address)
    forged = api_get(client, client_address, HTTP_X_FORWARDED_FOR="203.0.113.7")
    forged_too = api_get(client, client_address, **{"X-Forwarded-For": f"203.0.113.{uuid.uuid4().int % 250}"})
    assert (forged.status_code, forged_too.status_code) == (429, 429)


def test_the_rate_limit_is_a_setting_that_can_be_turned_off(client, catalog_fleet, settings, client_address):
    settings.API_RATE_LIMIT = "off"
    assert {api_get(client, client_address).status_code for _ in range(10)} == {200}


def test_the_rate_limit_is_documented_in_the_schema(client):
    schema = client.get("/api/v1/openapi.json").json()
    for path in ("/api/v1/estimate", "/api/v1/recommendations", "/api/v1/models"):
        assert "429" in schema["paths"][path]["get"]["responses"], path


def test_with_redis_down_the_api_and_wizard_still_answer_without_a_limit(
    client, catalog_fleet, settings, client_address
):
    settings.API_RATE_LIMIT = "2/min"
    with override_settings(CACHES=CLOSED_REDIS, CELERY_BROKER_URL="redis://127.0.0.1:1/0"):
        statuses = [api_get(client, client_address).status_code for _ in range(4)]
        recommendations = api_get(client, client_address, path="recommendations")
        page = client.get(f"/?{LLAMA_8B}")
    assert statuses == [200, 200, 200, 200]
    assert recommendations.status_code == 200
    body = recommendations.json()
    assert body["machines"] and body["data_as_of"] and body["newest_report"]
    assert page.status_code == 200
    assert b"Availability as of" in page.content and b"newest report" in page.content
    assert Machine.objects.filter(provider_machine_id="fra-4090").exists()


# Sign-in: django-axes locks a username from one address out after AXES_FAILURE_LIMIT (5) failures,
# and an address whatever the usernames after AXES_ADDRESS_FAILURE_LIMIT (50).

def test_after_five_bad_sign_ins_the_sixth_is_refused_with_a_clear_message(client, django_user_model):
    django_user_model.objects.create_user("ada", password="a-long-test-passphrase")
    for attempt in range(4):
        response = client.post(reverse("login"), {"username": "ada", "password": f"wrong-{attempt}"})
        assert response.status_code == 200, attempt
        assert b"Please enter a correct username and password" in response.content
    # The fifth failure reaches AXES_FAILURE_LIMIT: it is answered with the lockout already.
    fifth = client.post(reverse("login"), {"username": "ada", "password": "wrong-5"})
    assert fifth.status_code == 429

    sixth = client.post(reverse("login"), {"username": "ada", "password": "wrong-6"})
    assert sixth.status_code == 429
    assert b"Account locked: too many login attempts" in sixth.content

    # Even the right password is refused while locked out.
    right = client.post(reverse("login"), {"username": "ada", "password": "a-long-test-passphrase"})
    assert right.status_code == 429
    assert "_auth_user_id" not in client.session


def test_a_good_sign_in_resets_the_failure_count(client, django_user_model):
    django_user_model.objects.create_user("ada", password="a-long-test-passphrase")
    for attempt in range(4):
        client.post(reverse("login"), {"username": "ada", "password": f"wrong-{attempt}"})
    assert client.post(reverse("login"), {"username": "ada", "password": "a-long-test-passphrase"}).status_code == 302
    client.logout()
    for attempt in range(4):
        response = client.post(reverse("login"), {"username": "ada", "password": f"wrong-{attempt}"})
        assert response.status_code == 200


OFFICE = "198.51.100.7"


def sign_in(client, username, password, address=OFFICE):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)


def test_one_locked_user_does_not_lock_out_the_others_behind_the_same_address(client, django_user_model):
    django_user_model.objects.create_user("ada", password="a-long-test-passphrase")
    django_user_model.objects.create_user("bob", password="another-long-passphrase")
    statuses = [sign_in(client, "ada", f"wrong-{attempt}").status_code for attempt in range(6)]
    assert statuses == [200, 200, 200, 200, 429, 429]
    assert sign_in(client, "ada", "a-long-test-passphrase").status_code == 429  # ada is locked here

    # Bob, at the next desk behind the same office address, signs in with his own password.
    assert sign_in(client, "bob", "another-long-passphrase").status_code == 302
    assert client.session["_auth_user_id"] == str(django_user_model.objects.get(username="bob").pk)
    client.logout()
    # And ada herself, from another address, is not locked out by what happened at the office.
    assert sign_in(client, "ada", "a-long-test-passphrase", address="203.0.113.9").status_code == 302


def test_an_address_trying_many_usernames_is_locked_out_at_the_higher_threshold(client, django_user_model, settings):
    assert settings.AXES_ADDRESS_FAILURE_LIMIT == 50  # the shipped threshold, ten times the user's
    django_user_model.objects.create_user("ada", password="a-long-test-passphrase")
    # Four wrong passwords for each of twelve usernames (never five for one): 48 failures.
    for name in range(12):
        for attempt in range(4):
            assert sign_in(client, f"user{name}", f"guess-{attempt}").status_code == 200, (name, attempt)
    assert sign_in(client, "user12", "guess-0").status_code == 200  # the 49th
    assert sign_in(client, "user12", "guess-1").status_code == 429  # the 50th: the address is locked
    # Now every username from that address is refused, the right password included...
    locked = sign_in(client, "ada", "a-long-test-passphrase")
    assert locked.status_code == 429 and b"Account locked: too many login attempts" in locked.content
    assert "_auth_user_id" not in client.session
    # ...and elsewhere ada signs in as usual.
    assert sign_in(client, "ada", "a-long-test-passphrase", address="203.0.113.9").status_code == 302


def test_signing_in_to_ones_own_account_does_not_clear_the_addresss_count(client, django_user_model, settings):
    settings.AXES_ADDRESS_FAILURE_LIMIT = 12
    django_user_model.objects.create_user("mallory", password="mallorys-own-passphrase")
    for name in range(3):
        for attempt in range(4):
            if name and not attempt:
                # A good sign-in between rounds clears mallory's own failures only.
                assert sign_in(client, "mallory", "mallorys-own-passphrase").status_code == 302
                client.logout()
            expected = 429 if (name, attempt) == (2, 3) else 200
            assert sign_in(client, f"victim{name}", f"guess-{attempt}").status_code == expected, (name, attempt)


def test_the_lockout_settings_are_checked_at_start(settings):
    from nodelodge.hardening.checks import lockout_rules_are_as_the_handler_reads_them as check

    assert check(None) == []
    settings.AXES_LOCKOUT_PARAMETERS = ["ip_address"]
    assert [error.id for error in check(None)] == ["hardening.E002"]
    settings.AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
    settings.AXES_ADDRESS_FAILURE_LIMIT = settings.AXES_FAILURE_LIMIT
    assert [error.id for error in check(None)] == ["hardening.E003"]


@pytest.mark.parametrize(
    "setting", ["PAGE_RATE_LIMIT", "SIGNUP_RATE_LIMIT", "PASSWORD_RESET_RATE_LIMIT", "PASSWORD_RESET_EMAIL_RATE_LIMIT"]
)
def test_an_unreadable_page_or_mail_limit_is_named_at_start_not_met_by_every_request(settings, setting):
    from nodelodge.hardening.checks import rate_limits_are_readable as check

    setattr(settings, setting, "30/hour")
    assert check(None) == []
    for unreadable in ("abc", "10/fortnight", "-5/min", "1.5/min"):
        setattr(settings, setting, unreadable)
        errors = check(None)
        assert [error.id for error in errors] == ["hardening.E004"]
        assert setting in errors[0].msg and repr(unreadable) in errors[0].msg
    setattr(settings, setting, "off")
    assert check(None) == []


def test_concurrent_calls_from_one_client_are_admitted_exactly_up_to_the_limit(settings, client_address, rf):
    """300 threads call at once against a limit of 120, counted in the configured cache (Redis on
    the PostgreSQL run, the local cache on the embedded run): exactly 120 pass."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from nodelodge.hardening.throttling import ApiRateThrottle

    settings.API_RATE_LIMIT = "120/min"
    throttle = ApiRateThrottle()
    start = threading.Barrier(50)

    def call(_):
        request = rf.get("/api/v1/estimate", REMOTE_ADDR=client_address)
        try:
            start.wait(timeout=10)
        except threading.BrokenBarrierError:
            pass
        return throttle.allow_request(request)

    with ThreadPoolExecutor(max_workers=50) as pool:
        admitted = list(pool.map(call, range(300)))

    assert admitted.count(True) == 120
    assert admitted.count(False) == 180


def test_the_limit_tests_run_with_the_production_limits(settings):
    """tests/settings.py turns the per-address limits off; this module's rate_limits marker puts back
    the values the console runs with."""
    from nodelodge import settings as console

    assert settings.API_RATE_LIMIT == console.API_RATE_LIMIT != "off"
    assert settings.PAGE_RATE_LIMIT == console.PAGE_RATE_LIMIT != "off"
    assert settings.PASSWORD_RESET_EMAIL_RATE_LIMIT == console.PASSWORD_RESET_EMAIL_RATE_LIMIT != "off"
