"""Clusters under the market preference: each machine of a cluster is priced at the cheapest of the
markets the choice lets in (the rule single rows are priced by), clusters are cheapest first at those
prices, the price limit and the budget are judged on them, and each machine names its market. A cluster
with interruptible machines says what happens when one is taken back (the model stops on every machine,
the others are billed until it is stopped), on the page, in the API and in the command, in English and
German. The default answers as before. On both databases (PostgreSQL groups the sites in one statement,
SQLite through window functions)."""
from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db

LLAMA_405B = "workload=inference&model=llama-3-1-405b&precision=16&context=8192&requests=1"
NOTE_ONE = ("1 of its 2 machines is interruptible: if the provider takes it back, the model stops on the whole "
            "cluster (every machine holds a stage of its layers), and the other machines are billed until you "
            "stop the cluster in My launches.")
NOTE_TWO = NOTE_ONE.replace("1 of its 2 machines is", "2 of its 2 machines are").replace(
    "takes it back", "takes one back")
NOTE_GERMAN = ("1 seiner 2 Maschinen ist unterbrechbar: Nimmt der Anbieter sie zurück, stoppt das Modell auf dem "
               "ganzen Cluster")


def _node(make_machine, site: str, price: str, **markets):
    return make_machine("H100 SXM 80GB", gpu_count=8, free_gpus=8, site=site, interconnect="infiniband",
                        interconnect_gbps=400, country="US", region="Virginia",
                        price_per_gpu_hour=Decimal(price), **markets)


@pytest.fixture
def sites(models_and_gpus, make_machine) -> dict:
    """Two sites of whole 8 × H100 machines (Llama 3.1 405B in 16-bit takes two of them):

    iad-1: "spot" on demand at $3.00 also offered interruptible at $1.50, "plain" on demand at $2.50,
    "term" on demand at $2.50 with a 30-day reserved price of $2.00;
    iad-2: two on demand at $3.00, each also offered interruptible at $1.10 (the dearest site on demand,
    the cheapest where interruptible prices are allowed)."""
    return {
        "spot": _node(make_machine, "iad-1", "3.00", interruptible_price_per_gpu_hour=Decimal("1.50"),
                      interruption_notice_seconds=30),
        "plain": _node(make_machine, "iad-1", "2.50"),
        "term": _node(make_machine, "iad-1", "2.50", reserved_price_per_gpu_hour=Decimal("2.00"),
                      reserved_term_days=30),
        "east": [_node(make_machine, "iad-2", "3.00", interruptible_price_per_gpu_hour=Decimal("1.10"))
                 for _ in range(2)],
    }


def clusters(client, query: str, **headers) -> dict:
    response = client.get(f"/api/v1/recommendations?{query}", **headers)
    assert response.status_code == 200, response.content
    return response.json()


def priced(cluster: dict) -> tuple:
    return (cluster["site"], cluster["machine_ids"], cluster["machine_markets"],
            cluster["machine_prices_per_hour"], cluster["price_per_hour"])


def test_on_demand_only_keeps_every_machines_listed_price_and_says_nothing_of_interruption(client, sites):
    body = clusters(client, LLAMA_405B)
    ids = sorted([sites["plain"].id, sites["term"].id])
    assert [priced(c) for c in body["clusters"]] == [
        ("iad-1", ids, ["on_demand", "on_demand"], ["20.00", "20.00"], "40.00"),
        ("iad-2", [m.id for m in sites["east"]], ["on_demand", "on_demand"], ["24.00", "24.00"], "48.00"),
    ]
    assert all(c["interruptible_machines"] == 0 and c["interruption_note"] is None for c in body["clusters"])
    named = clusters(client, LLAMA_405B + "&market=on_demand")
    assert named["clusters"] == body["clusters"]


def test_interruptible_allowed_prices_each_machine_at_its_cheaper_price_cheapest_cluster_first(client, sites):
    body = clusters(client, LLAMA_405B + "&market=interruptible")
    east = [m.id for m in sites["east"]]
    assert [priced(c) for c in body["clusters"]] == [
        ("iad-2", east, ["interruptible", "interruptible"], ["8.80", "8.80"], "17.60"),
        # The site's two cheapest at these prices: the spot machine at $1.50 and one at $2.50 (the lower id).
        ("iad-1", [sites["spot"].id, sites["plain"].id], ["interruptible", "on_demand"], ["12.00", "20.00"],
         "32.00"),
    ]
    east_cluster, west_cluster = body["clusters"]
    assert east_cluster["machine_markets_text"] == ["interruptible", "interruptible"]
    assert (east_cluster["interruptible_machines"], east_cluster["interruption_note"]) == (2, NOTE_TWO)
    assert (west_cluster["interruptible_machines"], west_cluster["interruption_note"]) == (1, NOTE_ONE)
    assert "a cluster holds it: 2 × (8 × H100 SXM 80GB) at Harbor Compute, iad-2, for $17.60/h" in body[
        "empty_reason"]


def test_any_market_lets_a_reserved_price_in(client, sites):
    body = clusters(client, LLAMA_405B + "&market=any")
    west = next(c for c in body["clusters"] if c["site"] == "iad-1")
    assert priced(west) == ("iad-1", [sites["spot"].id, sites["term"].id], ["interruptible", "reserved"],
                            ["12.00", "16.00"], "28.00")
    assert west["interruptible_machines"] == 1 and west["interruption_note"] == NOTE_ONE


def test_the_price_limit_and_the_budget_are_judged_on_the_prices_used(client, sites):
    body = clusters(client, LLAMA_405B + "&market=interruptible&max_price=32")
    assert [c["price_per_hour"] for c in body["clusters"]] == ["17.60", "32.00"]
    body = clusters(client, LLAMA_405B + "&market=interruptible&max_price=31.99")
    assert [c["price_per_hour"] for c in body["clusters"]] == ["17.60"] and body["clusters_over_price"] == 1
    # On demand only, the same limit lets no cluster through.
    body = clusters(client, LLAMA_405B + "&max_price=31.99")
    assert body["clusters"] == [] and body["clusters_over_price"] == 2
    # A budget of $20 covers more than an hour of the $17.60 cluster alone.
    body = clusters(client, LLAMA_405B + "&market=interruptible&budget=20")
    assert [c["price_per_hour"] for c in body["clusters"]] == ["17.60"]
    assert body["clusters"][0]["hours_covered"] == pytest.approx(20 / 17.6, abs=0.05)
    assert body["clusters_note"] == "The budget covers under an hour of 1 more cluster."


def test_a_machine_listed_interruptible_is_named_so_under_the_default_too(client, sites, make_machine):
    listed = [_node(make_machine, "iad-3", "1.00", interruptible=True) for _ in range(2)]
    body = clusters(client, LLAMA_405B)
    cheapest = body["clusters"][0]
    assert priced(cheapest) == ("iad-3", [m.id for m in listed], ["interruptible", "interruptible"],
                                ["8.00", "8.00"], "16.00")
    assert cheapest["interruption_note"] == NOTE_TWO


def test_the_page_names_each_machines_market_and_the_note_in_both_languages(client, sites):
    page = client.get("/?" + LLAMA_405B + "&market=interruptible").content.decode()
    panel = page[page.index('id="clusters"'):]
    assert "$12.00 interruptible + $20.00 on demand" in panel
    assert f'<p class="notice" data-testid="cluster-interruption">{NOTE_ONE}</p>' in panel
    default = client.get("/?" + LLAMA_405B).content.decode()
    assert 'data-testid="cluster-interruption"' not in default and "$20.00 + $20.00" in default
    german = client.get("/de/?" + LLAMA_405B + "&market=interruptible", HTTP_ACCEPT_LANGUAGE="de")
    german_page = german.content.decode()
    assert NOTE_GERMAN in german_page and "unterbrechbar + " in german_page
    body = clusters(client, LLAMA_405B + "&market=interruptible", HTTP_ACCEPT_LANGUAGE="de")
    assert body["clusters"][1]["interruption_note"].startswith(NOTE_GERMAN)
    assert body["clusters"][1]["machine_markets_text"] == ["unterbrechbar", "auf Abruf"]


def test_a_clusters_own_page_prices_it_under_the_market_and_says_what_interruption_does(client, sites):
    ids = f"{sites['spot'].id},{sites['plain'].id}"
    page = client.get(f"/cluster/?{LLAMA_405B}&market=interruptible&machines={ids}")
    assert page.status_code == 200
    html = page.content.decode()
    assert "$12.00 interruptible + $20.00 on demand" in html and NOTE_ONE in html
    assert 'name="price_per_hour" value="32.00"' in html
    listed = client.get(f"/cluster/?{LLAMA_405B}&machines={ids}").content.decode()
    assert "$20.00 + $24.00" in listed and 'data-testid="cluster-interruption"' not in listed


def test_the_command_prints_each_machines_market_and_the_note(sites, capsys):
    args = ["--workload", "inference", "--model", "llama-3-1-405b", "--precision", "16", "--context", "8192",
            "--requests", "1", "--market", "interruptible"]
    call_command("recommend", *args)
    out = capsys.readouterr().out
    spot, plain = sites["spot"].id, sites["plain"].id
    assert f"       markets: {spot} interruptible $12.00/h, {plain} on_demand $20.00/h" in out
    assert f"       {NOTE_ONE}" in out
    call_command("recommend", *args, "--json")
    printed = json.loads(capsys.readouterr().out)
    assert printed["clusters"][1]["machine_markets"] == ["interruptible", "on_demand"]


def test_the_schema_documents_each_clusters_markets_and_note(client, db):
    schema = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    cluster = schema["ClusterOut"]["properties"]
    assert {"machine_markets", "machine_markets_text", "interruptible_machines", "interruption_note"} <= set(cluster)
    assert "taken back" in cluster["interruption_note"]["description"]
