"""Sign-up that does not say whether a username exists.

Every well-formed sign-up gets the same answer, "check your e-mail", and the same work done (one
password hashed, one e-mail sent), so neither the page nor its timing tells a username that is free
from one that is taken. What happens is said in the e-mail, to the address given:

- a free username: the account is created inactive, and the e-mail holds a one-time link that
  activates it and signs in (Django's password-reset tokens: they expire after
  PASSWORD_RESET_TIMEOUT and stop working once the account has been signed in to);
- a taken username: the e-mail says so, and how to sign in or reset the password if the account is
  theirs. The same address asking again for its own pending account gets a fresh link instead.

An account never activated holds its username for PASSWORD_RESET_TIMEOUT only; after that the next
sign-up for the name replaces it, so names cannot be squatted with addresses nobody reads.
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlencode, urlsafe_base64_decode, urlsafe_base64_encode


def _pending_expired(user) -> bool:
    lifetime = timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT)
    return not user.is_active and user.last_login is None and user.date_joined < timezone.now() - lifetime


def activation_path(user, next_url: str = "") -> str:
    path = reverse(
        "signup_confirm",
        kwargs={"uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
                "token": default_token_generator.make_token(user)},
    )
    return f"{path}?{urlencode({'next': next_url})}" if next_url else path


def _send(template: str, email: str, context: dict) -> None:
    subject = render_to_string(f"registration/{template}_subject.txt", context).strip()
    body = render_to_string(f"registration/{template}_email.txt", context)
    send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [email])


def request_signup(username: str, email: str, password: str, next_url: str, base_url: str) -> None:
    """Creates a pending account or says the name is taken, by e-mail only (see the module)."""
    User = get_user_model()
    context = {"username": username, "base_url": base_url.rstrip("/")}
    with transaction.atomic():
        existing = User.objects.select_for_update().filter(username__iexact=username).first()
        if existing is not None and _pending_expired(existing):
            existing.delete()
            existing = None
        if existing is None:
            try:
                with transaction.atomic():
                    user = User.objects.create_user(username, email=email, password=password, is_active=False)
            except IntegrityError:  # the same name, created by a concurrent sign-up
                existing = User.objects.filter(username__iexact=username).first()
            else:
                _send("signup", email, {**context, "path": activation_path(user, next_url)})
                return
        # The same hashing work as a new account, so the answer takes as long either way.
        make_password(password)
        if existing is not None and not existing.is_active and existing.email.lower() == email.lower():
            _send("signup", email, {**context, "path": activation_path(existing, next_url)})
        else:
            _send("signup_taken", email, {**context, "login_path": reverse("login"),
                                          "reset_path": reverse("password_reset")})


def pending_user(uidb64: str, token: str):
    """The inactive account this link activates, or None when the link is not (or no longer) valid."""
    User = get_user_model()
    try:
        user = User.objects.get(pk=int(urlsafe_base64_decode(uidb64).decode()), is_active=False)
    except (ValueError, TypeError, OverflowError, UnicodeDecodeError, User.DoesNotExist):
        return None
    return user if default_token_generator.check_token(user, token) else None


def activate(user) -> None:
    user.is_active = True
    user.save(update_fields=["is_active"])
