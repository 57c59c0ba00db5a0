"""The market preference (`market`: on_demand, the default; interruptible allowed; any, reserved too):
a machine is priced at the cheapest of its listed price and the markets the choice lets in, rows are
cheapest first at that price, the max price and the budget are judged on it, and each row names the
market of its price; Launch books that market. The default answers exactly as before markets were a
choice. The cheapest interruptible row and the cheapest on-demand row of one query are both reachable,
to the cent. On both databases (PostgreSQL from the kept counts at each machine's price under the
choice, SQLite by the engine over the machines)."""
from __future__ import annotations

import json
import uuid
from decimal import Decimal

import pytest
from django.core.management import call_command

from nodelodge.launches.booking import launch
from nodelodge.launches.models import Booking
from nodelodge.launches.refusals import LaunchRefused
from nodelodge.recommendations.query import QueryError, parse_query
from tests.factories import SmallCatalog, make_user
from tests.helpers import LLAMA_8B, LLAMA_8B_ARGS

pytestmark = pytest.mark.django_db

INTERRUPTIBLE_QUERY = LLAMA_8B + "&market=interruptible"


@pytest.fixture
def catalog(db) -> dict:
    """Four one-GPU machines: one listed interruptible, one on demand also offered interruptible far
    cheaper, one on demand alone, one on demand with a cheaper reserved term."""
    small = SmallCatalog(gpus=1)
    return {
        "spot": small.machine(provider_machine_id="spot", price_per_gpu_hour=Decimal("0.90"),
                              interruptible=True, interruption_notice_seconds=30),
        "dual": small.machine(provider_machine_id="dual", price_per_gpu_hour=Decimal("2.00"),
                              interruptible_price_per_gpu_hour=Decimal("0.6149")),
        "plain": small.machine(provider_machine_id="plain", price_per_gpu_hour=Decimal("2.49")),
        "reserved": small.machine(provider_machine_id="reserved", price_per_gpu_hour=Decimal("3.00"),
                                  reserved_price_per_gpu_hour=Decimal("1.50"), reserved_term_days=30),
        "small": small,
    }


def recommendations(client, query: str) -> dict:
    response = client.get("/api/v1/recommendations?" + query)
    assert response.status_code == 200, response.content
    return response.json()


def priced(rows: list[dict]) -> list[tuple[str, str, str, str]]:
    return [(row["provider_machine_id"], row["market"], row["price_per_gpu_hour"], row["price_per_hour"])
            for row in rows]


def test_the_default_prices_every_machine_at_its_listed_price_as_before(client, catalog):
    body = recommendations(client, LLAMA_8B)
    assert priced(body["machines"]) == [
        ("spot", "interruptible", "0.90", "0.90"), ("dual", "on_demand", "2.00", "2.00"),
        ("plain", "on_demand", "2.49", "2.49"), ("reserved", "on_demand", "3.00", "3.00"),
    ]
    named = recommendations(client, LLAMA_8B + "&market=on_demand")
    assert {**body, "data_as_of": None} == {**named, "data_as_of": None}
    assert "Markets" not in {c["label"] for c in body["constraints"]}
    assert "market" not in parse_query({}).as_params()
    [dual] = [row for row in body["machines"] if row["provider_machine_id"] == "dual"]
    assert "can be interrupted: save checkpoints" not in dual["limits"]


def test_interruptible_allowed_prices_a_machine_at_the_cheaper_of_its_two_prices(client, catalog):
    body = recommendations(client, INTERRUPTIBLE_QUERY)
    assert priced(body["machines"]) == [
        ("dual", "interruptible", "0.6149", "0.6149"), ("spot", "interruptible", "0.90", "0.90"),
        ("plain", "on_demand", "2.49", "2.49"), ("reserved", "on_demand", "3.00", "3.00"),
    ]
    dual = body["machines"][0]
    assert dual["market_text"] == "interruptible"
    assert "can be interrupted: save checkpoints" in dual["limits"]
    # Every market keeps its own price beside the one used.
    assert [(m["market"], m["price_per_gpu_hour"]) for m in dual["markets"]] == [
        ("on_demand", "2.00"), ("interruptible", "0.6149"),
    ]
    assert {c["label"]: c["value"] for c in body["constraints"]}["Markets"] == (
        "on demand or interruptible, whichever is cheaper per machine"
    )


def test_any_market_lets_a_reserved_price_in(client, catalog):
    body = recommendations(client, LLAMA_8B + "&market=any")
    assert priced(body["machines"]) == [
        ("dual", "interruptible", "0.6149", "0.6149"), ("spot", "interruptible", "0.90", "0.90"),
        ("reserved", "reserved", "1.50", "1.50"), ("plain", "on_demand", "2.49", "2.49"),
    ]


def test_the_cheapest_interruptible_and_the_cheapest_on_demand_row_are_both_reachable_to_the_cent(
    client, catalog
):
    on_demand = recommendations(client, LLAMA_8B + "&market=on_demand")["machines"]
    cheapest_on_demand = next(row for row in on_demand if row["market"] == "on_demand")
    assert (cheapest_on_demand["provider_machine_id"], cheapest_on_demand["price_per_hour"]) == ("dual", "2.00")
    cheapest_interruptible = recommendations(client, INTERRUPTIBLE_QUERY)["machines"][0]
    assert (cheapest_interruptible["provider_machine_id"], cheapest_interruptible["market"],
            cheapest_interruptible["price_per_hour"]) == ("dual", "interruptible", "0.6149")


def test_the_max_price_and_the_budget_are_judged_on_the_price_used(client, catalog):
    body = recommendations(client, INTERRUPTIBLE_QUERY + "&max_price=1")
    assert [row["provider_machine_id"] for row in body["machines"]] == ["dual", "spot"]
    assert [(row["provider_machine_id"], row["breaks"]) for row in body["alternatives"]] == [
        ("plain", ["max_price"]), ("reserved", ["max_price"]),
    ]
    assert [row["provider_machine_id"] for row in recommendations(client, LLAMA_8B + "&max_price=1")[
        "machines"]] == ["spot"]
    body = recommendations(client, INTERRUPTIBLE_QUERY + "&budget=0.7")
    assert [row["provider_machine_id"] for row in body["machines"]] == ["dual"]
    # The budget covers the hours of the price used (0.70 / 0.6149 is 1.13 hours).
    assert body["machines"][0]["budget_hours"] == pytest.approx(1.1, abs=0.05)
    assert body["alternatives"][0]["provider_machine_id"] == "spot"
    assert body["alternatives"][0]["breaks"] == ["budget"]


@pytest.mark.parametrize("value", ["spot", "ON_DEMAND", "reserved"])
def test_a_bad_market_is_refused_by_its_field(value):
    with pytest.raises(QueryError) as error:
        parse_query({"market": value})
    assert list(error.value.errors) == ["market"]


def test_a_bad_market_is_a_400_beside_its_field_in_the_api(client, catalog):
    response = client.get("/api/v1/recommendations?" + LLAMA_8B + "&market=spot")
    assert response.status_code == 400
    assert response.json()["errors"] == {"market": "Choose a market: on_demand, interruptible, any."}


def test_the_api_schema_documents_the_market_and_the_row_names_it(client, db):
    schema = client.get("/api/v1/openapi.json").json()
    parameters = schema["paths"]["/api/v1/recommendations"]["get"]["parameters"]
    [market] = [parameter for parameter in parameters if parameter["name"] == "market"]
    assert "interruptible" in json.dumps(market)
    assert {"market", "market_text"} <= set(schema["components"]["schemas"]["MachineOut"]["properties"])


def test_the_page_offers_the_choice_and_names_the_market_of_each_price(client, catalog):
    html = client.get("/?" + INTERRUPTIBLE_QUERY).content.decode()
    chooser = html.split('id="id_market"')[1].split("</select>")[0]
    assert '<option value="interruptible" selected>Interruptible allowed</option>' in chooser
    assert '<span class="badge market-used" data-testid="market-used">interruptible</span>' in html
    default = client.get("/?" + LLAMA_8B).content.decode()
    assert 'data-testid="market-used"' not in default


def test_a_bad_market_on_the_page_is_worded_beside_its_field(client, catalog):
    html = client.get("/?" + LLAMA_8B + "&market=spot&budget=77").content.decode()
    assert 'id="err-market"' in html
    assert "Choose a market: on_demand, interruptible, any." in html
    assert 'aria-invalid="true"' in html.split('id="id_market"')[1].split(">")[0]
    assert 'value="77"' in html


def test_the_german_page_offers_and_names_the_market(client, catalog):
    html = client.get("/de/?" + INTERRUPTIBLE_QUERY, HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Unterbrechbar erlaubt" in html
    assert '<span class="badge market-used" data-testid="market-used">unterbrechbar</span>' in html
    bad = client.get("/de/?" + LLAMA_8B + "&market=spot", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Wählen Sie einen Markt: on_demand, interruptible, any." in bad


def test_the_command_takes_the_market_and_names_the_price_used(catalog, capsys):
    call_command("recommend", *LLAMA_8B_ARGS, "--market", "interruptible", "--json")
    printed = json.loads(capsys.readouterr().out)
    assert priced(printed["machines"])[0] == ("dual", "interruptible", "0.6149", "0.6149")
    call_command("recommend", *LLAMA_8B_ARGS, "--market", "interruptible")
    out = capsys.readouterr().out
    assert "       priced interruptible: $0.6149 per GPU-hour" in out
    assert "       on_demand $2.00/h" in out


def test_the_review_names_the_market_of_the_row_and_launch_books_it(client, catalog):
    client.force_login(make_user())
    dual = catalog["dual"]
    review = (f"/launch/review/?machine={dual.pk}&gpus=1&price_per_hour=0.6149&query="
              + INTERRUPTIBLE_QUERY.replace("&", "%26"))
    html = client.get(review).content.decode()
    assert '<dd data-testid="review-market">interruptible: notice before it is taken back: not said by the ' \
           'provider</dd>' in html
    outcome = launch(make_user(), machines=[(dual.pk, 1)], shown_price_per_hour=Decimal("0.6149"),
                     query_string=INTERRUPTIBLE_QUERY, idempotency_key=uuid.uuid4().hex, market="interruptible")
    [booking] = outcome.booked
    assert (booking.market, booking.price_per_gpu_hour, booking.price_per_hour) == (
        "interruptible", Decimal("0.6149"), Decimal("0.6149")
    )
    # The same machine from a default answer is booked on demand at its listed price.
    outcome = launch(make_user(), machines=[(catalog["plain"].pk, 1)], shown_price_per_hour=Decimal("2.49"),
                     query_string=LLAMA_8B, idempotency_key=uuid.uuid4().hex, market="on_demand")
    assert outcome.booked[0].market == "on_demand"
    assert Booking.objects.count() == 2


def test_launch_refuses_a_row_whose_interruptible_price_is_gone(catalog):
    dual = catalog["dual"]
    dual.interruptible_price_per_gpu_hour = None
    dual.save()
    with pytest.raises(LaunchRefused) as refused:
        launch(make_user(), machines=[(dual.pk, 1)], shown_price_per_hour=Decimal("0.6149"),
               query_string=INTERRUPTIBLE_QUERY, idempotency_key=uuid.uuid4().hex, market="interruptible")
    assert refused.value.code == LaunchRefused.PRICE_CHANGED
    assert not Booking.objects.exists()
