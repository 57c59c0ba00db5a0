"""Auto-Launch: book the cheapest match at most once, never above the watch's cap.

The booking goes through Launch's own pipeline (`launches.booking.launch`: the machine's row lock,
the re-check of availability, fit and price, the idempotency key), with the price the firing saw as
the price shown: a price that changed between the match and the booking is refused there, and the
watch stays active. At most MAX_LIVE_AUTO_LAUNCHES running bookings per user come from watches.
"""
from __future__ import annotations

from decimal import Decimal
from typing import cast

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext, ngettext

from nodelodge.launches.booking import launch
from nodelodge.launches.models import AUTO_LAUNCH_KEY_PREFIX, Booking
from nodelodge.launches.refusals import LaunchRefused
from sizing.units import money_text

from .delivery import absolute
from .models import Firing, Watch

MAX_LIVE_AUTO_LAUNCHES = 3
KEY_PREFIX = AUTO_LAUNCH_KEY_PREFIX  # My launches tells these bookings by it


def idempotency_key(watch: Watch) -> str:
    return f"{KEY_PREFIX}{watch.pk}"


def live_auto_launches(user) -> int:
    return Booking.objects.filter(
        user=user, status=Booking.Status.RUNNING, idempotency_key__startswith=KEY_PREFIX
    ).count()


def _refuse(watch: Watch, reason: str) -> dict:
    Watch.objects.filter(pk=watch.pk).update(auto_launch_refusal=reason[:500])
    return {"watch": watch.pk, "booked": None, "refused": reason}


def launch_for(firing_id: int) -> dict:
    firing = Firing.objects.select_related("watch", "watch__owner").get(pk=firing_id)
    watch = firing.watch
    cap = watch.auto_launch_max_price
    if not watch.auto_launch or cap is None:
        return {"watch": watch.pk, "booked": None, "refused": "not asked"}
    within = [m for m in firing.matches if Decimal(m["price_per_hour"]) <= cap]
    if not within:
        with translation.override(watch.language):  # shown on My launches in the watch's language
            reason = gettext("No match at or below the cap of %(cap)s/h.") % {"cap": money_text(cap)}
        return _refuse(watch, reason)
    within.sort(key=lambda m: (Decimal(m["price_per_hour"]), m["id"]))
    with transaction.atomic():
        # The owner's row, then the watch's: two auto-launches of one user count their running ones
        # one after the other, and two firings of one watch never both book.
        get_user_model().objects.select_for_update().filter(pk=watch.owner_id).first()
        locked = Watch.objects.select_for_update().get(pk=watch.pk)
        if locked.auto_launch_booking_id is not None:
            return {"watch": watch.pk, "booked": locked.auto_launch_booking_id, "refused": "already booked"}
        if live_auto_launches(locked.owner) >= MAX_LIVE_AUTO_LAUNCHES:
            with translation.override(locked.language):
                return _refuse(locked, ngettext(
                    "%(most)s auto-launched booking is running already.",
                    "%(most)s auto-launched bookings are running already.", MAX_LIVE_AUTO_LAUNCHES,
                ) % {"most": MAX_LIVE_AUTO_LAUNCHES})
        outcome, refusal = None, None
        # The cheapest match first; one taken meanwhile (or changed) gives way to the next within the cap.
        for match in within:
            try:
                with translation.override(locked.language):
                    outcome = launch(
                        locked.owner, machines=[(match["id"], match["gpus"])],
                        shown_price_per_hour=Decimal(match["price_per_hour"]),
                        query_string=locked.query_key_for_launch(), idempotency_key=idempotency_key(locked),
                    )
                break
            except LaunchRefused as refused:
                refusal = refused
        if outcome is None:
            return _refuse(locked, cast(LaunchRefused, refusal).message)  # each try refused
        booking = outcome.booking
        if booking.price_per_hour > cap:  # the service books the price shown; this is the last word
            raise RuntimeError("an auto-launch above its cap")
        Watch.objects.filter(pk=locked.pk).update(auto_launch_booking_id=booking.pk, auto_launch_refusal="")
    if outcome.created:
        transaction.on_commit(lambda: send_booking_email(locked, booking))
    return {"watch": watch.pk, "booked": booking.pk, "refused": None}


def send_booking_email(watch: Watch, booking: Booking) -> None:
    with translation.override(watch.language):
        context = {"watch": watch, "booking": booking, "launches_url": absolute(reverse("launches:list"))}
        subject = render_to_string("watches/booked_subject.txt", context).strip()
        body = render_to_string("watches/booked_email.txt", context)
    send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [watch.owner.email])
