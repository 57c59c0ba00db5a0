"""Sign-up answers the same whether a username is free or taken; only the e-mail, sent to the
address given, says which. The account is created inactive and activated from that e-mail."""
from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlparse

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.urls import reverse
from django.utils import timezone

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"
CSRF = re.compile(rb'(csrfmiddlewaretoken" value="|X-CSRFToken": ")[^"]+')


def sign_up(client, username, email="someone@example.com", password=PASSWORD):
    return client.post(reverse("signup"), {"username": username, "email": email,
                                           "password1": password, "password2": password})


def comparable(response) -> tuple:
    """Status, headers, body (less the per-response CSRF token) and the cookies set."""
    return (response.status_code, dict(response.headers), CSRF.sub(rb"\1-", response.content),
            sorted(response.cookies))


def link_in(message) -> str:
    url = re.search(r"https?://\S+/accounts/signup/confirm/\S+", message.body).group(0)
    parsed = urlparse(url)
    return parsed.path + (f"?{parsed.query}" if parsed.query else "")


def test_a_taken_username_and_a_free_one_get_the_same_answer(client, django_user_model):
    django_user_model.objects.create_user("ada", email="ada@example.com", password="a-long-test-passphrase")
    taken = sign_up(client, "ada")
    free = sign_up(client, "grace")
    assert comparable(taken) == comparable(free)
    assert taken.status_code == 200 and b"Check your email" in taken.content
    assert b"already" not in taken.content and b"taken" not in taken.content

    # The e-mails, both to the address given, say what happened.
    assert [m.to for m in mail.outbox] == [["someone@example.com"], ["someone@example.com"]]
    assert "already taken" in mail.outbox[0].body and "/accounts/password_reset/" in mail.outbox[0].body
    assert "/accounts/signup/confirm/" not in mail.outbox[0].body
    assert "Finish signing up here" in mail.outbox[1].body and link_in(mail.outbox[1])
    # The existing account is untouched: same e-mail, same password, still active.
    ada = django_user_model.objects.get(username="ada")
    assert ada.email == "ada@example.com" and ada.check_password("a-long-test-passphrase") and ada.is_active


def test_the_same_name_in_other_letter_case_is_taken_too(client, django_user_model):
    django_user_model.objects.create_user("ada", password="a-long-test-passphrase")
    assert sign_up(client, "ADA").status_code == 200
    assert "already taken" in mail.outbox[0].body
    assert not django_user_model.objects.filter(username="ADA").exists()


def test_the_emailed_link_activates_once_and_signs_in(client, django_user_model):
    sign_up(client, "grace", email="grace@example.com")
    grace = django_user_model.objects.get(username="grace")
    assert not grace.is_active
    # Until then the account cannot sign in, and the answer does not say why.
    refused = client.post(reverse("login"), {"username": "grace", "password": PASSWORD})
    assert refused.status_code == 200 and b"Please enter a correct username and password" in refused.content

    link = link_in(mail.outbox[0])
    assert client.get(link).status_code == 200  # opening the link changes nothing
    grace.refresh_from_db()
    assert not grace.is_active
    assert client.post(link).status_code == 302
    grace.refresh_from_db()
    assert grace.is_active and client.session["_auth_user_id"] == str(grace.pk)

    client.logout()
    used = client.get(link)
    assert used.status_code == 400 and b"This link does not work" in used.content
    assert client.post(link).status_code == 400


def test_a_pending_account_gets_a_fresh_link_only_at_its_own_address(client, django_user_model):
    sign_up(client, "grace", email="grace@example.com")
    sign_up(client, "grace", email="GRACE@example.com")
    sign_up(client, "grace", email="mallory@example.com")
    assert [m.to[0] for m in mail.outbox] == ["grace@example.com", "GRACE@example.com", "mallory@example.com"]
    assert link_in(mail.outbox[1])
    assert "already taken" in mail.outbox[2].body and "/signup/confirm/" not in mail.outbox[2].body
    assert django_user_model.objects.get(username="grace").email == "grace@example.com"


def test_a_name_never_activated_is_released_after_the_links_lifetime(client, django_user_model, settings):
    sign_up(client, "grace", email="squatter@example.com")
    stale_link = link_in(mail.outbox[0])
    get_user_model().objects.filter(username="grace").update(
        date_joined=timezone.now() - timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT + 60)
    )
    sign_up(client, "grace", email="grace@example.com")
    grace = django_user_model.objects.get(username="grace")
    assert grace.email == "grace@example.com" and not grace.is_active
    assert link_in(mail.outbox[1])
    assert client.get(stale_link).status_code == 400


def test_bad_input_is_still_named_in_the_form(client):
    response = client.post(reverse("signup"), {"username": "x y", "email": "not-an-email",
                                               "password1": "a", "password2": "b"})
    assert response.status_code == 200
    assert b"Enter a valid email address." in response.content
    assert not mail.outbox
