"""What a firing says and where it goes: the e-mail in the owner's language, the webhook's payload."""
from __future__ import annotations

from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation

from .models import Firing, Watch
from .services import watch_query


def absolute(path: str) -> str:
    return settings.CONSOLE_BASE_URL.rstrip("/") + path


def result_url(watch: Watch, language: str | None = None) -> str:
    """The watched result's page, in `language` (the watch's by default)."""
    with translation.override(language or watch.language):
        return absolute(f"{reverse('wizard:start')}?{watch_query(watch).as_query_string()}")


def links(watch: Watch) -> dict[str, str]:
    with translation.override(watch.language):
        return {
            "result": result_url(watch),
            "unsubscribe": absolute(reverse("watches:unsubscribe", args=[watch.unsubscribe_token])),
            "feed": absolute(reverse("watches:feed", args=[watch.feed_token])),
        }


def summary(watch: Watch, firing: Firing) -> str:
    """One line in the watch's language: what was found."""
    with translation.override(watch.language):
        return render_to_string("watches/summary.txt", {"watch": watch, "firing": firing}).strip()


def payload(watch: Watch, firing: Firing) -> dict:
    """The webhook's JSON: the query, the condition and the machines that matched."""
    return {
        "watch": watch.pk,
        "fired_at": firing.fired_at.isoformat(),
        "query": dict(watch.query),
        "condition": {
            "kind": watch.condition,
            "price_per_hour": None if watch.price_per_hour is None else str(watch.price_per_hour),
            "machines": watch.machines,
        },
        "machines_total": firing.machines_total,
        "cheapest_price_per_hour": (
            None if firing.cheapest_price_per_hour is None else str(firing.cheapest_price_per_hour)
        ),
        "plan_price_per_hour": (
            None if firing.plan_price_per_hour is None else str(firing.plan_price_per_hour)
        ),
        "matches": list(firing.matches),
        "result_url": result_url(watch),
    }


def send_email(watch: Watch, firing: Firing) -> None:
    with translation.override(watch.language):
        context = {"watch": watch, "firing": firing, "links": links(watch)}
        subject = render_to_string("watches/email_subject.txt", context).strip()
        body = render_to_string("watches/email.txt", context)
    send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [watch.owner.email])
