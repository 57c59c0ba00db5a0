"""A GPU type's price history: the page (chart, table by day, filters with their errors beside them,
German numbers, the htmx partial), `GET /api/v1/gpu-types/{slug}/history`, the links from the result
rows, and the bounded work of each request however much history there is."""
import json
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nodelodge.refresh.history import hour_of
from nodelodge.refresh.models import ALL_COUNTRIES, PriceHistory
from tests.factories import SmallCatalog, make_gpu_type
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db
URL = "/gpus/h100-sxm-80gb/history/"
API = "/api/v1/gpu-types/h100-sxm-80gb/history"


@pytest.fixture
def catalog(db) -> SmallCatalog:
    return SmallCatalog(gpus=1)


def history(gpu_type, hours: int, *, countries=(ALL_COUNTRIES, "DE"), market="on_demand", start=0, now=None):
    """`hours` hourly rows per country: the cheapest $1.50 + 1 ¢ per hour of the day, median $2.10, and
    every other refresh with stock."""
    now = now or timezone.now()
    PriceHistory.objects.bulk_create([
        PriceHistory(gpu_type=gpu_type, market=market, country=country, hour=hour_of(now) - timedelta(hours=start + age),
                     cheapest_per_gpu_hour=Decimal("1.50") + Decimal(age % 24) / 100,
                     median_per_gpu_hour=Decimal("2.10"), offers=4, offers_in_stock=1, refreshes=2,
                     refreshes_with_stock=1, updated_at=now)
        for age in range(hours) for country in countries
    ])


def hours_drawn(html: str) -> int:
    """The hours the cheapest price's line passes through (a move or a line to each)."""
    return len(re.findall(r"[ML]", re.search(r'<path d="([^"]*)" class="series cheapest"', html).group(1)))


def stock_bars(html: str) -> int:
    return re.search(r'<path d="([^"]*)" class="stock"', html).group(1).count("z")


def test_the_page_draws_the_prices_and_the_stock_with_a_table_by_day(client, catalog):
    history(catalog.gpu_type, 48)
    page = client.get(URL)

    assert page.status_code == 200
    html = page.content.decode()
    assert "Price history of the H100 SXM 80GB" in html
    assert 'data-testid="history-chart"' in html and 'role="img"' in html
    assert hours_drawn(html) == 48 and stock_bars(html) == 48  # a point and a bar per hour
    assert "30-day median: $2.10 per GPU-hour" in html
    # the table: one row per day (two days of hours, or three where the window cuts one), a 50 % share
    assert 2 <= html.count('<th scope="row">') <= 3
    assert "$1.50" in html and "50%" in html


def test_the_german_page_writes_german_numbers(client, catalog):
    history(catalog.gpu_type, 24)
    html = client.get("/de" + URL).content.decode()

    assert "Preisverlauf der H100 SXM 80GB" in html
    assert "30-Tage-Median: 2,10 $ pro GPU-Stunde" in html
    assert "1,50 $" in html and "50 %" in html


def test_bad_filters_are_named_beside_their_fields_and_the_rest_is_kept(client, catalog):
    history(catalog.gpu_type, 5, market="interruptible")
    page = client.get(URL + "?market=interruptible&country=XX1")

    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="err-country"' in html and "Enter a two-letter country code such as DE or US." in html
    assert 'aria-describedby="err-country"' in html
    # The valid market still applies: its history is drawn.
    assert hours_drawn(html) == 5
    assert '<option value="interruptible" selected>' in html

    page = client.get(URL + "?market=spot")
    assert "Select a valid choice. spot is not one of the available choices." in page.content.decode()


def test_a_country_filter_draws_that_countrys_rows_and_lists_the_countries_with_history(client, catalog):
    history(catalog.gpu_type, 3, countries=("US",))
    history(catalog.gpu_type, 2, countries=(ALL_COUNTRIES, "DE"))
    history(catalog.gpu_type, 2, countries=("FR",), start=24 * 30)  # only before the 30 days
    history(catalog.gpu_type, 2, countries=("AT",), market="interruptible")  # another market
    html = client.get(URL + "?country=us").content.decode()

    assert hours_drawn(html) == 3
    assert '<option value="US" selected>' in html and '<option value="DE">' in html
    assert '<option value="FR">' not in html and '<option value="AT">' not in html
    assert client.get(API).json()["countries"] == ["DE", "US"]


def test_with_htmx_only_the_partial_is_rendered(client, catalog):
    history(catalog.gpu_type, 2)
    html = client.get(URL + "?country=DE", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="history").content.decode()

    assert html.startswith('<div id="history"') and "<html" not in html


def test_without_history_the_page_says_so_and_an_unknown_gpu_type_is_404(client, catalog):
    assert 'data-testid="no-history"' in client.get(URL).content.decode()
    assert client.get("/gpus/no-such-gpu/history/").status_code == 404


def test_each_request_reads_a_bounded_number_of_rows_whatever_the_history(client, catalog):
    """Statements are the same with one hour as with every hour of 90 days in 30 countries; the series
    is at most 720 hours and the table at most 31 days."""
    countries = [ALL_COUNTRIES, *("AT BE BG CH CY CZ DE DK EE ES FI FR GB GR HR HU IE IS IT LT LU LV MT NL "
                                  "NO PL PT RO SE".split())]
    counts = []
    for hours in (1, 90 * 24):
        PriceHistory.objects.all().delete()
        history(catalog.gpu_type, hours, countries=countries)
        with CaptureQueriesContext(connection) as statements:
            html = client.get(URL).content.decode()
        counts.append(len(statements))
    assert counts[0] == counts[1]
    assert hours_drawn(html) == 720 and stock_bars(html) == 720
    assert html.count('<th scope="row">') <= 31
    assert html.count('<option value="') == 1 + 3 + 29  # every country, the markets, the countries


def test_the_api_answers_the_same_series_capped_at_720_hours(client, catalog):
    history(catalog.gpu_type, 800)
    answer = client.get(API + "?country=DE").json()

    assert (answer["gpu_type"], answer["market"], answer["country"]) == ("H100 SXM 80GB", "on_demand", "DE")
    assert len(answer["hours"]) == 720
    assert answer["median_30d_per_gpu_hour"] == "2.10000"
    assert answer["countries"] == ["DE"]
    assert answer["page_url"] == URL
    first = answer["hours"][0]
    assert (first["median_per_gpu_hour"], first["refreshes"], first["refreshes_with_stock"]) == ("2.10000", 2, 1)
    assert answer["hours"] == sorted(answer["hours"], key=lambda hour: hour["hour"])


def test_the_api_names_each_bad_parameter_and_an_unknown_slug(client, catalog):
    answer = client.get(API + "?market=spot&country=Germany")
    assert answer.status_code == 400
    assert set(answer.json()["errors"]) == {"market", "country"}
    missing = client.get("/api/v1/gpu-types/nope/history")
    assert missing.status_code == 404 and "slug" in missing.json()["errors"]


def test_the_api_schema_states_the_operation(client, catalog):
    schema = client.get("/api/v1/openapi.json").json()
    operation = schema["paths"]["/api/v1/gpu-types/{slug}/history"]["get"]
    assert {parameter["name"] for parameter in operation["parameters"]} == {"slug", "market", "country"}
    # its own markets (those its prices are kept in), not the query's market preference
    market = next(parameter for parameter in operation["parameters"] if parameter["name"] == "market")
    assert market["schema"]["enum"] == ["on_demand", "interruptible", "reserved", ""]
    assert "gpu_history_url" in schema["components"]["schemas"]["MachineOut"]["properties"]


def test_each_result_row_links_its_gpu_name_to_the_history(client, catalog):
    catalog.machine()
    make_gpu_type("RTX 4090", memory_mib=24564)

    html = client.get("/?" + LLAMA_8B).content.decode()
    assert f'href="{URL}" class="gpu-history-link"' in html
    assert 'href="/de' + URL + '"' in client.get("/de/?" + LLAMA_8B).content.decode()
    rows = client.get("/api/v1/recommendations?" + LLAMA_8B).json()["machines"]
    assert [row["gpu_history_url"] for row in rows] == [URL]


def test_the_command_writes_the_apis_answer_and_names_a_bad_option(client, catalog, capsys):
    history(catalog.gpu_type, 30)
    call_command("gpu_history", "h100-sxm-80gb", "--country", "de", "--json")
    assert json.loads(capsys.readouterr().out) == client.get(API + "?country=DE").json()
    call_command("gpu_history", "h100-sxm-80gb")
    assert "30-day median $2.10000 per GPU-hour" in capsys.readouterr().out
    with pytest.raises(CommandError, match="--market: Select a valid choice"):
        call_command("gpu_history", "h100-sxm-80gb", "--market", "spot")
    with pytest.raises(CommandError, match="No GPU type has the slug"):
        call_command("gpu_history", "nope")


def test_the_rows_history_links_cost_no_statement(client, catalog):
    """The walk reads each shown machine's GPU slug with it: the links need no statement of their own."""
    catalog.machine()
    for path in ("/api/v1/recommendations?" + LLAMA_8B, "/?" + LLAMA_8B):
        with CaptureQueriesContext(connection) as statements:
            assert client.get(path).status_code == 200
        alone = [s["sql"] for s in statements.captured_queries
                 if s["sql"].lstrip().startswith("SELECT") and 'FROM "catalog_gputype"' in s["sql"]
                 and "JOIN" not in s["sql"]]
        assert alone == [], alone
    rows = client.get("/api/v1/recommendations?" + LLAMA_8B).json()["machines"]
    assert [row["gpu_history_url"] for row in rows] == [URL]
