"""Launch, My launches and Stop through HTTP: access, CSRF, HTMX and the pages' words."""
from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from urllib.parse import parse_qs, urlparse

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from catalog.models import Machine
from nodelodge.launches.booking import launch
from nodelodge.launches.holding import stop
from nodelodge.launches.models import Booking
from tests.helpers import LLAMA_8B as QUERY

pytestmark = pytest.mark.django_db


def launch_data(machine, gpus=1, price="2.49", query=QUERY, idempotency_key=None):
    return {
        "machine": machine.pk,
        "gpus": gpus,
        "price_per_hour": price,
        "query": query,
        "idempotency_key": idempotency_key or uuid.uuid4().hex,
    }


def booked(user, machine, gpus=1, price="2.49") -> Booking:
    return launch(
        user, machines=[(machine.pk, gpus)], shown_price_per_hour=Decimal(price), query_string=QUERY,
        idempotency_key=uuid.uuid4().hex,
    ).booking


def next_param(response) -> str:
    return parse_qs(urlparse(response["Location"]).query)["next"][0]


def test_anonymous_launch_asks_to_sign_in_and_comes_back_to_the_review(client, small_catalog):
    machine = small_catalog.machine()
    response = client.post(reverse("launches:launch"), launch_data(machine))
    assert response.status_code == 302
    assert urlparse(response["Location"]).path == reverse("login")
    back_to = urlparse(next_param(response))
    assert back_to.path == reverse("launches:review")
    params = parse_qs(back_to.query)
    assert params["machine"] == [str(machine.pk)] and params["gpus"] == ["1"]
    assert parse_qs(params["query"][0])["model"] == ["llama-3-1-8b"]
    assert not Booking.objects.exists()


def test_anonymous_review_asks_to_sign_in_and_comes_back_to_it(client, small_catalog):
    machine = small_catalog.machine()
    data = launch_data(machine)
    data.pop("idempotency_key")
    response = client.get(reverse("launches:review"), data)
    assert response.status_code == 302
    back_to = urlparse(next_param(response))
    assert back_to.path == reverse("launches:review")
    assert parse_qs(back_to.query)["machine"] == [str(machine.pk)]


def test_review_shows_what_confirm_books_and_books_nothing(client, small_catalog, make_user):
    client.force_login(make_user("ada"))
    machine = small_catalog.machine()
    data = launch_data(machine)
    data.pop("idempotency_key")
    html = client.get(reverse("launches:review"), data).content.decode()
    assert "Review the launch" in html
    assert machine.provider_machine_id in html and "$2.49/h" in html
    for words in ("Interruptible", "Booking limit", "Budget covers", "Sized for", "Llama 3.1 8B"):
        assert words in html
    assert 'name="idempotency_key"' in html and "Confirm and launch" in html
    assert not Booking.objects.exists()


def test_a_booking_at_its_limit_ends_by_itself_when_my_launches_is_read(client, small_catalog, make_user):
    user = make_user("ada")
    client.force_login(user)
    machine = small_catalog.machine()
    machine.booking_limit_hours = 2
    machine.save(update_fields=["booking_limit_hours"])
    booking = booked(user, machine)
    # Three hours pass: the booking started, and reaches its limit, three hours earlier.
    Booking.objects.filter(pk=booking.pk).update(
        started_at=booking.started_at - timedelta(hours=3), ends_at=booking.ends_at - timedelta(hours=3)
    )
    free_before = Machine.objects.get(pk=machine.pk).free_gpus
    html = client.get(reverse("launches:list")).content.decode()
    booking.refresh_from_db()
    assert booking.status == Booking.Status.ENDED
    assert booking.ended_at == booking.started_at + timedelta(hours=2)  # at the limit, not at the read
    assert Machine.objects.get(pk=machine.pk).free_gpus == free_before + 1
    assert "Nothing running" in html


def test_my_launches_answers_every_signed_in_user_with_or_without_bookings(client, small_catalog, make_user):
    """My launches runs the booking-limit sweep before it reads; that sweep must be SQL every database
    evaluates (it once multiplied an interval in SQL, which SQLite refuses, for every user)."""
    client.force_login(make_user("newcomer"))
    empty = client.get(reverse("launches:list"))
    assert empty.status_code == 200 and "Nothing running" in empty.content.decode()

    user = make_user("ada")
    client.force_login(user)
    limited = booked(user, small_catalog.machine(booking_limit_hours=24))
    unlimited = booked(user, small_catalog.machine())
    html = client.get(reverse("launches:list")).content.decode()
    assert reverse("launches:stop", args=[limited.pk]) in html
    assert reverse("launches:stop", args=[unlimited.pk]) in html
    ends = (limited.started_at + timedelta(hours=24)).strftime("%Y-%m-%d %H:%M")
    assert f"booking limit: ends by {ends}" in html


def test_confirm_and_stop_land_on_my_launches_that_answers(client, small_catalog, make_user):
    client.force_login(make_user("ada"))
    machine = small_catalog.machine(booking_limit_hours=24)
    response = client.post(reverse("launches:launch"), launch_data(machine), follow=True)
    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == reverse("launches:list")
    booking = Booking.objects.get()
    assert booking.ends_at == booking.started_at + timedelta(hours=24)
    assert reverse("launches:stop", args=[booking.pk]) in response.content.decode()

    stopped = client.post(reverse("launches:stop", args=[booking.pk]), follow=True)
    assert stopped.status_code == 200
    assert stopped.redirect_chain[-1][0] == reverse("launches:list")
    assert "Nothing running" in stopped.content.decode()
    booking.refresh_from_db()
    assert not booking.is_running


def test_my_launches_names_the_model_and_stop_asks_first(client, small_catalog, make_user):
    user = make_user("ada")
    client.force_login(user)
    booking = booked(user, small_catalog.machine())
    html = client.get(reverse("launches:list")).content.decode()
    assert "Llama 3.1 8B" in html and reverse("launches:stop", args=[booking.pk]) in html
    confirm = client.get(reverse("launches:stop", args=[booking.pk])).content.decode()
    assert "Stop this booking?" in confirm and "Yes, stop it" in confirm
    booking.refresh_from_db()
    assert booking.is_running


def test_signing_in_through_the_form_returns_to_the_result(client, small_catalog, make_user):
    make_user("ada")
    machine = small_catalog.machine()
    back_to = next_param(client.post(reverse("launches:launch"), launch_data(machine)))

    login_page = client.get(reverse("login"), {"next": back_to})
    assert login_page.status_code == 200 and b"Sign in to launch" in login_page.content
    response = client.post(
        reverse("login"), {"username": "ada", "password": "a-long-test-passphrase", "next": back_to}
    )
    assert response.status_code == 302 and response["Location"] == back_to


def test_launch_books_and_redirects_to_my_launches(client, small_catalog, make_user):
    user = make_user()
    client.force_login(user)
    machine = small_catalog.machine()

    response = client.post(reverse("launches:launch"), launch_data(machine))

    assert response.status_code == 303 and response["Location"] == reverse("launches:list")
    booking = Booking.objects.get()
    assert booking.user == user
    page = client.get(reverse("launches:list"))
    assert b"Launched: 1 \xc3\x97 H100 SXM 80GB on Alpine Compute" in page.content
    assert machine.provider_machine_id.encode() in page.content
    assert reverse("launches:stop", args=[booking.pk]).encode() in page.content


def test_a_double_click_books_once(client, small_catalog, make_user):
    client.force_login(make_user())
    machine = small_catalog.machine()
    data = launch_data(machine)
    first = client.post(reverse("launches:launch"), data)
    second = client.post(reverse("launches:launch"), data)
    assert first.status_code == second.status_code == 303
    assert Booking.objects.count() == 1


def test_htmx_launch_answers_with_a_client_redirect(client, small_catalog, make_user):
    client.force_login(make_user())
    data = launch_data(small_catalog.machine())
    response = client.post(reverse("launches:launch"), data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("launches:list")


def test_a_changed_price_shows_both_prices_and_the_way_back(client, small_catalog, make_user):
    client.force_login(make_user())
    machine = small_catalog.machine(price_per_gpu_hour=Decimal("2.75"))
    response = client.post(reverse("launches:launch"), launch_data(machine, price="2.49"))
    assert response.status_code == 409
    content = response.content.decode()
    assert "The price changed from $2.49/h to $2.75/h; check and launch again." in content
    assert "See the result at the new price" in content and 'href="/?' in content
    assert not Booking.objects.exists()


def test_losing_the_race_is_refused_at_once_with_the_way_back_to_the_result(client, small_catalog, make_user):
    client.force_login(make_user())
    taken = small_catalog.machine(gpu_count=1, free_gpus=1)
    launch(
        make_user(), machines=[(taken.pk, 1)], shown_price_per_hour=taken.price_per_gpu_hour,
        query_string=QUERY, idempotency_key=uuid.uuid4().hex,
    )  # the winner
    other = small_catalog.machine(price_per_gpu_hour=Decimal("3.10"))
    response = client.post(reverse("launches:launch"), launch_data(taken))
    assert response.status_code == 409
    content = response.content.decode()
    assert "someone else booked first" in content
    assert "Back to the result" in content and 'href="/?' in content
    assert "Next-cheapest machine that fits" not in content
    assert f'name="machine" value="{other.pk}"' not in content


def test_a_refusal_under_the_lock_offers_the_next_cheapest_with_a_launch_button(client, small_catalog, make_user):
    client.force_login(make_user())
    machine = small_catalog.machine(free_gpus=2)
    other = small_catalog.machine(price_per_gpu_hour=Decimal("3.10"))
    response = client.post(reverse("launches:launch"), launch_data(machine, gpus=2, price="4.98"))
    assert response.status_code == 409
    content = response.content.decode()
    assert "no longer fits" in content
    assert "Next-cheapest machine that fits" in content
    assert f'name="machine" value="{other.pk}"' in content
    assert 'name="price_per_hour" value="3.10"' in content


def test_htmx_refusal_is_a_fragment(client, small_catalog, make_user):
    client.force_login(make_user())
    machine = small_catalog.machine(is_available=False)
    response = client.post(reverse("launches:launch"), launch_data(machine), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert b"went offline" in response.content and b"<html" not in response.content


def test_an_incomplete_launch_form_is_a_bad_request(client, small_catalog, make_user):
    client.force_login(make_user())
    data = launch_data(small_catalog.machine())
    del data["idempotency_key"]
    assert client.post(reverse("launches:launch"), data).status_code == 400


def test_launch_is_post_only(client, make_user):
    client.force_login(make_user())
    assert client.get(reverse("launches:launch")).status_code == 405


def test_launch_without_a_csrf_token_is_forbidden(small_catalog, make_user):
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(make_user())
    response = csrf_client.post(reverse("launches:launch"), launch_data(small_catalog.machine()))
    assert response.status_code == 403
    assert not Booking.objects.exists()


def test_stop_without_a_csrf_token_is_forbidden(small_catalog, make_user):
    user = make_user()
    booking = booked(user, small_catalog.machine())
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(user)
    assert csrf_client.post(reverse("launches:stop", args=[booking.pk])).status_code == 403
    booking.refresh_from_db()
    assert booking.is_running


def test_launch_with_the_pages_csrf_token_books(small_catalog, make_user):
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(make_user())
    page = csrf_client.get(reverse("launches:list"))
    token = page.cookies["csrftoken"].value
    data = {**launch_data(small_catalog.machine()), "csrfmiddlewaretoken": token}
    assert csrf_client.post(reverse("launches:launch"), data).status_code == 303
    assert Booking.objects.count() == 1


def test_stop_frees_the_gpus_and_moves_the_booking_to_ended(client, small_catalog, make_user):
    user = make_user()
    client.force_login(user)
    machine = small_catalog.machine(free_gpus=2)
    booking = booked(user, machine)

    response = client.post(reverse("launches:stop", args=[booking.pk]), follow=True)

    assert response.redirect_chain[-1] == (reverse("launches:list"), 303)
    assert b"Stopped. 1 GPU on Alpine Compute" in response.content
    assert b"Nothing running." in response.content
    machine.refresh_from_db()
    assert machine.free_gpus == 2


def test_another_users_booking_is_not_found(client, small_catalog, make_user):
    owner, other = make_user(), make_user()
    booking = booked(owner, small_catalog.machine())
    client.force_login(other)
    assert client.post(reverse("launches:stop", args=[booking.pk])).status_code == 404
    page = client.get(reverse("launches:list"))
    assert small_catalog.provider.name.encode() not in page.content
    booking.refresh_from_db()
    assert booking.is_running


def test_anonymous_stop_and_list_ask_to_sign_in(client, small_catalog, make_user):
    booking = booked(make_user(), small_catalog.machine())
    stop_response = client.post(reverse("launches:stop", args=[booking.pk]))
    for response in (stop_response, client.get(reverse("launches:list"))):
        assert response.status_code == 302
        assert urlparse(response["Location"]).path == reverse("login")
    booking.refresh_from_db()
    assert booking.is_running


def test_my_launches_shows_cost_so_far(client, small_catalog, make_user):
    user = make_user()
    client.force_login(user)
    # Two 16,000 MiB GPUs: the model is split over both, 2 × $1.90 = $3.80/h.
    machine = small_catalog.machine(price_per_gpu_hour=Decimal("1.90"), memory_per_gpu_mib=16_000)
    booking = booked(user, machine, gpus=2, price="3.80")
    Booking.objects.filter(pk=booking.pk).update(started_at=booking.started_at - timedelta(minutes=90))
    page = client.get(reverse("launches:list")).content.decode()
    assert "$3.80" in page
    assert "$5.70" in page  # 1.5 h × $3.80


def test_signup_emails_a_link_that_activates_the_account_signs_in_and_goes_next(client):
    response = client.post(
        reverse("signup"),
        {
            "username": "grace",
            "email": "grace@example.com",
            "password1": "correct-horse-battery",
            "password2": "correct-horse-battery",
            "next": "/?" + QUERY,
        },
    )
    assert response.status_code == 200 and b"Check your email" in response.content
    link = urlparse(mail.outbox[-1].body.split("here (the link works once and expires after a few days):\n")[1]
                    .split()[0])
    page = client.get(f"{link.path}?{link.query}")
    assert page.status_code == 200 and b"Activate and sign in" in page.content
    activated = client.post(link.path, {"next": parse_qs(link.query)["next"][0]})
    assert activated.status_code == 302 and activated["Location"] == "/?" + QUERY
    assert client.get(reverse("launches:list")).status_code == 200


def test_signup_ignores_a_next_on_another_site(client):
    response = client.post(
        reverse("signup"),
        {
            "username": "eve",
            "email": "eve@example.com",
            "password1": "correct-horse-battery",
            "password2": "correct-horse-battery",
            "next": "https://elsewhere.example/",
        },
    )
    assert response.status_code == 200
    assert "elsewhere" not in mail.outbox[-1].body


def test_signup_shows_errors(client):
    response = client.post(reverse("signup"), {"username": "x", "email": "not-an-email"})
    assert response.status_code == 200
    assert b"Enter a valid email address." in response.content


def test_password_reset_sends_a_link(client, make_user):
    make_user("lin")
    response = client.post(reverse("password_reset"), {"email": "lin@example.com"}, follow=True)
    assert b"Check your email" in response.content
    assert len(mail.outbox) == 1
    assert "Reset your Node Lodge password" == mail.outbox[0].subject
    assert "/accounts/reset/" in mail.outbox[0].body


def test_staff_see_every_booking_in_the_admin(client, small_catalog, make_user):
    booked(make_user(), small_catalog.machine())
    client.force_login(make_user(is_staff=True, is_superuser=True))
    response = client.get(reverse("admin:launches_booking_changelist"), {"status__exact": "running"})
    assert response.status_code == 200
    assert b"1 booking" in response.content


def test_ended_bookings_are_listed_with_their_cost(client, small_catalog, make_user):
    user = make_user()
    client.force_login(user)
    machine = small_catalog.machine()
    booking = booked(user, machine)
    stop(user, booking.pk, now=booking.started_at + timedelta(hours=2))
    page = client.get(reverse("launches:list")).content.decode()
    assert "Nothing running." in page and "$4.98" in page
    assert Machine.objects.get(pk=machine.pk).free_gpus == 2


def test_the_refusal_pages_alternative_shows_where_its_memory_figure_comes_from(client, small_catalog, make_user):
    client.force_login(make_user())
    changed = small_catalog.machine(free_gpus=2)
    small_catalog.machine(price_per_gpu_hour=Decimal("3.10"), memory_source="datasheet")
    content = client.post(reverse("launches:launch"), launch_data(changed, gpus=2, price="4.98")).content.decode()
    assert '<span class="muted">datasheet</span>' in content


def test_a_price_reads_the_same_in_the_flash_message_and_on_my_launches(client, small_catalog, make_user):
    client.force_login(make_user())
    machine = small_catalog.machine(price_per_gpu_hour=Decimal("2.4850"))
    response = client.post(reverse("launches:launch"), launch_data(machine, price="2.485"), follow=True)
    content = response.content.decode()
    assert "at $2.485/h" in content  # the flash message
    assert content.count("$2.485") >= 2  # and the booking's row
    assert "$2.48<" not in content and "$2.49" not in content


def test_the_refusal_pages_alternative_links_its_gpu_name_to_its_price_history(client, small_catalog, make_user):
    """As the result's rows do (`gpu_history_paths`, the same row partial): one place makes the link."""
    client.force_login(make_user())
    changed = small_catalog.machine(free_gpus=2)
    small_catalog.machine(price_per_gpu_hour=Decimal("3.10"))
    history = "/gpus/h100-sxm-80gb/history/"

    content = client.post("/launch/", launch_data(changed, gpus=2, price="4.98")).content.decode()
    german = client.post("/de/launch/", launch_data(changed, gpus=2, price="4.98")).content.decode()

    assert (f'<a href="{history}" class="gpu-history-link" data-testid="gpu-history-link" '
            'title="Price history of the H100 SXM 80GB">H100 SXM 80GB</a>') in content
    assert f'<a href="/de{history}" class="gpu-history-link"' in german
