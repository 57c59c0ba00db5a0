"""An empty answer says what relaxing each constraint alone would open."""
import re

import pytest

from tests.helpers import LLAMA_8B, LLAMA_8B_TOO_BIG

pytestmark = pytest.mark.django_db


def empty_reason(client, query):
    body = client.get("/api/v1/recommendations?" + query).json()
    assert body["machines"] == []
    return body["empty_reason"]


def test_countries_name_what_lies_outside_them(client, small_fleet):
    reason = empty_reason(client, LLAMA_8B + "&countries=CH")
    assert "outside CH: 5 machines from $0.30/h in DE, NL, US, FR;" in reason
    # a lower precision is named where it costs less there
    assert reason.endswith("outside CH at 8-bit: 6 machines from $0.20/h in DE, NL, US, FR.")


def test_outside_the_countries_with_other_limits_names_the_price_to_set(client, small_fleet):
    reason = empty_reason(client, LLAMA_8B + "&countries=CH&max_price=0.10")
    assert "outside CH, with the max price raised to $0.30/h: 1 machine from $0.30/h in DE" in reason
    assert "over your price" not in reason


def hints(client, query):
    body = client.get("/api/v1/recommendations?" + query).json()
    assert body["machines"] == []
    return body["relax"]


def test_the_405b_in_switzerland_at_a_dollar_names_the_countries_the_precision_and_the_price(client):
    """The example from the field: nothing in CH holds Llama 3.1 405B, and nothing elsewhere costs $1/h.
    Each hint names every change it needs, with the price to set in whole cents."""
    from catalog.services import load_catalog

    load_catalog()
    query = "workload=inference&model=llama-3-1-405b&precision=16&context=4096&requests=1&countries=CH&max_price=1"
    found = hints(client, query)
    texts = [hint["text"] for hint in found]
    assert [(set(hint["changes"]) - {"countries"}) for hint in found] == [
        {"max_price"}, {"precision", "max_price"}, {"precision", "max_price"}
    ], texts
    assert [hint["changes"].get("precision") for hint in found] == [None, "8", "4"]
    for hint in found:
        price = hint["changes"]["max_price"]
        assert len(price.split(".")[1]) <= 2  # a value the price field takes
        assert f"with the max price raised to ${price}/h" in hint["text"]
        assert hint["text"].startswith("outside CH")
    assert texts[2].startswith("outside CH at 4-bit, with the max price raised to $")
    assert float(found[2]["cheapest_price_per_hour"]) < float(found[1]["cheapest_price_per_hour"])


@pytest.mark.parametrize(
    "query",
    [
        LLAMA_8B + "&countries=CH",
        LLAMA_8B + "&countries=CH&max_price=0.10",
        LLAMA_8B + "&countries=FR&max_price=0.10",
        LLAMA_8B + "&max_price=0.20",
        LLAMA_8B + "&tier=community&max_price=0.25",
        LLAMA_8B + "&budget=0.25",
        LLAMA_8B + "&tier=secure&countries=NL&budget=0.5",
        LLAMA_8B_TOO_BIG,
        "workload=inference&model=llama-3-1-70b&precision=16&context=4096&requests=1&countries=DE",
    ],
    ids=["countries", "countries-and-price", "fr-and-price", "price", "tier-and-price", "budget",
         "tier-country-budget", "sizes", "precision"],
)
def test_each_hint_links_to_the_query_it_names_and_finds_what_it_says(client, small_fleet, query):
    """Following a hint's link gives an answer with exactly the machines the hint counted, the
    cheapest at the price it named: both are counted as the answer counts them."""
    found = hints(client, query)
    assert found
    for hint in found:
        if hint["query"] is None:
            continue
        answer = client.get("/api/v1/recommendations?" + hint["query"]).json()
        assert answer["machines_total"] == hint["machines"] > 0, hint
        assert answer["machines"][0]["price_per_hour"] == hint["cheapest_price_per_hour"], hint
        for name, value in hint["changes"].items():
            assert f"{name}={value.replace(',', '%2C')}" in hint["query"]


def test_the_page_lists_each_hint_as_a_link_that_applies_it(client):
    from catalog.services import load_catalog

    load_catalog()
    query = "workload=inference&model=llama-3-1-405b&precision=16&context=4096&requests=1&countries=CH&max_price=1"
    html = client.get("/?" + query).content.decode()
    body = client.get("/api/v1/recommendations?" + query).json()
    assert 'data-testid="relax-hints"' in html
    for hint in body["relax"]:
        link = '<a href="?' + hint["query"].replace("&", "&amp;") + '">'
        assert link + hint["text"][0].upper() + hint["text"][1:] + "</a>" in html


def test_too_little_memory_in_the_chosen_countries_says_where(client, small_fleet):
    reason = empty_reason(client, LLAMA_8B_TOO_BIG +
                                  "&countries=FR")
    assert reason.startswith("No machine in FR has enough memory")


def machines_total(client, query):
    return client.get("/api/v1/recommendations?" + query).json()["machines_total"]


@pytest.mark.parametrize(
    ("base", "context", "requests", "context_words", "requests_words"),
    [
        ("workload=inference&model=llama-3-1-8b&precision=16&context={c}&requests={r}", 131072, 2000,
         r"a context of ([\d,]+) tokens fits on (\d+) machines?", r"([\d,]+) concurrent requests fit on (\d+) machines?"),
        ("workload=finetune&model=llama-3-1-8b&precision=16&context={c}&requests={r}", 8192, 512,
         r"a sequence length of ([\d,]+) tokens fits on (\d+) machines?", r"a batch size of ([\d,]+) fits on (\d+) machines?"),
    ],
    ids=["inference", "finetune"],
)
def test_context_and_requests_name_the_largest_halving_that_fits(client, small_fleet, base, context, requests,
                                                                 context_words, requests_words):
    reason = empty_reason(client, base.format(c=context, r=requests))
    for words, field in ((context_words, "c"), (requests_words, "r")):
        match = re.search(words + r" from \$([\d.]+)/h", reason)
        assert match, (words, reason)
        value, count = int(match.group(1).replace(",", "")), int(match.group(2))
        at = {"c": context, "r": requests, field: value}
        answer = client.get("/api/v1/recommendations?" + base.format(**at)).json()
        assert answer["machines_total"] == count > 0
        assert match.group(3) == answer["machines"][0]["price_per_hour"]  # the cheapest, as listed
        twice = {"c": context, "r": requests, field: value * 2}
        assert machines_total(client, base.format(**twice)) == 0  # the largest halving that fits


def test_the_tier_price_and_budget_hints_stay(client, small_fleet):
    reason = empty_reason(client, LLAMA_8B + "&max_price=0.20")
    assert "raising it to $0.30/h adds 1 machine" in reason


def test_the_page_shows_the_hint_beside_the_empty_list(client, small_fleet):
    html = client.get("/?" + LLAMA_8B + "&countries=CH").content.decode()
    assert 'data-testid="empty-reason"' in html and "Outside CH: 5 machines" in html


def test_outside_the_countries_counts_only_machines_outside_them(client, small_fleet):
    # FR holds a machine that fits but costs too much; it is not "outside FR".
    found = hints(client, LLAMA_8B + "&countries=FR&max_price=2")
    outside = [hint for hint in found if hint["text"].startswith("outside FR")]
    assert outside[0]["text"] == "outside FR: 4 machines from $0.30/h in DE, NL, US"
    assert outside[0]["changes"] == {"countries": "DE,NL,US"}


def test_outside_the_countries_names_every_country_cheapest_first(client):
    """Over the shipped demo fleet: the countries named are those of the machines that fit outside
    the chosen one, ordered by the cheapest machine in each (ties by code), five and "and more"."""
    from catalog.services import load_catalog
    from sizing.countries import ALL_CODES

    load_catalog()
    reason = empty_reason(client, LLAMA_8B + "&countries=CH&tier=secure")
    match = re.search(r"outside CH: ([\d,]+) machines from \$([\d.]+)/h in ([A-Z, ]+?)( and more)?[;.]", reason)
    assert match, reason
    outside = LLAMA_8B + "&tier=secure&countries=" + ",".join(sorted(ALL_CODES - {"CH"})) + "&limit=100&page={}"
    cheapest: dict[str, float] = {}
    first = client.get("/api/v1/recommendations?" + outside.format(1)).json()
    listed = first["machines"]
    for page in range(2, -(-first["machines_total"] // 100) + 1):
        listed += client.get("/api/v1/recommendations?" + outside.format(page)).json()["machines"]
    for machine in listed:
        country, hourly = machine["country"], float(machine["price_per_hour"])
        cheapest[country] = min(hourly, cheapest.get(country, hourly))
    countries = [code for code, _ in sorted(cheapest.items(), key=lambda item: (item[1], item[0]))]
    assert int(match.group(1).replace(",", "")) == len(listed)
    assert float(match.group(2)) == min(cheapest.values())
    assert match.group(3).split(", ") == countries[:5]
    assert bool(match.group(4)) == (len(countries) > 5)


@pytest.mark.postgresql(reason="the hints read the kept fleet counts; the embedded run scans its small fleet instead")
@pytest.mark.parametrize("machines", [10, 1000])
@pytest.mark.parametrize("query", [
    # names the countries at three precisions and the price to set
    "workload=inference&model=llama-3-1-405b&precision=16&context=4096&requests=1&countries=CH&max_price=1",
    # the benchmark's empty answer: the countries at three precisions, each with a price and the tier to set
    "workload=inference&model=mixtral-8x7b&precision=16&context=4096&requests=1&countries=CH&tier=community"
    "&max_price=0.1",
])
def test_an_empty_answer_with_every_hint_costs_as_many_statements_whatever_the_fleet(
    client, models_and_gpus, django_assert_max_num_queries, machines, query
):
    """All the hints together cost two counting statements (the openings are counted at once, with
    the rounded limits' machines and, where nothing fits at all, the smaller sizes a size hint may name;
    the answer's snapshot folds no changes of its own before each), never a statement per hint or per
    machine; the answer's own counts saw fresh reports, so the fleet's last report is not asked: the
    whole answer stays within 6 statements (inside the test's transaction; the answer's own BEGIN and
    COMMIT add two)."""
    from catalog.fleets import generate_fleet

    generate_fleet(machines=machines, seed=7)
    with django_assert_max_num_queries(6):
        found = hints(client, query)
    assert any("max_price" in hint["changes"] and "countries" in hint["changes"] for hint in found)


@pytest.mark.postgresql(reason="the hints read the kept fleet counts; the embedded run scans its small fleet instead")
def test_the_hints_share_their_aggregates_and_work_each_fit_out_once_per_shape(client, models_and_gpus):
    """The benchmark's empty answer asks its openings of the counts per country over three precisions
    (three fits), two country sets (CH, and the 248 codes outside it), both tiers and three markets: its
    statement counts per country, tier and market, so the openings that differ only in those share a
    pair of filtered aggregates (no set of countries is looked up on any row), and each fit is worked
    out once per shape. A smaller context a size hint may name that some machine considered could hold
    joins the same statement: one more fit and one more pair each."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from catalog.fleets import generate_fleet

    generate_fleet(machines=200, seed=7)
    query = ("workload=inference&model=mixtral-8x7b&precision=16&context=4096&requests=1&countries=CH"
             "&tier=community&max_price=0.1")
    with CaptureQueriesContext(connection) as statements:
        found = hints(client, query)
    assert any(hint["changes"].get("precision") == "4" for hint in found)
    by_country = [
        s["sql"] for s in statements.captured_queries if "GROUP BY m.country, m.tier, m.market" in s["sql"]
    ]
    assert len(by_country) == 2  # the openings, the sizes among them; then the limits found to set
    first = by_country[0]
    sizes = first.count(" AS fit_") - 3
    # Per precision, two pairs: at the asked limit and at none (the wider markets' openings are at the
    # asked limit too): 6 pairs for all its openings, and one per size figure.
    assert first.count(") FILTER (WHERE") == 2 * (6 + sizes)
    assert "'{AD,AE," not in first  # the groups outside CH are picked after counting
    # every fit (of up to 16 GPUs: five counts each) worked out once, not once per opening
    assert 3 * 5 <= first.count("WHEN m.memory_per_gpu_mib >=") <= (3 + sizes) * 5


def test_halvings_past_what_the_largest_machine_holds_are_neither_sized_nor_counted(client, small_fleet, monkeypatch):
    """A need grows with its context and requests, so the halvings a size hint may name are sized from the
    smallest up and stop at the first that no machine considered could hold on any number of its GPUs:
    the hints are those every halving sized and counted would give, for fewer sizings."""
    from django.core.cache import cache

    from nodelodge.recommendations import relax

    query = "workload=inference&model=llama-3-1-8b&precision=16&context=131072&requests=2000"
    sized = []
    need_at = relax._need_at
    monkeypatch.setattr(relax, "_need_at", lambda *args: sized.append(args[1:3]) or need_at(*args))
    pruned = client.get("/api/v1/recommendations?" + query).json()["relax"]
    pruned_sized = len(sized)
    sized.clear()
    cache.clear()
    monkeypatch.setattr(relax, "_may_fit", lambda need, largest_memory_mib: True)
    every = client.get("/api/v1/recommendations?" + query).json()["relax"]
    assert any("context" in hint["changes"] for hint in every)
    assert pruned == every
    assert len(sized) == 17 + 10  # 65,536 … 1 tokens, 1,000 … 1 requests
    assert pruned_sized < len(sized)
