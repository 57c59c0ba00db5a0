"""A bid on an interruptible Launch: the review offers it at the machine's floor (its interruptible
price) with what it means, Confirm books at the bid, and a bid below the floor or above the on-demand
price at booking time, or on a machine booked on demand, is refused beside its field with nothing booked
and nothing typed lost. What the budget covers is worked out at the bid wherever one above the floor
is given (the review Confirm comes back to, the booking, My launches), and said to be at the floor
before any. Users racing with bids for an interruptible machine's last GPUs book exactly
those, each at its own bid; on PostgreSQL against its row locks, on SQLite against its write lock."""
from __future__ import annotations

import uuid
from decimal import Decimal
from html import escape
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import translation

from catalog.models import Machine
from nodelodge.launches.booking import LaunchOutcome, launch
from nodelodge.launches.models import Booking
from nodelodge.launches.refusals import BidRefused, GroupInputError, LaunchRefused
from nodelodge.launches.review import review
from tests.helpers import LLAMA_8B as QUERY
from tests.helpers import race_outcomes

THREADS = 8
FLOOR = Decimal("0.6149")
INTERRUPTIBLE_QUERY = QUERY + "&market=interruptible"
LAUNCH = "/launch/"  # the English address; "/de" + it the German one
BELOW_THE_FLOOR = "Bid at least $0.6149 per GPU-hour, this machine's floor."
BELOW_THE_FLOOR_DE = "Bieten Sie mindestens 0,6149 $ pro GPU-Stunde, das Mindestgebot dieser Maschine."


def spot_machine(catalog, **overrides) -> Machine:
    """A machine listed interruptible at the floor: no on-demand price, so only the fixed maximum bounds a bid."""
    return catalog.machine(**{"price_per_gpu_hour": FLOOR, "interruptible": True, **overrides})


def dual_machine(catalog, **overrides) -> Machine:
    """On demand at $2.00, interruptible from the floor: a result allowing interruptible prices books it there."""
    return catalog.machine(**{"price_per_gpu_hour": Decimal("2.00"), "interruptible_price_per_gpu_hour": FLOOR,
                              **overrides})


def bid_launch(user, machine, bid, *, gpus=1, query=QUERY, market=None, price=None, key=None):
    return launch(
        user, machines=[(machine.pk, gpus)], shown_price_per_hour=price if price is not None else FLOOR * gpus,
        query_string=query, idempotency_key=key or uuid.uuid4().hex, market=market,
        bid_per_gpu_hour=None if bid is None else Decimal(bid),
    )


# --- The booking pipeline ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_bid_at_the_floor_books_the_interruptible_market_at_it(small_catalog, make_user):
    spot = spot_machine(small_catalog)

    booking = bid_launch(make_user(), spot, "0.6149", market="interruptible").booking

    stored = Booking.objects.get(pk=booking.pk)
    assert (stored.market, stored.bid_per_gpu_hour, stored.price_per_gpu_hour, stored.price_per_hour) == (
        "interruptible", FLOOR, FLOOR, FLOOR)
    assert Machine.objects.get(pk=spot.pk).free_gpus == 1


@pytest.mark.django_db
def test_a_bid_above_the_floor_is_the_price_booked_and_what_the_budget_pays(small_catalog, make_user):
    dual = dual_machine(small_catalog)
    query = INTERRUPTIBLE_QUERY + "&budget=8"

    booking = bid_launch(make_user(), dual, "0.80", query=query, market="interruptible").booking

    assert (booking.market, booking.bid_per_gpu_hour, booking.price_per_hour) == (
        "interruptible", Decimal("0.80"), Decimal("0.80"))
    assert booking.hours_covered == Decimal("10.00")  # $8 at $0.80/h, not 13.01 h at the floor


@pytest.mark.django_db
def test_a_floor_that_moved_since_the_review_books_at_the_bid_while_the_bid_covers_it(small_catalog, make_user):
    """The bid is the price: a floor that rose (but not past it) is no price change."""
    spot = spot_machine(small_catalog)
    Machine.objects.filter(pk=spot.pk).update(price_per_gpu_hour=Decimal("0.70"),
                                              interruptible_price_per_gpu_hour=Decimal("0.70"))

    booking = bid_launch(make_user(), spot, "0.75", market="interruptible").booking

    assert (booking.price_per_gpu_hour, booking.bid_per_gpu_hour) == (Decimal("0.75"), Decimal("0.75"))


@pytest.mark.django_db
def test_a_bid_below_the_floor_at_booking_time_is_refused_naming_the_floor_and_books_nothing(
    small_catalog, make_user
):
    spot = spot_machine(small_catalog, free_gpus=2)

    with pytest.raises(BidRefused) as refused:
        bid_launch(make_user(), spot, "0.6148", market="interruptible")

    assert refused.value.errors == {"bid_per_gpu_hour": BELOW_THE_FLOOR}
    assert not Booking.objects.exists()
    assert Machine.objects.get(pk=spot.pk).free_gpus == 2


@pytest.mark.django_db
def test_a_floor_that_rose_past_the_bid_since_the_review_is_named_in_the_refusal(small_catalog, make_user):
    spot = spot_machine(small_catalog)
    Machine.objects.filter(pk=spot.pk).update(price_per_gpu_hour=Decimal("0.70"),
                                              interruptible_price_per_gpu_hour=Decimal("0.70"))

    with pytest.raises(BidRefused) as refused:
        bid_launch(make_user(), spot, "0.6149", market="interruptible")

    assert refused.value.errors == {"bid_per_gpu_hour": "Bid at least $0.70 per GPU-hour, this machine's floor."}
    assert not Booking.objects.exists()


@pytest.mark.django_db
def test_a_bid_above_the_on_demand_price_is_refused_naming_it(small_catalog, make_user):
    dual = dual_machine(small_catalog)

    with pytest.raises(BidRefused) as refused:
        bid_launch(make_user(), dual, "2.0001", query=INTERRUPTIBLE_QUERY, market="interruptible")
    booked = bid_launch(make_user(), dual, "2.00", query=INTERRUPTIBLE_QUERY, market="interruptible").booking

    assert refused.value.errors == {"bid_per_gpu_hour": (
        "Bid at most $2.00 per GPU-hour, this machine's on-demand price, at which nobody takes it back.")}
    assert list(Booking.objects.values_list("pk", "price_per_gpu_hour")) == [(booked.pk, Decimal("2.00"))]


@pytest.mark.django_db
def test_a_machine_listed_interruptible_only_takes_a_bid_above_its_floor(small_catalog, make_user):
    """No on-demand price to bound it: the fixed maximum (the form's and the API's) does."""
    spot = spot_machine(small_catalog)

    booking = bid_launch(make_user(), spot, "9.50").booking

    assert (booking.market, booking.price_per_gpu_hour) == ("interruptible", Decimal("9.50"))


@pytest.mark.django_db
@pytest.mark.parametrize("market", ["on_demand", "reserved"])
def test_a_bid_with_another_market_named_is_refused_before_anything_is_read(
    small_catalog, make_user, market, django_assert_num_queries
):
    machine = small_catalog.machine()
    user = make_user()

    with django_assert_num_queries(0), pytest.raises(BidRefused) as refused:
        bid_launch(user, machine, "2.49", market=market, price=Decimal("2.49"))

    assert list(refused.value.errors) == ["bid_per_gpu_hour"]
    assert "Only an interruptible machine takes a bid" in refused.value.errors["bid_per_gpu_hour"]


@pytest.mark.django_db
def test_a_bid_on_a_machine_booked_on_demand_is_refused_under_the_lock(small_catalog, make_user):
    """No market named (a script): the machine's market now decides; an on-demand one takes no bid."""
    dual = dual_machine(small_catalog)  # on demand under the default market preference

    with pytest.raises(BidRefused) as refused:
        bid_launch(make_user(), dual, "0.80", price=Decimal("2.00"))

    assert refused.value.errors == {"bid_per_gpu_hour": (
        "Only an interruptible machine takes a bid; this one is booked on demand, at its price. Leave the bid out.")}
    assert not Booking.objects.exists() and Machine.objects.get(pk=dual.pk).free_gpus == 2


@pytest.mark.django_db
def test_a_market_that_changed_since_the_review_is_a_market_change_even_with_a_bid(small_catalog, make_user):
    machine = small_catalog.machine()  # on demand now; the review had it interruptible

    with pytest.raises(LaunchRefused) as refused:
        bid_launch(make_user(), machine, "0.80", market="interruptible")

    assert refused.value.code == LaunchRefused.MARKET_CHANGED
    assert not Booking.objects.exists()


@pytest.mark.django_db
def test_a_group_takes_no_bid(cluster_catalog, make_user):
    machine = cluster_catalog.cluster_machine()
    with pytest.raises(GroupInputError) as refused:
        launch(make_user(), machines=[(machine.pk, 8)], shown_price_per_hour=Decimal("19.92"), query_string=QUERY,
               idempotency_key=uuid.uuid4().hex, kind="cluster", bid_per_gpu_hour=Decimal("3"))
    assert refused.value.errors == {"bid_per_gpu_hour": "A bid is for one machine booked alone."}


@pytest.mark.django_db
def test_the_database_keeps_a_bid_only_as_an_interruptible_bookings_price(small_catalog, make_user):
    booking = bid_launch(make_user(), spot_machine(small_catalog), "0.70")
    for change in ({"market": "on_demand"}, {"price_per_gpu_hour": Decimal("0.71")}):
        with pytest.raises(IntegrityError), transaction.atomic():
            Booking.objects.filter(pk=booking.booking.pk).update(**change)


# --- Many at once ---------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("free", [1, 2])
def test_users_racing_with_bids_for_an_interruptible_machine_book_exactly_its_free_gpus(small_catalog, make_user, free):
    dual = dual_machine(small_catalog, gpu_count=4, free_gpus=free)
    bids = [Decimal("0.6149") + Decimal("0.05") * n for n in range(THREADS)]
    calls = [
        lambda user=make_user(), bid=bid: bid_launch(user, dual, bid, query=INTERRUPTIBLE_QUERY, market="interruptible")
        for bid in bids
    ]

    results = race_outcomes(calls)

    won = [r for r in results if isinstance(r, LaunchOutcome)]
    lost = [r for r in results if not isinstance(r, LaunchOutcome)]
    assert len(won) == free and all(isinstance(r, LaunchRefused) and r.code == LaunchRefused.TAKEN for r in lost), results
    booked = sorted(Booking.objects.filter(machine=dual).values_list("market", "bid_per_gpu_hour", "price_per_hour"))
    assert booked == sorted(("interruptible", r.booking.bid_per_gpu_hour, r.booking.bid_per_gpu_hour) for r in won)
    assert {bid for _market, bid, _price in booked} <= set(bids)
    assert Machine.objects.get(pk=dual.pk).free_gpus == 0


@pytest.mark.django_db(transaction=True)
def test_two_bids_at_once_the_one_below_the_floor_books_nothing_and_the_other_books(small_catalog, make_user):
    spot = spot_machine(small_catalog, gpu_count=2, free_gpus=2)
    low, high = make_user(), make_user()

    results = race_outcomes([lambda: bid_launch(low, spot, "0.61"), lambda: bid_launch(high, spot, "0.65")])

    assert isinstance(results[0], BidRefused) and isinstance(results[1], LaunchOutcome), results
    assert list(Booking.objects.values_list("user_id", "bid_per_gpu_hour")) == [(high.pk, Decimal("0.65"))]
    assert Machine.objects.get(pk=spot.pk).free_gpus == 1


# --- The review and Confirm -----------------------------------------------------------------------------


def review_path(machine, *, prefix="", price=FLOOR, query=QUERY) -> str:
    return f"{prefix}/launch/review/?machine={machine.pk}&gpus=1&price_per_hour={price}&query={quote(query)}"


def confirm_data(machine, bid, *, market="interruptible", price=FLOOR, query=QUERY, key=None) -> dict:
    data = {"machine": machine.pk, "gpus": 1, "price_per_hour": str(price), "query": query, "market": market,
            "idempotency_key": key or uuid.uuid4().hex}
    return data if bid is None else {**data, "bid_per_gpu_hour": bid}


@pytest.mark.django_db
def test_the_review_of_an_interruptible_machine_offers_a_bid_at_the_floor_and_says_what_it_does(
    client, small_catalog, make_user
):
    client.force_login(make_user())
    dual = dual_machine(small_catalog)

    page = client.get(review_path(dual, query=INTERRUPTIBLE_QUERY)).content.decode()
    german = client.get(review_path(dual, prefix="/de", query=INTERRUPTIBLE_QUERY)).content.decode()

    assert 'name="bid_per_gpu_hour" id="id_bid_per_gpu_hour" inputmode="decimal"' in page
    assert 'value="0.6149" aria-describedby="bid-help"' in page
    assert ("An interruptible machine runs while your bid is at least its floor, now $0.6149; when the floor "
            "rises above your bid, the provider takes it back. A higher bid keeps it when the floor rises. You "
            "pay your bid, at most $2.00: its on-demand price, at which nobody takes it back.") in page
    assert "Confirm and launch at your bid" in page
    assert "1 × $0.6149 per GPU-hour" in page  # the interruptible price, not the listed one
    assert 'value="0,6149" aria-describedby="bid-help"' in german
    assert "Ihr Gebot pro GPU-Stunde (USD)" in german and "jetzt 0,6149 $" in german
    assert "höchstens 2,00 $: ihren Preis auf Abruf" in german


@pytest.mark.django_db
def test_the_review_of_a_machine_listed_interruptible_only_names_no_ceiling(client, small_catalog, make_user):
    client.force_login(make_user())
    page = client.get(review_path(spot_machine(small_catalog))).content.decode()
    assert "now $0.6149; when the floor rises above your bid, the provider takes it back." in page
    assert "You pay your bid.</p>" in page and "on-demand price" not in page


@pytest.mark.django_db
def test_the_review_of_an_on_demand_machine_offers_no_bid(client, small_catalog, make_user):
    client.force_login(make_user())
    page = client.get(review_path(small_catalog.machine(), price="2.49")).content.decode()
    assert "bid_per_gpu_hour" not in page and "Confirm and launch at $2.49/h" in page


@pytest.mark.django_db
def test_confirm_books_at_the_bid_typed_in_the_pages_language(client, small_catalog, make_user):
    client.force_login(make_user())
    dual = dual_machine(small_catalog)

    response = client.post("/de" + LAUNCH, confirm_data(dual, "0,80", query=INTERRUPTIBLE_QUERY))

    assert response.status_code == 303
    assert list(Booking.objects.values_list("market", "bid_per_gpu_hour", "price_per_hour")) == [
        ("interruptible", Decimal("0.80"), Decimal("0.80"))]


@pytest.mark.django_db
@pytest.mark.parametrize(("prefix", "message"), [("", BELOW_THE_FLOOR), ("/de", BELOW_THE_FLOOR_DE)])
def test_confirm_below_the_floor_shows_the_review_again_with_the_floor_beside_the_bid(
    client, small_catalog, make_user, prefix, message
):
    client.force_login(make_user())
    spot = spot_machine(small_catalog)
    data = confirm_data(spot, "0.5")

    response = client.post(prefix + LAUNCH, data)

    assert response.status_code == 422
    page = response.content.decode()
    assert f'<span class="field-error" id="err-bid_per_gpu_hour" data-testid="bid-error">{escape(message)}</span>' in page
    assert 'value="0.5" aria-describedby="bid-help err-bid_per_gpu_hour" aria-invalid="true"' in page
    assert f'name="idempotency_key" value="{data["idempotency_key"]}"' in page  # the same Confirm, again
    assert not Booking.objects.exists() and Machine.objects.get(pk=spot.pk).free_gpus == 2


@pytest.mark.django_db
@pytest.mark.parametrize(("typed", "message"), [
    ("cheap", "Enter your bid in USD per GPU-hour, e.g. 0.75."),
    ("0.12345", "A bid has at most 4 decimal places, as prices do."),
    ("-1", "A bid is a number of USD per GPU-hour from 0 to 10,000."),
    ("10000.01", "A bid is a number of USD per GPU-hour from 0 to 10,000."),
])
def test_a_bid_that_cannot_be_read_is_a_400_beside_its_field_with_what_was_typed(
    client, small_catalog, make_user, typed, message
):
    client.force_login(make_user())
    spot = spot_machine(small_catalog)

    response = client.post(LAUNCH, confirm_data(spot, typed))

    assert response.status_code == 400
    page = response.content.decode()
    assert f'data-testid="bid-error">{message}</span>' in page and f'value="{typed}"' in page
    assert not Booking.objects.exists()


@pytest.mark.django_db
def test_a_bid_sent_with_an_on_demand_review_is_a_conflict_beside_the_field(client, small_catalog, make_user):
    client.force_login(make_user())
    machine = small_catalog.machine()

    response = client.post(LAUNCH, confirm_data(machine, "2.49", market="on_demand", price="2.49"))

    assert response.status_code == 422
    page = response.content.decode()
    assert ("Only an interruptible machine takes a bid; this one is booked on demand, at its price. Leave the bid "
            "out.") in page
    assert 'value="2.49" aria-describedby=" err-bid_per_gpu_hour" aria-invalid="true"' in page
    assert not Booking.objects.exists()
    # Cleared, the same review's Confirm books on demand.
    cleared = client.post(LAUNCH, confirm_data(machine, "", market="on_demand", price="2.49"))
    assert cleared.status_code == 303
    assert list(Booking.objects.values_list("market", "bid_per_gpu_hour")) == [("on_demand", None)]


@pytest.mark.django_db
def test_the_bid_is_shown_on_my_launches_the_bookings_page_and_the_admin(client, small_catalog, make_user):
    user = make_user()
    booking = bid_launch(user, spot_machine(small_catalog), "0.70").booking
    client.force_login(user)
    with translation.override("en"):
        admin_path = reverse("admin:launches_booking_changelist")

    listing = client.get("/launches/").content.decode()
    page = client.get(f"/launches/{booking.pk}/stop/").content.decode()
    german = client.get("/de/launches/").content.decode()

    assert "interruptible, at your bid of $0.70 per GPU-hour" in listing
    assert "Market: interruptible, at your bid of $0.70 per GPU-hour." in page
    assert "unterbrechbar, zu Ihrem Gebot von 0,70 $ pro GPU-Stunde" in german
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "a-long-passphrase"))
    admin_list = client.get(admin_path).content.decode()
    assert "column-bid_per_gpu_hour" in admin_list and "0.7000" in admin_list


# --- What the budget covers: at the bid, as the booking stores it -----------------------------------------

BUDGET_QUERY = INTERRUPTIBLE_QUERY + "&budget=8"
AT_THE_FLOOR = "At the floor price; a higher bid covers fewer hours."
AT_THE_FLOOR_DE = "Zum Mindestgebot; ein höheres Gebot reicht für weniger Stunden."


def budget_line(page: str) -> str:
    """What the review's "Budget covers" says."""
    return page.split('data-testid="review-budget">', 1)[1].split("</dd>", 1)[0]


@pytest.mark.django_db
def test_the_reviews_cover_at_a_bid_is_the_cover_the_booking_stores(small_catalog, make_user):
    dual = dual_machine(small_catalog)

    at_bid = review("alone", [(dual.pk, 1)], FLOOR, BUDGET_QUERY, bid=Decimal("0.80"))
    at_floor = review("alone", [(dual.pk, 1)], FLOOR, BUDGET_QUERY)
    booking = bid_launch(make_user(), dual, "0.80", query=BUDGET_QUERY, market="interruptible").booking

    assert (at_bid.budget_at_bid, at_bid.hours_covered, at_bid.budget_text) == (
        True, Decimal("10.00"), "$8.00 covers 10.0 hours at $0.80/h")
    assert at_bid.hours_covered == booking.hours_covered
    assert (at_floor.budget_at_bid, at_floor.hours_covered) == (False, Decimal("13.01"))  # $8 at the floor
    assert at_bid.price_per_hour == at_floor.price_per_hour == FLOOR  # the price shown stays the floor's


@pytest.mark.django_db
@pytest.mark.parametrize("bid", ["0.6149", "0.5"])
def test_a_bid_not_above_the_floor_leaves_the_cover_at_the_floor(small_catalog, bid):
    summary = review("alone", [(spot_machine(small_catalog).pk, 1)], FLOOR, QUERY + "&budget=8", bid=Decimal(bid))
    assert (summary.budget_at_bid, summary.hours_covered) == (False, Decimal("13.01"))


@pytest.mark.django_db
def test_a_bid_on_a_machine_booked_on_demand_changes_no_cover(small_catalog):
    machine = small_catalog.machine()  # on demand at $2.49: no bid is booked here
    summary = review("alone", [(machine.pk, 1)], Decimal("2.49"), QUERY + "&budget=8", bid=Decimal("3"))
    assert (summary.budget_at_bid, summary.hours_covered) == (False, Decimal("3.21"))


@pytest.mark.django_db
@pytest.mark.parametrize(("prefix", "cover", "note"), [
    ("", "$8.00 covers 13.0 hours at $0.6149/h", AT_THE_FLOOR),
    ("/de", "8,00 $ Budget reicht für 13,0 Stunden bei 0,6149 $/h", AT_THE_FLOOR_DE),
])
def test_the_review_before_any_bid_says_its_cover_is_at_the_floor(client, small_catalog, make_user, prefix, cover,
                                                                  note):
    client.force_login(make_user())

    page = client.get(review_path(dual_machine(small_catalog), prefix=prefix, query=BUDGET_QUERY)).content.decode()

    assert budget_line(page) == f'{cover} <span class="muted">{note}</span>'


@pytest.mark.django_db
def test_an_on_demand_review_says_nothing_of_a_floor(client, small_catalog, make_user):
    client.force_login(make_user())
    page = client.get(review_path(small_catalog.machine(), price="2.49", query=QUERY + "&budget=8")).content.decode()
    assert budget_line(page) == "$8.00 covers 3.2 hours at $2.49/h"


@pytest.mark.django_db
@pytest.mark.parametrize(("prefix", "typed", "cover"), [
    ("", "2.50", "$8.00 covers 3.2 hours at $2.50/h"),  # above the on-demand price: refused, covered at it
    ("/de", "2,50", "8,00 $ Budget reicht für 3,2 Stunden bei 2,50 $/h"),
])
def test_confirm_refused_with_a_bid_above_the_floor_shows_the_cover_at_the_bid(
    client, small_catalog, make_user, prefix, typed, cover
):
    client.force_login(make_user())

    response = client.post(prefix + LAUNCH, confirm_data(dual_machine(small_catalog), typed, query=BUDGET_QUERY))

    assert response.status_code == 422
    assert budget_line(response.content.decode()) == cover  # no word of the floor: the bid is what it pays
    assert not Booking.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("typed", "status"), [("0.5", 422), ("cheap", 400)])
def test_confirm_back_with_a_bid_below_the_floor_or_unreadable_covers_at_the_floor(
    client, small_catalog, make_user, typed, status
):
    client.force_login(make_user())

    response = client.post(LAUNCH, confirm_data(dual_machine(small_catalog), typed, query=BUDGET_QUERY))

    assert response.status_code == status
    assert budget_line(response.content.decode()) == (
        f'$8.00 covers 13.0 hours at $0.6149/h <span class="muted">{AT_THE_FLOOR}</span>')


@pytest.mark.django_db
@pytest.mark.parametrize(("prefix", "hours", "sentence"), [
    ("", "10.00 h", "The budget covers 10.00 h at $0.80/h."),
    ("/de", "10,00 Std.", "Das Budget reicht für 10,00 Std. bei 0,80 $/h."),
])
def test_my_launches_and_the_bookings_page_show_the_cover_at_the_bid(
    client, small_catalog, make_user, prefix, hours, sentence
):
    user = make_user()
    client.force_login(user)
    confirmed = client.post(prefix + LAUNCH, confirm_data(dual_machine(small_catalog), "0,80" if prefix else "0.80",
                                                          query=BUDGET_QUERY))
    booking = Booking.objects.get()

    listing = client.get(f"{prefix}/launches/").content.decode()
    page = client.get(f"{prefix}/launches/{booking.pk}/stop/").content.decode()

    assert confirmed.status_code == 303 and booking.hours_covered == Decimal("10.00")
    assert f"{hours}</td>" in listing and "13.01" not in listing and "13,01" not in listing
    assert f'<p class="muted" data-testid="booking-budget">{sentence}</p>' in page
