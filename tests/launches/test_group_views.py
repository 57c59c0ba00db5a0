"""A cluster or a throughput plan through HTTP: the button's form, the review, Confirm, the refusal
page, My launches' one entry with its machines and one Stop, in English and German."""
from __future__ import annotations

import re
import uuid
from decimal import Decimal
from urllib.parse import urlparse

import pytest
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse

from catalog.models import Machine
from nodelodge.launches.booking import launch
from nodelodge.launches.models import Booking, LaunchGroup
from nodelodge.wizard.rows import group_form_words
from tests.factories import make_measured_speed
from tests.helpers import LLAMA_8B as QUERY

pytestmark = pytest.mark.django_db


def group_data(machines, *, kind="cluster", price=None, key=None, query=QUERY) -> dict:
    pairs = [(m.pk, m.gpu_count) for m in machines] if kind == "cluster" else machines
    if price is None:
        price = str(sum(Machine.objects.get(pk=i).price_per_gpu_hour * g for i, g in pairs))
    data = {"kind": kind, "machines": ",".join(f"{i}:{g}" for i, g in pairs), "price_per_hour": price,
            "query": query}
    if key is not False:
        data["idempotency_key"] = key or uuid.uuid4().hex
    return data


def hidden(page: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', page).group(1)


def test_the_include_writes_the_machines_price_query_and_the_buttons_words(cluster_catalog):
    machines = [{"id": 12, "gpus": 8}, {"id": 1234567, "gpus": 8}]
    context = {"group_price_per_hour": "1234.5600", "query_string": "a=1&b=2"}
    cluster = render_to_string("launches/_launch_group_form.html", {
        **context, **group_form_words("cluster", machines, "2 × (8 × H100) at Harbor, FRA"), "group_kind": "cluster"})
    plan = render_to_string("launches/_launch_group_form.html", {
        **context, **group_form_words("plan", machines, "Cheapest plan"), "group_kind": "plan"})
    assert f'action="{reverse("launches:group_review")}"' in cluster and 'method="post"' in cluster
    assert hidden(cluster, "machines") == "12:8,1234567:8"  # never "1,234,567"
    assert hidden(cluster, "price_per_hour") == "1234.5600" and hidden(cluster, "query") == "a=1&amp;b=2"
    assert ">Launch cluster</button>" in cluster and hidden(cluster, "kind") == "cluster"
    assert ">Launch this plan</button>" in plan and 'aria-label="Launch this plan: Cheapest plan"' in plan
    assert 'aria-label="Launch cluster: 2 × (8 × H100) at Harbor, FRA"' in cluster
    assert "csrfmiddlewaretoken" not in cluster  # the result is one copy for every client
    from django.utils import translation

    with translation.override("de"):
        german = render_to_string("launches/_launch_group_form.html", {
            **context, **group_form_words("cluster", machines, "2 × (8 × H100)"), "group_kind": "cluster"})
    assert ">Cluster starten</button>" in german and hidden(german, "machines") == "12:8,1234567:8"
    assert 'aria-label="Cluster starten: 2 × (8 × H100)"' in german


def test_review_then_confirm_books_the_cluster_and_my_launches_shows_it_as_one_entry(
    client, cluster_catalog, make_user
):
    user = make_user()
    client.force_login(user)
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]

    review = client.post(reverse("launches:group_review"), group_data(machines, key=False))

    assert review.status_code == 200
    page = review.content.decode()
    assert "Review the cluster" in page and "$39.84/h" in page
    assert all(m.provider_machine_id in page for m in machines)
    assert not Booking.objects.exists()  # the review books nothing
    confirm = {name: hidden(page, name) for name in ("kind", "machines", "price_per_hour", "idempotency_key")}
    confirm["query"] = QUERY

    booked = client.post(reverse("launches:group_launch"), confirm)

    assert booked.status_code == 303 and booked["Location"] == reverse("launches:list")
    group = LaunchGroup.objects.get(user=user)
    assert group.bookings.count() == 2
    listing = client.get(reverse("launches:list")).content.decode()
    assert "Launched a cluster of 2 machines at $39.84/h." in listing
    entry = listing[listing.index(f'data-group-id="{group.pk}"'):]
    entry = entry[:entry.index("</tr>")]
    assert "Cluster" in entry and "2 machines, 16 GPUs" in entry and "$39.84" in entry
    assert all(m.provider_machine_id in entry and "8 × H100 SXM 80GB" in entry for m in machines)
    assert entry.count(reverse("launches:group_stop", args=[group.pk])) == 1
    # The group's bookings are not listed again one by one.
    assert all(f'data-booking-id="{b.pk}"' not in listing for b in group.bookings.all())


def test_the_groups_stop_asks_first_then_stops_every_machine(client, cluster_catalog, make_user):
    user = make_user()
    client.force_login(user)
    machines = [cluster_catalog.cluster_machine() for _ in range(3)]
    group = launch(user, machines=[(m.pk, 8) for m in machines],
                                  shown_price_per_hour=Decimal("59.76"), query_string=QUERY,
                                  idempotency_key=uuid.uuid4().hex, kind="cluster").group
    member = group.bookings.first()

    asked = client.get(reverse("launches:group_stop", args=[group.pk]))
    assert asked.status_code == 200
    assert "A cluster of 3 machines" in asked.content.decode()
    assert Booking.objects.filter(status="running").count() == 3
    # A member's own Stop page leads to the group's.
    assert client.get(reverse("launches:stop", args=[member.pk]))["Location"] == reverse(
        "launches:group_stop", args=[group.pk])

    stopped = client.post(reverse("launches:group_stop", args=[group.pk]))

    assert stopped.status_code == 303
    assert set(Booking.objects.values_list("status", flat=True)) == {"ended"}
    assert [m.free_gpus for m in Machine.objects.filter(pk__in=[m.pk for m in machines])] == [8, 8, 8]
    listing = client.get(reverse("launches:list")).content.decode()
    assert "Stopped. 24 GPUs on 3 machines freed." in listing
    assert 'data-testid="ended-groups"' in listing and reverse("launches:group_stop", args=[group.pk]) not in listing
    # Someone else's group is not found.
    other = Client()
    other.force_login(make_user())
    assert other.get(reverse("launches:group_stop", args=[group.pk])).status_code == 404
    assert other.post(reverse("launches:group_stop", args=[group.pk])).status_code == 404


def test_a_machine_gone_before_confirm_is_named_nothing_is_booked_and_the_result_is_linked(
    client, cluster_catalog, make_user
):
    client.force_login(make_user())
    machines = [cluster_catalog.cluster_machine() for _ in range(3)]
    data = group_data(machines)
    launch(
        make_user(), machines=[(machines[2].pk, 1)], shown_price_per_hour=Decimal("2.49"), query_string=QUERY,
        idempotency_key=uuid.uuid4().hex,
    )  # someone else

    refused = client.post(reverse("launches:group_launch"), data)

    assert refused.status_code == 409
    page = refused.content.decode()
    assert machines[2].provider_machine_id in page and "someone else booked first" in page
    assert "Nothing was booked:" in page and "a cluster is booked whole or not at all." in page
    back = re.search(r'href="([^"]+)" data-testid="back-to-result"', page).group(1).replace("&amp;", "&")
    assert urlparse(back).path == reverse("wizard:start") and "model=llama-3-1-8b" in back
    assert "it offers the next cluster" in page
    assert Booking.objects.count() == 1  # only the other user's
    assert [Machine.objects.get(pk=m.pk).free_gpus for m in machines[:2]] == [8, 8]


def test_the_review_says_when_confirm_would_be_refused(client, cluster_catalog, make_user):
    client.force_login(make_user())
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    Machine.objects.filter(pk=machines[1].pk).update(site="ams-2")

    review = client.post(reverse("launches:group_review"), group_data(machines, key=False))

    page = review.content.decode()
    assert review.status_code == 200 and 'role="alert"' in page
    assert f"{machines[1].provider_machine_id} is not identical to" in page
    assert f'action="{reverse("launches:group_launch")}"' not in page  # no Confirm


def test_submitting_the_confirm_twice_books_once(client, cluster_catalog, make_user):
    client.force_login(make_user())
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    data = group_data(machines)

    first = client.post(reverse("launches:group_launch"), data)
    second = client.post(reverse("launches:group_launch"), data)

    assert first.status_code == second.status_code == 303
    assert LaunchGroup.objects.count() == 1 and Booking.objects.count() == 2


def test_anonymous_buttons_ask_to_sign_in_and_lead_back_to_the_result(client, cluster_catalog):
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    for name in ("launches:group_review", "launches:group_launch"):
        response = client.post(reverse(name), group_data(machines))
        assert response.status_code == 302 and urlparse(response["Location"]).path == reverse("login")
        assert "model%3Dllama-3-1-8b" in response["Location"]
    assert not Booking.objects.exists()


INCOMPLETE = "This Launch form is incomplete; reload the result and try again."


@pytest.mark.parametrize(("change", "says"), [
    ({"machines": "abc"}, INCOMPLETE), ({"machines": "1:8,,2:8"}, INCOMPLETE), ({"machines": ""}, INCOMPLETE),
    ({"kind": "rack"}, INCOMPLETE), ({"price_per_hour": "x"}, INCOMPLETE), ({"idempotency_key": "short"}, INCOMPLETE),
    ({"machines": "1:8,1:8"}, "Each machine can be in a group once."),
    ({"machines": "1:99"}, "Each machine takes from 1 to 16 GPUs."),
    ({"machines": ",".join(f"{i}:1" for i in range(1, 10_002))}, "A group books from 1 to 10,000 machines."),
])
def test_a_bad_form_answers_400_saying_why_and_books_nothing(client, cluster_catalog, make_user, change, says):
    client.force_login(make_user())
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    for name in ("launches:group_review", "launches:group_launch"):
        response = client.post(reverse(name), group_data(machines) | change)
        if name == "launches:group_review" and "idempotency_key" in change:
            assert response.status_code == 200  # the review issues its own key
            continue
        assert response.status_code == 400, (name, change)
        assert response.content.decode() == says
    assert not Booking.objects.exists()


def test_confirm_needs_the_csrf_token_and_the_review_does_not(cluster_catalog, make_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user())
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    assert client.post(reverse("launches:group_review"), group_data(machines, key=False)).status_code == 200
    assert client.post(reverse("launches:group_launch"), group_data(machines)).status_code == 403
    assert not Booking.objects.exists()


def test_the_review_and_refusal_speak_german(client, cluster_catalog, make_user):
    client.force_login(make_user())
    machines = [cluster_catalog.cluster_machine() for _ in range(2)]
    review = client.post("/de/launch/group/review/", group_data(machines, key=False))
    page = review.content.decode()
    assert "Cluster prüfen" in page and "Bestätigen und 2 Maschinen für 39,84 $/h starten" in page
    Machine.objects.filter(pk=machines[0].pk).update(free_gpus=0)
    refused = client.post("/de/launch/group/", group_data(machines)).content.decode()
    assert "Nichts wurde gebucht" in refused and machines[0].provider_machine_id in refused


def test_the_plan_on_the_result_page_has_launch_this_plan_which_books_every_machine(
    client, cluster_catalog, make_user
):
    for price in ("2.10", "2.20", "2.30"):
        machine = cluster_catalog.machine(gpu_count=2, free_gpus=2, price_per_gpu_hour=Decimal(price))
        make_measured_speed(machine, "2000")
    query = f"{QUERY}&target_tokens=9000&efficiency=100&redundancy=0"
    plan = client.get(f"/api/v1/recommendations?{query}").json()["throughput_plan"]["plans"][0]
    assert [m["gpus"] for m in plan["machines"]] == [2, 2, 1]
    page = client.get(f"/?{query}").content.decode()
    section = page[page.index('data-testid="plan-1"'):]
    section = section[:section.index("</section>")]
    assert "Launch this plan</button>" in section
    sent = {name: hidden(section, name).replace("&amp;", "&") for name in ("kind", "machines", "price_per_hour", "query")}
    assert sent["machines"] == ",".join(f'{m["id"]}:{m["gpus"]}' for m in plan["machines"])
    assert sent["price_per_hour"] == plan["price_per_hour"] == "10.90" and sent["kind"] == "plan"

    user = make_user()
    client.force_login(user)
    review = client.post(reverse("launches:group_review"), sent).content.decode()
    assert "Review the plan" in review and "$10.90/h" in review
    booked = client.post(reverse("launches:group_launch"), sent | {"idempotency_key": hidden(review, "idempotency_key")})
    assert booked.status_code == 303
    group = LaunchGroup.objects.get(user=user)
    assert group.kind == "plan" and group.price_per_hour == Decimal("10.90")
    assert sorted(group.bookings.values_list("gpus", flat=True)) == [1, 2, 2]
    assert "Throughput plan" in client.get(reverse("launches:list")).content.decode()


LLAMA_405B_8K = "workload=inference&model=llama-3-1-405b&precision=16&context=8192&requests=1"


def test_a_refused_cluster_offers_the_next_cluster_without_the_machine_it_could_not_book(
    client, h100_site, make_user
):
    client.force_login(make_user())
    first, second, third = sorted(h100_site, key=lambda m: (m.price_per_gpu_hour, m.pk))
    data = group_data([first, second], query=LLAMA_405B_8K)
    launch(
        make_user(), machines=[(first.pk, 1)], shown_price_per_hour=first.price_per_gpu_hour,
        query_string=QUERY, idempotency_key=uuid.uuid4().hex,
    )  # one GPU taken

    refused = client.post(reverse("launches:group_launch"), data)

    assert refused.status_code == 409
    page = refused.content.decode()
    assert first.provider_machine_id in page and "Next-cheapest cluster" in page
    [row] = re.findall(r'data-testid="cluster-row" data-machine-ids="([^"]+)"', page)
    assert row == f"{second.pk},{third.pk}"  # the other two machines of the site, $44/h
    assert "$44.00" in page and "Launch cluster" in page
    assert Booking.objects.count() == 1


def test_a_cluster_refused_for_its_price_offers_no_other_cluster(client, h100_site, make_user):
    client.force_login(make_user())
    first, second, _third = sorted(h100_site, key=lambda m: (m.price_per_gpu_hour, m.pk))

    refused = client.post(reverse("launches:group_launch"),
                          group_data([first, second], query=LLAMA_405B_8K, price="39.00"))

    assert refused.status_code == 409
    assert "Next-cheapest cluster" not in refused.content.decode()


def test_a_plans_review_names_the_throughput_it_was_sized_for(client, cluster_catalog, make_user):
    for price in ("2.10", "2.20", "2.30"):
        machine = cluster_catalog.machine(gpu_count=2, free_gpus=2, price_per_gpu_hour=Decimal(price))
        make_measured_speed(machine, "2000")
    query = f"{QUERY}&target_tokens=9000&efficiency=100&redundancy=0"
    page = client.get(f"/?{query}").content.decode()
    section = page[page.index('data-testid="plan-1"'):]
    sent = {name: hidden(section, name).replace("&amp;", "&") for name in ("kind", "machines", "price_per_hour", "query")}
    client.force_login(make_user())
    review = client.post(reverse("launches:group_review"), sent).content.decode()
    assert re.search(r'<dt>Throughput to serve</dt><dd data-testid="review-target">9,000 tokens/s</dd>', review)
    german = client.post("/de" + reverse("launches:group_review"), sent).content.decode()
    assert 'data-testid="review-target">9.000 Token/s</dd>' in german


def test_a_cluster_refused_because_the_feed_changed_its_free_gpus_says_the_feed_not_someone_else(
    client, cluster_catalog, make_user
):
    client.force_login(make_user())
    machines = [cluster_catalog.cluster_machine() for _ in range(3)]
    Machine.objects.filter(pk=machines[2].pk).update(free_gpus=4)  # the provider's feed, no booking

    refused = client.post(reverse("launches:group_launch"), group_data(machines))

    assert refused.status_code == 409
    page = refused.content.decode()
    assert machines[2].provider_machine_id in page
    assert "its provider&#x27;s feed reports fewer free GPUs since the result" in page
    assert "someone else" not in page
    assert not Booking.objects.exists()
