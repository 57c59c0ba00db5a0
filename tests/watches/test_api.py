"""/api/v1/watches: create, list and delete for the signed-in user (session or API token)."""
import pytest
from django.utils import translation

from nodelodge.accounts import tokens
from nodelodge.accounts.models import ApiToken
from nodelodge.watches.models import Watch
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


def test_a_query_the_console_cannot_answer_is_422_naming_the_querys_field(client, catalog):
    # The schema states the query as text by name; what the console reads in it is its own rule.
    _row, token = tokens.create_token(make_user())

    answer = client.post("/api/v1/watches", {"query": {**QUERY, "context": "abc"}, "condition": "at_least"},
                         content_type="application/json", **bearer(token))

    assert answer.status_code == 422
    assert list(answer.json()["errors"]) == ["context"]  # the query first: the rest needs it
    assert not Watch.objects.exists()


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
    client.post(f"/watches/{watch.pk}/delete/", {"confirmed": "1"})
    assert not Watch.objects.exists()


def post_watch(client, token, **fields):
    return client.post("/api/v1/watches", {"query": QUERY, **fields}, content_type="application/json",
                       **bearer(token))


@pytest.mark.parametrize(("fields", "field"), [
    ({"auto_launch": 0}, "auto_launch"),
    ({"email": "yes"}, "email"),
    ({"machines": "5", "condition": "at_least"}, "machines"),
    ({"machines": 5.5, "condition": "at_least"}, "machines"),
    ({"cooldown_seconds": True}, "cooldown_seconds"),
    ({"condition": ""}, "condition"),
    ({"webhook_format": ""}, "webhook_format"),
    ({"language": ""}, "language"),
    ({"price_per_hour": "", "condition": "cheapest_below"}, "price_per_hour"),
    ({"price_per_hour": "5.00001", "condition": "cheapest_below"}, "price_per_hour"),
    ({"price_per_hour": "0", "condition": "cheapest_below"}, "price_per_hour"),
    ({"auto_lanch": True}, "auto_lanch"),
    ({"query": {"context": 4096}}, "query.context"),
])
def test_a_body_the_schema_does_not_allow_is_a_400_naming_the_field_and_makes_no_watch(
    client, catalog, fields, field
):
    _row, token = tokens.create_token(make_user())

    answer = post_watch(client, token, **fields)

    assert answer.status_code == 400, answer.content
    assert field in answer.json()["errors"]
    assert not Watch.objects.exists()


def test_a_whole_number_is_taken_as_json_schema_counts_one(client, catalog):
    _row, token = tokens.create_token(make_user())

    made = post_watch(client, token, condition="at_least", machines=5.0, cooldown_seconds=60)

    assert made.status_code == 201, made.content
    assert (made.json()["machines"], made.json()["cooldown_seconds"]) == (5, 60)


@pytest.mark.parametrize(("fields", "field"), [
    ({"condition": "cheapest_below"}, "price_per_hour"),
    ({"condition": "at_least"}, "machines"),
    ({"auto_launch": True}, "auto_launch_max_price"),
    ({"webhook_url": "http://example.com/hook"}, "webhook_url"),
])
def test_a_body_the_schema_allows_that_cannot_be_a_watch_is_a_422_naming_the_field(client, catalog, fields, field):
    _row, token = tokens.create_token(make_user())

    answer = post_watch(client, token, **fields)

    assert answer.status_code == 422, answer.content
    assert field in answer.json()["errors"]
    assert not Watch.objects.exists()


def test_the_watch_past_the_accounts_limit_is_a_409(client, catalog, monkeypatch):
    from nodelodge.watches import services

    monkeypatch.setattr(services, "MAX_WATCHES_PER_USER", 1)
    _row, token = tokens.create_token(make_user())
    assert post_watch(client, token).status_code == 201

    refused = post_watch(client, token)

    assert refused.status_code == 409
    assert "the most one account may keep" in refused.json()["errors"]["watches"]


@pytest.mark.parametrize("watch_id", ["null", "abc", "-1", "1.5"])
def test_a_watch_address_that_is_no_whole_number_is_a_documented_404(client, catalog, watch_id):
    _row, token = tokens.create_token(make_user())

    answer = client.delete(f"/api/v1/watches/{watch_id}", **bearer(token))

    assert answer.status_code == 404
    assert answer.json()["errors"]
    from nodelodge.wizard.api import api

    documented = api.get_openapi_schema()["paths"]["/api/v1/watches/{watch_id}"]["delete"]["responses"]
    assert "404" in {str(status) for status in documented} and "400" not in {str(s) for s in documented}


def test_the_schema_states_what_a_watch_body_takes():
    from nodelodge.wizard.api import api

    schema = api.get_openapi_schema()
    body = schema["components"]["schemas"]["WatchIn"]
    fields = body["properties"]
    assert body["additionalProperties"] is False
    assert fields["auto_launch"]["type"] == "boolean" and fields["email"]["type"] == "boolean"
    assert fields["condition"]["enum"] == ["appears", "cheapest_below", "at_least", "plan_below", "below_median"]
    assert fields["webhook_format"]["enum"] == ["json", "slack", "discord"]
    assert {"minimum": 1, "maximum": 100_000, "type": "integer"}.items() <= fields["machines"]["anyOf"][0].items()
    answers = schema["paths"]["/api/v1/watches"]["post"]["responses"]
    assert {"201", "400", "401", "403", "409", "422", "429"} <= {str(status) for status in answers}
