"""A cluster or a throughput plan booked under the market preference, through the one booking pipeline:
the review names each machine's market and price (and what an interruptible machine taken back does),
Confirm sends the markets it named back, every booking stores its machine's market and price, and a
machine priced in another market since the review is refused with the whole group (nothing booked).
The page in English and German, the API, the service; both databases."""
from __future__ import annotations

import re
import uuid
from decimal import Decimal

import pytest
from django.urls import reverse

from catalog.models import Machine
from nodelodge.accounts import tokens
from nodelodge.launches.booking import launch
from nodelodge.launches.models import Booking, LaunchGroup
from nodelodge.launches.refusals import GroupRefused
from nodelodge.launches.review import review
from tests.factories import make_measured_speed
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

INTERRUPTIBLE = LLAMA_8B + "&market=interruptible"


@pytest.fixture
def cluster(cluster_catalog) -> dict:
    """Two whole 8 × H100 machines at the cluster site: "spot", on demand at $2.49 and also offered
    interruptible at $1.25 with 30 seconds' notice, and "plain", on demand at $2.49 alone."""
    return {
        "spot": cluster_catalog.cluster_machine(interruptible_price_per_gpu_hour=Decimal("1.25"),
                                                interruption_notice_seconds=30),
        "plain": cluster_catalog.cluster_machine(),
    }


def machines_of(cluster: dict) -> list[tuple[int, int]]:
    return [(cluster["spot"].pk, 8), (cluster["plain"].pk, 8)]


def hidden(page: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', page).group(1)


def group_form(cluster: dict, price: str, query: str = INTERRUPTIBLE) -> dict:
    return {"kind": "cluster", "machines": f"{cluster['spot'].pk}:8,{cluster['plain'].pk}:8",
            "price_per_hour": price, "query": query}


def test_the_review_names_each_machines_market_and_price_and_confirm_books_them(client, cluster, make_user):
    client.force_login(make_user())
    page = client.post(reverse("launches:group_review"), group_form(cluster, "29.92")).content.decode()
    # $1.25 × 8 interruptible + $2.49 × 8 on demand.
    assert "$29.92/h" in page and "changed from" not in page
    assert re.findall(r'data-testid="review-machine-market">([^<]*)<', page) == [
        "interruptible: taken back with 30 seconds&#x27; notice", "on demand",
    ]
    assert "8 × $1.25" in page and "8 × $2.49" in page
    assert ('<p class="notice" data-testid="review-interruption">1 of its 2 machines is interruptible: if the '
            "provider takes it back, the model stops on the whole cluster") in page
    markets = hidden(page, "markets")
    assert markets == f"{cluster['spot'].pk}:interruptible,{cluster['plain'].pk}:on_demand"
    confirm = {name: hidden(page, name) for name in ("kind", "machines", "price_per_hour", "idempotency_key")}
    booked = client.post(reverse("launches:group_launch"), {**confirm, "markets": markets, "query": INTERRUPTIBLE})
    assert booked.status_code == 303, booked.content
    assert list(Booking.objects.order_by("machine_id").values_list(
        "machine_id", "market", "price_per_gpu_hour", "price_per_hour")) == [
        (cluster["spot"].pk, "interruptible", Decimal("1.25"), Decimal("10.00")),
        (cluster["plain"].pk, "on_demand", Decimal("2.49"), Decimal("19.92")),
    ]
    assert LaunchGroup.objects.get().price_per_hour == Decimal("29.92")


def test_the_review_speaks_german(client, cluster, make_user):
    client.force_login(make_user())
    page = client.post("/de/launch/group/review/", group_form(cluster, "29.92")).content.decode()
    assert re.findall(r'data-testid="review-machine-market">([^<]*)<', page)[1] == "auf Abruf"
    assert "1 seiner 2 Maschinen ist unterbrechbar" in page


def test_on_demand_only_books_every_machine_at_its_listed_price(cluster, make_user):
    summary = review("cluster", machines_of(cluster), Decimal("39.84"), LLAMA_8B)
    assert summary.interruption_note is None and summary.problem is None
    outcome = launch(make_user(), machines=machines_of(cluster), shown_price_per_hour=Decimal("39.84"),
                     query_string=LLAMA_8B, idempotency_key=uuid.uuid4().hex, kind="cluster")
    assert [(b.market, b.price_per_gpu_hour) for b in outcome.booked] == [("on_demand", Decimal("2.49"))] * 2


def test_a_machine_priced_in_another_market_since_the_review_refuses_the_whole_group(cluster, make_user):
    plain = cluster["plain"]
    # Listed interruptible now, at the price it had on demand: the total is the same, the market is not.
    Machine.objects.filter(pk=plain.pk).update(interruptible=True, interruptible_price_per_gpu_hour=Decimal("2.49"))
    with pytest.raises(GroupRefused) as refused:
        launch(make_user(), machines=machines_of(cluster), shown_price_per_hour=Decimal("29.92"),
               query_string=INTERRUPTIBLE, idempotency_key=uuid.uuid4().hex, kind="cluster",
               markets={cluster["spot"].pk: "interruptible", plain.pk: "on_demand"})
    assert refused.value.code == "market_changed" and refused.value.machine_id == plain.pk
    assert refused.value.message == (
        f"{plain.provider.name} {plain.provider_machine_id} is now offered interruptible, not on demand as the review "
        "showed; nothing was booked: check and launch again."
    )
    assert not Booking.objects.exists() and not LaunchGroup.objects.exists()
    assert Machine.objects.get(pk=cluster["spot"].pk).free_gpus == 8


def test_markets_for_machines_not_booked_are_a_bad_request(client, cluster, make_user):
    client.force_login(make_user())
    form = {**group_form(cluster, "29.92"), "idempotency_key": uuid.uuid4().hex}
    assert client.post(reverse("launches:group_launch"), {**form, "markets": "999999:on_demand"}).status_code == 400
    assert client.post(reverse("launches:group_launch"), {**form, "markets": f"{cluster['spot'].pk}:spot"}
                       ).status_code == 400
    assert not Booking.objects.exists()


def test_the_api_books_each_machines_market_and_refuses_one_that_changed(client, cluster, make_user):
    token = tokens.create_token(make_user())[1]
    query = dict(pair.split("=") for pair in INTERRUPTIBLE.split("&"))

    def body(markets: dict[int, str] | None = None) -> dict:
        return {"kind": "cluster", "price_per_hour": "29.92", "query": query, "idempotency_key": uuid.uuid4().hex,
                "machines": [{"id": i, "gpus": g, **({"market": markets[i]} if markets else {})}
                             for i, g in machines_of(cluster)]}

    def post(payload):
        return client.post("/api/v1/launches/group", payload, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {token}")

    wrong = post(body({cluster["spot"].pk: "on_demand", cluster["plain"].pk: "on_demand"}))
    assert wrong.status_code == 409 and wrong.json()["code"] == "market_changed"
    assert wrong.json()["machine_id"] == cluster["spot"].pk
    bad = post({**body(), "machines": [{"id": cluster["spot"].pk, "gpus": 8, "market": "spot"}]})
    assert bad.status_code == 400 and "market" in str(bad.json()["errors"])
    made = post(body({cluster["spot"].pk: "interruptible", cluster["plain"].pk: "on_demand"}))
    assert made.status_code == 201, made.content
    assert [(b["market"], b["price_per_gpu_hour"], b["price_per_hour"]) for b in made.json()["bookings"]] == [
        ("interruptible", "1.25", "10.00"), ("on_demand", "2.49", "19.92"),
    ]


def test_a_plan_books_each_machine_in_the_market_it_was_weighed_in(client, small_catalog, make_user):
    spot = small_catalog.machine(gpu_count=4, free_gpus=4, interruptible_price_per_gpu_hour=Decimal("1.00"))
    plain = small_catalog.machine(gpu_count=4, free_gpus=4)
    for machine in (spot, plain):
        make_measured_speed(machine, "75000")
    # Five one-GPU copies: the four of the interruptible machine at $1.00, one on demand at $2.49.
    query = INTERRUPTIBLE + "&target_tokens=180000&efficiency=75&redundancy=1"
    plan = client.get(f"/api/v1/recommendations?{query}").json()["throughput_plan"]["plans"][0]
    assert [(m["id"], m["gpus"], m["market"]) for m in plan["machines"]] == [
        (spot.pk, 4, "interruptible"), (plain.pk, 1, "on_demand"),
    ]
    assert plan["price_per_hour"] == "6.49" and plan["interruptible_machines"] == 1
    pairs = [(spot.pk, 4), (plain.pk, 1)]
    summary = review("plan", pairs, Decimal("6.49"), query)
    assert summary.problem is None and summary.price_per_hour == Decimal("6.49")
    assert summary.interruption_note.startswith("1 of its 2 machines is interruptible: if the provider takes it "
                                                "back, only its copies stop")
    outcome = launch(make_user(), machines=pairs, shown_price_per_hour=Decimal("6.49"),
                     query_string=query, idempotency_key=uuid.uuid4().hex, kind="plan",
                     markets={spot.pk: "interruptible", plain.pk: "on_demand"})
    assert [(b.machine_id, b.market, b.price_per_hour) for b in outcome.booked] == [
        (spot.pk, "interruptible", Decimal("4.00")), (plain.pk, "on_demand", Decimal("2.49")),
    ]
