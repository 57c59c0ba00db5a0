"""Numbers as people type them: the page reads them as its language writes them (12,50 and 1.000 on
the German page, 12.50 and 1,000 on the English one); the API and the links the console writes stay
plain dot decimals; a limit's message is said once, beside its field."""
import html as html_lib
import re

import pytest

from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

THROUGHPUT = LLAMA_8B + "&efficiency=75&redundancy=1"


def permalink(html: str) -> str:
    """The query of the result's own link, which writes every value as the console reads it."""
    match = re.search(r'<a href="\?([^"]*)" data-testid="permalink">', html)
    assert match, "no result"
    return html_lib.unescape(match.group(1))


def field_error(html: str, field: str) -> str:
    match = re.search(rf'<p class="field-error" id="err-{field}"[^>]*>([^<]*)</p>', html)
    assert match, f"no message beside {field}"
    return html_lib.unescape(match.group(1))


def field_value(html: str, field: str) -> str:
    match = re.search(rf'<input [^>]*name="{field}"[^>]*value="([^"]*)"', html)
    assert match, f"no input {field}"
    return html_lib.unescape(match.group(1))


@pytest.mark.parametrize(
    ("german", "english", "written"),
    [
        ("budget=12,50", "budget=12.50", "budget=12.50"),
        ("max_price=0,5", "max_price=0.5", "max_price=0.5"),
        ("budget=1.000", "budget=1,000", "budget=1000"),
        ("budget=1.000,50", "budget=1,000.50", "budget=1000.50"),
        ("max_price=1.000,5", "max_price=1,000.5", "max_price=1000.5"),
    ],
)
def test_money_typed_in_the_pages_language_is_the_same_amount(client, small_fleet, german, english, written):
    german_link = permalink(client.get(f"/de/?{LLAMA_8B}&{german}").content.decode())
    english_link = permalink(client.get(f"/?{LLAMA_8B}&{english}").content.decode())
    assert written in german_link.split("&")
    assert german_link == english_link


def test_a_german_budget_with_a_comma_is_not_multiplied_by_a_hundred(client, small_fleet):
    # $12.50 at the cheapest fitting $0.40/h lasts 31.25 hours, shown as 31,3 hours in German.
    html = client.get(f"/de/?{LLAMA_8B}&budget=12,50").content.decode()
    assert "31,3 Std." in html
    assert "3.125,0 Std." not in html


@pytest.mark.parametrize(
    ("path", "typed", "written"),
    [
        ("/", "max_price=1,5", "max_price=1.5"),  # a comma before one digit never groups thousands
        ("/", "budget=12,50", "budget=12.50"),
        ("/de/", "max_price=1.5", "max_price=1.5"),  # nor does a dot before one digit (Django reads it so)
        ("/de/", "budget=1.000,50", "budget=1000.50"),
        ("/", "budget=1.000,50", "budget=1000.50"),  # the German way in full, on the English page
        ("/de/", "budget=1,000.50", "budget=1000.50"),
        ("/", "budget=1 000", "budget=1000"),  # a space groups in every language
    ],
)
def test_a_number_only_the_other_language_can_read_means_what_it_says_there(
    client, small_fleet, path, typed, written
):
    assert written in permalink(client.get(f"{path}?{LLAMA_8B}&{typed}").content.decode()).split("&")


@pytest.mark.parametrize(
    ("path", "typed", "message"),
    [
        # Both languages can read these; the page's decides, and a money field takes cents only.
        ("/", "1.000", "The budget takes at most 2 decimal places (cents)."),
        ("/de/", "1,000", "Das Budget hat höchstens 2 Nachkommastellen (Cent)."),
        # Neither can.
        ("/", "1,00,000", "The budget must be an amount in USD, such as 50 or 12.50."),
        ("/de/", "12,5,0", "Das Budget muss ein Betrag in USD sein, etwa 50 oder 12,50."),
    ],
)
def test_money_that_cannot_be_read_one_way_gets_a_message_beside_its_field(client, small_fleet, path, typed, message):
    html = client.get(f"{path}?{LLAMA_8B}&budget={typed}").content.decode()
    assert field_error(html, "budget") == message
    assert field_value(html, "budget") == typed  # what was typed stays in the box
    assert 'data-testid="permalink"' not in html


@pytest.mark.parametrize(
    ("path", "typed", "written"),
    [
        ("/de/", "context=8.192", "context=8192"),
        ("/", "context=8,192", "context=8192"),
        ("/de/", "target_tokens=180.000", "target_tokens=180000"),
        ("/", "target_tokens=180,000", "target_tokens=180000"),
        ("/de/", "target_tokens=2,5", "target_tokens=2.5"),
    ],
)
def test_other_numbers_are_read_as_the_page_writes_them(client, small_fleet, path, typed, written):
    assert written in permalink(client.get(f"{path}?{THROUGHPUT}&{typed}").content.decode()).split("&")


def test_notebook_memory_takes_a_german_comma(client, small_fleet):
    german = permalink(client.get("/de/?workload=notebook&memory_gib=19,5").content.decode())
    assert "memory_gib=19.5" in german.split("&")


def test_a_throughput_with_three_decimals_keeps_its_value_through_its_link_on_the_german_page(client, small_fleet):
    link = permalink(client.get(f"/de/?{THROUGHPUT}&target_tokens=1,234").content.decode())
    # 1.234 would read as 1234 on the German page: the link writes it so that every reading agrees.
    assert "target_tokens=1234e-3" in link.split("&")
    for path in ("/de/", "/"):
        assert permalink(client.get(f"{path}?{link}").content.decode()) == link
    assert client.get(f"/api/v1/recommendations?{link}").status_code == 200


@pytest.mark.parametrize("accept_language", ["en", "de-DE,de;q=0.9"])
def test_the_api_reads_only_dot_decimals_whatever_the_language(client, small_fleet, accept_language):
    headers = {"HTTP_ACCEPT_LANGUAGE": accept_language}
    # The German page reads 12,50 as $12.50; the API, in any language, takes only 12.50.
    assert "budget=12.50" in permalink(client.get(f"/de/?{LLAMA_8B}&budget=12,50").content.decode()).split("&")
    refused = client.get(f"/api/v1/recommendations?{LLAMA_8B}&budget=12,50", **headers)
    assert refused.status_code == 400
    assert "budget" in refused.content.decode()
    three_places = client.get(f"/api/v1/recommendations?{LLAMA_8B}&budget=1.000", **headers)
    assert three_places.status_code == refused.status_code  # 1.000 is 1 with three places, never 1000
    answered = client.get(f"/api/v1/recommendations?{LLAMA_8B}&budget=12.50", **headers)
    assert answered.status_code == 200
    assert answered.json()["machines"][0]["budget_hours"] == 41.66  # $12.50 at $0.30/h, never $1,250


@pytest.mark.parametrize(
    ("path", "field", "typed", "message"),
    [
        ("/", "budget", "99999999999999", "The budget can be at most $1,000,000,000."),
        ("/de/", "budget", "99999999999999", "Das Budget darf höchstens 1.000.000.000 $ betragen."),
        ("/", "max_price", "99999999999999", "The max price can be at most $1,000,000,000 per hour."),
        ("/de/", "max_price", "1e999999999", None),
        ("/", "target_tokens", "99999999999999", "The throughput to serve can be at most 100,000,000 tokens/s."),
        ("/de/", "target_tokens", "99999999999999", None),
    ],
)
def test_a_limits_message_is_said_once(client, small_fleet, path, field, typed, message):
    html = client.get(f"{path}?{THROUGHPUT}&{field}={typed}").content.decode()
    said = field_error(html, field)
    if message is not None:
        assert said == message
    sentences = [sentence for sentence in re.split(r"(?<=\.)\s+", said) if sentence]
    assert len(sentences) == 1, said
    summary = re.search(r'<li data-field="' + field + r'">(.*?)</li>', html, re.S).group(1)
    assert html_lib.unescape(summary).count(said) == 1
