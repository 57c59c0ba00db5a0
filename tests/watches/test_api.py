"""/api/v1/watches: create, list and delete for the signed-in user (session or API token)."""
import pytest
from django.utils import translation

from nodelodge.watches import tokens
from nodelodge.watches.models import ApiToken, Watch
from tests.factories import make_user
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db
QUERY = dict(pair.split("=") for pair in LLAMA_8B.split("&"))


def bearer(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_a_script_with_a_token_creates_lists_and_deletes_watches(client, catalog):
    owner = make_user()
    _row, token = tokens.create_token(owner)

    made = client.post("/api/v1/watches", {"query": QUERY, "condition": "cheapest_below", "price_per_hour": "5"},
                       content_type="application/json", **bearer(token))

    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["condition"], body["price_per_hour"], body["state"]) == ("cheapest_below", "5.0000", "active")
    assert body["query"]["kv_cache"] == "16" and body["feed_url"].endswith(".atom")
    listed = client.get("/api/v1/watches", **bearer(token)).json()
    assert [watch["id"] for watch in listed] == [body["id"]]
    assert client.delete(f"/api/v1/watches/{body['id']}", **bearer(token)).status_code == 204
    assert not Watch.objects.exists()


def test_a_bad_watch_answers_400_naming_the_field(client, catalog):
    _row, token = tokens.create_token(make_user())

    answer = client.post("/api/v1/watches", {"query": {**QUERY, "context": "abc"}, "condition": "at_least"},
                         content_type="application/json", **bearer(token))

    assert answer.status_code == 400
    assert list(answer.json()["errors"]) == ["context"]  # the query first: the rest needs it


def test_without_a_session_or_a_good_token_the_api_answers_401(client, catalog):
    assert client.get("/api/v1/watches").status_code == 401
    assert client.get("/api/v1/watches", **bearer("nlt_guessed")).status_code == 401


def test_a_user_sees_and_deletes_only_their_own_watches(client, catalog):
    _row, mine = tokens.create_token(make_user())
    _row, theirs = tokens.create_token(make_user())
    made = client.post("/api/v1/watches", {"query": QUERY}, content_type="application/json", **bearer(theirs)).json()

    assert client.get("/api/v1/watches", **bearer(mine)).json() == []
    assert client.delete(f"/api/v1/watches/{made['id']}", **bearer(mine)).status_code == 404
    assert Watch.objects.count() == 1


def test_a_session_works_too(client, catalog):
    owner = make_user()
    client.force_login(owner)

    assert client.get("/api/v1/watches").status_code == 200


def test_tokens_are_stored_hashed_and_made_and_revoked_in_my_launches(client, catalog):
    owner = make_user()
    client.force_login(owner)

    client.post("/watches/tokens/")
    page = client.get("/launches/").content.decode()

    row = ApiToken.objects.get(owner=owner)
    shown = page.split('data-testid="new-api-token"', 1)[1].split("<code>", 1)[1].split("</code>", 1)[0]
    assert shown.startswith("nlt_") and shown not in str(ApiToken.objects.values_list())
    assert row.digest == tokens.digest(shown)
    assert "new-api-token" not in client.get("/launches/").content.decode()  # shown once
    assert tokens.user_for(shown) == owner
    client.post(f"/watches/tokens/{row.pk}/revoke/")
    assert tokens.user_for(shown) is None


def test_my_launches_lists_watches_with_pause_resume_and_delete(client, catalog):
    owner = make_user()
    client.force_login(owner)
    client.post("/watches/", {"query": LLAMA_8B})
    watch = Watch.objects.get(owner=owner)

    page = client.get("/launches/").content.decode()
    assert f'data-watch-id="{watch.pk}"' in page and "a machine appears" in page and "never" in page
    assert "<title>My launches · Node Lodge</title>" in page
    assert page.index('id="ended-heading"') < page.index('id="watches-heading"')
    client.post(f"/watches/{watch.pk}/pause/")
    assert Watch.objects.get().state == "paused"
    client.post(f"/watches/{watch.pk}/resume/")
    assert Watch.objects.get().state == "active"
    with translation.override("de"):
        assert client.get("/de/launches/").status_code == 200
    client.post(f"/watches/{watch.pk}/delete/")
    assert not Watch.objects.exists()
