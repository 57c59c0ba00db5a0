"""Answers served again while the fleet stands still: the same query in the same fleet state has the
same ETag, If-None-Match is answered 304 before anything is computed, a hot answer comes from the
cache, and every write (a booking, a refresh, a provider deactivated) and the passing of time give a
new ETag and a fresh answer. Writes commit (a transactional test), as they do in the console."""
from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.middleware.csrf import _unmask_cipher_token
from django.test import Client
from django.test.utils import CaptureQueriesContext

from catalog.models import Machine, Provider
from nodelodge.launches.booking import launch
from nodelodge.recommendations import fleet_state
from nodelodge.refresh.services import refresh_provider
from nodelodge.watches.models import Watch
from nodelodge.wizard.views import without_client_token
from tests.factories import PASSWORD, make_gpu_type, make_language_model, make_user
from tests.feeds import feed, record
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1/recommendations?" + LLAMA_8B
PAGE = "/?" + LLAMA_8B
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "result"}
ADDRESSES = [
    pytest.param(API, {}, id="api"),
    pytest.param("/api/v1/estimate?" + LLAMA_8B, {}, id="api-estimate"),
    pytest.param("/api/v1/models?workload=inference", {}, id="api-models"),
    pytest.param(PAGE + "&shown=inference:language:ok", HTMX, id="htmx-result"),
    pytest.param(PAGE, {}, id="page"),
]


@pytest.fixture
def answers(settings, monkeypatch):
    settings.ANSWER_CACHE_SECONDS = 60
    # The clock stands still in the middle of a step (the tests of time move it themselves).
    monkeypatch.setattr(fleet_state, "clock", lambda: 1_800_000_030.0)
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def fleet(answers, feed_server):
    """A Secure provider whose feed reports one 8-GPU H100 machine, 3 free, refreshed once."""
    make_language_model()
    make_gpu_type()
    provider = Provider.objects.create(name="Alpine Compute", slug="alpine-compute", tier="secure")
    provider.feed_url = feed_server.serve_json("alpine", feed(provider.slug, [record("m-1")]))
    provider.save()
    assert refresh_provider(provider.pk).status == "ok"
    return provider, Machine.objects.get(provider=provider)


def etag_of(client: Client, url: str, **headers) -> str:
    """The ETag a client settles on: the first answer may set its CSRF cookie, which the page's
    ETag includes, so the second answer is the one its copy has."""
    client.get(url, **headers)
    response = client.get(url, **headers)
    assert response.status_code == 200
    assert response["ETag"].startswith('"')
    return response["ETag"]


def free_gpus_shown(client: Client) -> int:
    return client.get(API).json()["machines"][0]["free_gpus"]


@pytest.mark.parametrize(("url", "headers"), ADDRESSES)
def test_the_same_query_in_the_same_state_has_the_same_etag_and_a_revalidation_is_304(fleet, url, headers):
    client = Client()
    etag = etag_of(client, url, **headers)
    assert client.get(url, **headers)["ETag"] == etag

    again = client.get(url, HTTP_IF_NONE_MATCH=etag, **headers)
    assert again.status_code == 304
    assert again["ETag"] == etag
    assert again.content == b""
    # As gzip (here or in nginx) sends it back: weak.
    assert client.get(url, HTTP_IF_NONE_MATCH=f'"other", W/{etag}', **headers).status_code == 304
    assert client.get(url, HTTP_IF_NONE_MATCH='"other"', **headers).status_code == 200


@pytest.mark.parametrize(("url", "headers"), ADDRESSES)
def test_a_304_costs_no_sql_beyond_the_fleet_state(fleet, url, headers):
    client = Client()
    etag = etag_of(client, url, **headers)
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url, HTTP_IF_NONE_MATCH=etag, **headers).status_code == 304
    statements = [query["sql"] for query in captured.captured_queries]
    if connection.vendor == "postgresql":  # the kept counts' state, one statement
        assert len(statements) == 1 and "FROM catalog_fleetshape" in statements[0], statements
    else:  # the data version, on a connection of its own
        assert statements == []


def test_a_hot_answer_is_served_from_the_cache_without_computing(fleet, monkeypatch):
    client = Client()
    client.get(API)
    kept = client.get(API)  # asked twice in this state: this one is kept
    client.get(PAGE + "&shown=inference:language:ok", **HTMX)
    page_kept = client.get(PAGE + "&shown=inference:language:ok", **HTMX)

    def no_computing(*args, **kwargs):
        raise AssertionError("the answer was computed again")

    monkeypatch.setattr("nodelodge.wizard.api.recommendation_for", no_computing)
    monkeypatch.setattr("nodelodge.wizard.views.recommendation_for", no_computing)
    cached = Client().get(API)
    assert cached.status_code == 200
    assert cached.content == kept.content  # its "data_as_of" too: when it was computed
    assert cached["ETag"] == kept["ETag"]
    partial = Client().get(PAGE + "&shown=inference:language:ok", **HTMX)
    # The same partial, but for the CSRF token of its watch form: each client's own (the test below).
    assert without_client_token(partial.content.decode()) == without_client_token(page_kept.content.decode())
    assert partial["HX-Push-Url"] == page_kept["HX-Push-Url"]


def test_a_partial_from_the_cache_carries_each_clients_own_csrf_token_and_its_watch_form_posts(
    fleet, monkeypatch
):
    ada, bob = Client(enforce_csrf_checks=True), Client(enforce_csrf_checks=True)
    ada.force_login(make_user("ada"))
    bob.force_login(make_user("bob"))
    for client in (ada, bob):
        client.get(PAGE)  # the page sets each client's CSRF cookie
    url = PAGE + "&shown=inference:language:ok"
    ada.get(url, **HTMX)
    ada_partial = ada.get(url, **HTMX)  # asked twice: kept
    monkeypatch.setattr("nodelodge.wizard.views.recommendation_for", lambda *a, **k: 1 / 0)
    bob_partial = bob.get(url, **HTMX)  # from the cache
    assert bob_partial.status_code == 200

    def token_of(response) -> str:
        return response.content.decode().split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]

    assert _unmask_cipher_token(token_of(ada_partial)) == ada.cookies["csrftoken"].value
    assert _unmask_cipher_token(token_of(bob_partial)) == bob.cookies["csrftoken"].value
    # Bob's watch form, as his browser sends it without JavaScript, passes the CSRF check and makes his watch.
    posted = bob.post("/watches/", {"csrfmiddlewaretoken": token_of(bob_partial), "query": LLAMA_8B,
                                    "condition": "appears"})
    assert posted.status_code == 302, posted.content[:300]
    assert Watch.objects.filter(owner__username="bob").count() == 1


def test_the_whole_page_from_the_cache_shows_each_client_its_own_name_and_csrf_token(fleet, monkeypatch):
    ada, bob = Client(), Client()
    ada.force_login(make_user("ada"))
    bob.force_login(make_user("bob"))
    ada.get(PAGE)
    ada_page = ada.get(PAGE)
    monkeypatch.setattr("nodelodge.wizard.views.recommendation_for", lambda *a, **k: 1 / 0)

    bob_page = bob.get(PAGE)  # from the cache: ada asked twice
    assert bob_page.status_code == 200
    assert b">bob</span>" in bob_page.content and b">ada</span>" not in bob_page.content
    assert b">ada</span>" in ada_page.content
    assert bob_page["ETag"] != ada_page["ETag"]  # the page carries each client's own cookies
    assert bob.cookies["csrftoken"].value != ada.cookies["csrftoken"].value
    body = bob_page.content.decode()
    assert 'data-testid="selected-name">Llama 3.1 8B<' in body
    # Bob's own CSRF token works: his Launch form posts would pass (the token is masked from his secret).
    token = body.split('"X-CSRFToken": "', 1)[1].split('"', 1)[0]
    assert _unmask_cipher_token(token) == bob.cookies["csrftoken"].value


def test_a_booking_a_refresh_and_a_deactivated_provider_each_give_a_new_etag_and_a_fresh_answer(fleet):
    provider, machine = fleet
    client = Client()
    etags = [etag_of(client, API)]
    assert free_gpus_shown(client) == 3

    user = get_user_model().objects.create_user("ada", "ada@example.com", PASSWORD)
    launch(
        user, machines=[(machine.pk, 1)], shown_price_per_hour=Decimal("2.49"), query_string=LLAMA_8B,
        idempotency_key=uuid.uuid4().hex,
    )
    etags.append(etag_of(client, API))
    assert free_gpus_shown(client) == 2

    assert refresh_provider(provider.pk).status == "ok"  # the feed's 3 free (8 less our 1 booked allows 7)
    etags.append(etag_of(client, API))
    assert free_gpus_shown(client) == 3

    provider.is_active = False
    provider.save()
    etags.append(etag_of(client, API))
    assert client.get(API).json()["machines"] == []

    assert len(set(etags)) == len(etags)
    assert client.get(API, HTTP_IF_NONE_MATCH=etags[0]).status_code == 200


def test_time_alone_gives_a_new_etag_once_the_answers_step_is_over(fleet, settings, monkeypatch):
    settings.MACHINE_STALE_AFTER_SECONDS = 200  # a step of at most a tenth of the stale window: 20 s
    assert fleet_state.step_seconds() == 20
    start = 1_800_000_000.0
    now = [start]
    monkeypatch.setattr(fleet_state, "clock", lambda: now[0])
    client = Client()
    etags = []
    for second in range(41):
        now[0] = start + second
        etags.append(client.get(API)["ETag"])
    changes = [second for second in range(1, 41) if etags[second] != etags[second - 1]]
    # A new ETag once a step, never later: the same answer is never served for longer than the step.
    assert len(changes) == 2
    assert changes[1] - changes[0] == 20
    now[0] = start + changes[1] - 0.5
    etag = client.get(API)["ETag"]
    assert client.get(API, HTTP_IF_NONE_MATCH=etag).status_code == 304
    assert "max-age=1" in client.get(API)["Cache-Control"]  # never past the step
    now[0] += 0.5
    moved = client.get(API, HTTP_IF_NONE_MATCH=etag)
    assert moved.status_code == 200
    assert moved["ETag"] != etag


def test_answers_steps_start_at_offsets_spread_over_the_step():
    # Hot answers do not all end at one moment (and get computed again by every worker at once).
    offsets = [fleet_state.offset_of(f"answer {number}", 60) for number in range(600)]
    assert all(0 <= offset < 60 for offset in offsets)
    assert len(set(offsets)) == 60
    assert max(offsets.count(offset) for offset in set(offsets)) < 25  # about 10 each
    assert offsets == [fleet_state.offset_of(f"answer {number}", 60) for number in range(600)]


def test_a_machine_that_goes_stale_leaves_the_answer_within_a_step(fleet, settings, monkeypatch):
    _, machine = fleet
    settings.MACHINE_STALE_AFTER_SECONDS = 600  # step: 60 s
    client = Client()
    etag_of(client, API)  # kept: asked twice
    assert len(client.get(API).json()["machines"]) == 1
    # No write: the machine's last report ages past the window as the clock moves.
    later = fleet_state.clock() + 601
    monkeypatch.setattr(fleet_state, "clock", lambda: later)  # a later step
    monkeypatch.setattr("django.utils.timezone.now", lambda: machine.last_seen_at + timedelta(seconds=601))
    assert client.get(API).json()["machines"] == []


def test_headers_say_who_may_keep_an_answer_and_what_it_varies_on(fleet):
    client = Client()
    api = client.get(API)
    assert api["Cache-Control"].startswith("public, max-age=")
    assert 1 <= int(api["Cache-Control"].rsplit("=", 1)[1]) <= 10
    assert "Accept-Language" in api["Vary"]
    german = client.get(API, HTTP_ACCEPT_LANGUAGE="de")
    assert german["ETag"] != api["ETag"]
    for response in (client.get(PAGE), client.get(PAGE + "&shown=inference:language:ok", **HTMX)):
        assert response["Cache-Control"] == "private, no-cache"
        vary = {name.strip() for name in response["Vary"].split(",")}
        assert {"Cookie", "Accept-Language", "HX-Request", "HX-Target"} <= vary
    assert client.get("/de/?" + LLAMA_8B)["ETag"] != client.get(PAGE)["ETag"]
    # Errors are not kept: a 400 carries no ETag.
    assert "ETag" not in client.get("/api/v1/recommendations?workload=nothing")


def test_with_answers_not_served_again_there_is_no_etag(fleet, settings):
    settings.ANSWER_CACHE_SECONDS = 0
    response = Client().get(API)
    assert response.status_code == 200
    assert "ETag" not in response


def test_a_cache_that_cannot_be_reached_only_means_computing(fleet, monkeypatch):
    from nodelodge.hardening.cache_breaker import CacheUnavailable

    def unreachable(*args, **kwargs):
        raise CacheUnavailable("Redis failed lately")

    for operation in ("get", "add", "set"):
        monkeypatch.setattr(cache, operation, unreachable)
    client = Client()
    for url, headers in ((API, {}), (PAGE, {}), (PAGE + "&shown=inference:language:ok", HTMX)):
        responses = [client.get(url, **headers) for _ in range(3)]
        assert [response.status_code for response in responses] == [200, 200, 200]
        assert responses[-1]["ETag"]  # still revalidated with a 304, which needs no cache
        assert client.get(url, HTTP_IF_NONE_MATCH=responses[-1]["ETag"], **headers).status_code == 304
