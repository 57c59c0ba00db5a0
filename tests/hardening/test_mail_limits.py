"""Sign-up and password reset mail any address typed: both are limited per client address, and
password reset per e-mail address too, with a clear 429 in the page's language."""
from __future__ import annotations

import uuid

import pytest
from django.core import mail
from django.urls import reverse

# The per-address limits on at their production values; each test sets the one it tests.
pytestmark = [pytest.mark.django_db, pytest.mark.rate_limits]

PASSWORD = "correct-horse-battery"


@pytest.fixture
def address():
    """A fresh client address per test, so counts left in the shared cache never matter."""
    return f"198.51.100.{uuid.uuid4().int % 250 + 1}-{uuid.uuid4().hex[:8]}"


def sign_up(client, number, address, path=None):
    return client.post(path or reverse("signup"), {
        "username": f"visitor{number}-{uuid.uuid4().hex[:6]}", "email": f"visitor{number}@example.com",
        "password1": PASSWORD, "password2": PASSWORD,
    }, REMOTE_ADDR=address)


def reset(client, email, address, path=None):
    return client.post(path or reverse("password_reset"), {"email": email}, REMOTE_ADDR=address)


def test_forty_sign_ups_from_one_client_send_mail_only_up_to_the_limit(client, settings, address):
    settings.SIGNUP_RATE_LIMIT = "10/hour"
    statuses = [sign_up(client, number, address).status_code for number in range(40)]

    assert statuses == [200] * 10 + [429] * 30
    assert len(mail.outbox) == 10
    refused = sign_up(client, 99, address)
    assert "Too many sign-ups from this client: at most 10 per hour." in refused.content.decode()
    assert 1 <= int(refused["Retry-After"]) <= 3600
    # Another client is not held back by this one.
    assert sign_up(client, 100, address + "-other").status_code == 200


def test_the_sign_up_limit_answers_in_the_pages_language(client, settings, address):
    settings.SIGNUP_RATE_LIMIT = "1/hour"
    german = "/de" + reverse("signup")
    assert sign_up(client, 1, address, german).status_code == 200

    refused = sign_up(client, 2, address, german)

    assert refused.status_code == 429
    assert "Zu viele Registrierungen von diesem Client: höchstens 1 pro Stunde." in refused.content.decode()


def test_password_reset_is_limited_per_client(client, settings, address, django_user_model):
    settings.PASSWORD_RESET_RATE_LIMIT = "5/hour"
    settings.PASSWORD_RESET_EMAIL_RATE_LIMIT = "off"
    statuses = [reset(client, f"someone{number}@example.com", address).status_code for number in range(12)]

    assert statuses == [302] * 5 + [429] * 7
    refused = reset(client, "another@example.com", address)
    assert "Too many password reset requests from this client: at most 5 per hour." in refused.content.decode()


def test_password_reset_is_limited_per_email_address_whatever_the_clients(client, settings, address,
                                                                         django_user_model):
    django_user_model.objects.create_user("ada", email="ada@example.com", password="a-long-test-passphrase")
    settings.PASSWORD_RESET_RATE_LIMIT = "off"
    settings.PASSWORD_RESET_EMAIL_RATE_LIMIT = "3/hour"
    target = f"ada+{uuid.uuid4().hex[:6]}@example.com"
    django_user_model.objects.create_user("ada2", email=target, password="a-long-test-passphrase")

    statuses = [reset(client, target, f"{address}-{number}").status_code for number in range(8)]

    assert statuses == [302] * 3 + [429] * 5
    assert len(mail.outbox) == 3
    refused = reset(client, target.upper(), address + "-again", "/de" + reverse("password_reset"))
    assert refused.status_code == 429
    assert "Zu viele Anfragen zum Zurücksetzen des Passworts für diese E-Mail-Adresse" in refused.content.decode()
