"""My launches writes a budget's hours grouped as the page's language does; the top bar's Sign up keeps
the way back (`next`) that Sign in keeps, on any page and on the sign-in page itself."""
from __future__ import annotations

import uuid
from decimal import Decimal
from urllib.parse import quote

import pytest

from nodelodge.launches.booking import launch
from nodelodge.launches.models import Booking
from tests.factories import make_user
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("path", "hours"), [("/launches/", "1,020.40 h"), ("/de/launches/", "1.020,40 Std.")])
def test_the_hours_a_budget_covers_are_grouped_as_the_pages_language_writes_them(client, small_catalog, path, hours):
    user = make_user()
    client.force_login(user)
    machine = small_catalog.machine()
    booking = launch(
        user, machines=[(machine.pk, 1)], shown_price_per_hour=machine.price_per_gpu_hour,
        query_string=LLAMA_8B, idempotency_key=uuid.uuid4().hex,
    ).booking
    Booking.objects.filter(pk=booking.pk).update(hours_covered=Decimal("1020.40"))

    html = client.get(path, HTTP_ACCEPT_LANGUAGE=path[1:3] if path.startswith("/de") else "en").content.decode()

    assert hours in html and "1020.40" not in html


def test_sign_up_in_the_top_bar_keeps_the_way_back_to_the_review(client, small_catalog):
    machine = small_catalog.machine()
    review = (f"/launch/review/?machine={machine.pk}&gpus=1&price_per_hour={machine.price_per_gpu_hour}"
              f"&query={quote(LLAMA_8B)}")

    on_the_review = client.get(review, follow=True).content.decode()  # the sign-in page, for a visitor
    on_sign_in = client.get(f"/accounts/login/?next={quote(review)}").content.decode()

    way_back = quote(review, safe="/")
    for html in (on_the_review, on_sign_in):
        assert f'href="/accounts/signup/?next={way_back}"' in html
        assert f'href="/accounts/login/?next={way_back}"' in html
