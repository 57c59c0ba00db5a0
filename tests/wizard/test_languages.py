"""English at /, German at /de/: the pages' words, field messages, numbers and dates in German, the
language chosen by the browser or remembered, a switch that keeps the page, and the API's messages
in the language of Accept-Language."""
import re
from urllib.parse import quote

import pytest

from tests.helpers import LLAMA_8B

GERMAN = {"HTTP_ACCEPT_LANGUAGE": "de-DE,de;q=0.9,en;q=0.5"}


def field_error(html: str, field: str) -> str:
    match = re.search(rf'<p class="field-error" id="err-{field}"[^>]*>([^<]*)</p>', html)
    assert match, f"no error beside {field}"
    return match.group(1)


def test_the_german_page_is_german(client, small_fleet):
    html = client.get("/de/?" + LLAMA_8B).content.decode()
    assert '<html lang="de">' in html
    for words in ("Was Sie tun möchten", "Welches Modell", "Budget und Präferenzen", "Präzision",
                  "Kontext pro Anfrage (Token)", "Gleichzeitige Anfragen", "Empfohlene Maschinen",
                  "Benötigter GPU-Speicher", "Warum sie passt", "Grenzen", "Berücksichtigte Vorgaben",
                  "Anmelden", "Maschinen anzeigen"):
        assert words in html, words
    assert "Recommended machines" not in html and "Why it fits" not in html


def test_the_english_page_stays_english_at_the_root(client, small_fleet):
    response = client.get("/?" + LLAMA_8B)
    html = response.content.decode()
    assert response.status_code == 200
    assert '<html lang="en">' in html and "Recommended machines" in html and "Why it fits" in html


def test_german_numbers_on_the_page_and_neutral_ones_in_forms_and_links(client, small_fleet):
    html = client.get("/de/?" + LLAMA_8B + "&budget=100").content.decode()
    # The per-GPU bar is written by the console: decimal commas.
    assert re.search(r"\d+,\d\d GiB benötigt pro GPU von \d+,\d\d GiB auf", html)
    # Launch's hidden price and the result's links stay as the query string writes them.
    assert re.search(r'name="price_per_hour" value="\d+\.\d\d"', html)
    assert 'name="price_per_hour" value="0,40"' not in html
    assert "budget=100" in html
    # What a budget covers, with German separators: $1,000 at $0.40/h is 2,500 hours.
    budget = client.get("/de/?" + LLAMA_8B + "&budget=1000").content.decode()
    assert "2.500,0 Std." in budget
    assert "2,500.0 h" in client.get("/?" + LLAMA_8B + "&budget=1000").content.decode()


@pytest.mark.parametrize(
    ("query", "field", "german"),
    [
        (LLAMA_8B.replace("context=4096", "context=0"), "context", "Der Kontext muss mindestens 1 Token umfassen."),
        (LLAMA_8B.replace("context=4096", "context=20000000"), "context",
         "Der Kontext darf höchstens 10.000.000 Token umfassen."),
        (LLAMA_8B + "&countries=UK", "countries", "UK ist kein ISO-Code: Meinten Sie GB?"),
        ("workload=finetune&model=llama-3-1-8b&precision=16&context=4096&requests=0", "requests",
         "Die Batchgröße muss mindestens 1 sein."),
    ],
)
def test_a_german_validation_message_beside_its_field(client, small_fleet, query, field, german):
    response = client.get("/de/?" + query)
    assert response.status_code == 200
    html = response.content.decode()
    assert field_error(html, field) == german
    assert "Berechnet wird erst, wenn das markierte Feld korrigiert ist:" in html


def test_the_as_you_type_messages_are_german_on_the_german_page(client, small_fleet):
    html = client.get("/de/?" + LLAMA_8B).content.decode()
    assert 'data-msg-min="Der Kontext muss mindestens 1 Token umfassen."' in html
    assert 'data-msg-max="Der Kontext darf höchstens 10.000.000 Token umfassen."' in html
    english = client.get("/?" + LLAMA_8B).content.decode()
    assert 'data-msg-max="Context can be at most 10,000,000 tokens."' in english


def test_a_german_empty_result(client, small_fleet):
    html = client.get("/de/?" + LLAMA_8B + "&max_price=0.05").content.decode()
    match = re.search(r'data-testid="empty-reason"><strong>([^<]*)</strong>', html)
    assert match and match.group(1) == "Keine Maschine erfüllt jede Präferenz."
    assert "keine Maschine erfüllt jede Präferenz" in html  # the summary bar


def test_the_switch_keeps_the_page_and_remembers_the_choice(client, small_fleet):
    html = client.get("/?" + LLAMA_8B + "&budget=100").content.decode()
    link = re.search(r'<a href="(/language/de/\?next=[^"]+)"[^>]*data-language="de"', html)
    assert link, "the top bar links to the German page"
    href = link.group(1).replace("&amp;", "&")
    # The answer's canonical address: every preference written out, as the address bar shows it.
    assert href == "/language/de/?next=" + quote("/?" + LLAMA_8B + "&budget=100&tier=both", safe="/")

    response = client.get(href)
    assert response.status_code == 302
    assert response["Location"] == "/de/?" + LLAMA_8B + "&budget=100&tier=both"
    assert response.cookies["django_language"].value == "de"
    # Remembered: the English address now leads to the German page, query and all.
    again = client.get("/?" + LLAMA_8B)
    assert again.status_code == 302 and again["Location"] == "/de/?" + LLAMA_8B

    german = client.get("/de/?" + LLAMA_8B + "&budget=100").content.decode()
    back = re.search(r'<a href="(/language/en/\?next=[^"]+)"', german).group(1).replace("&amp;", "&")
    response = client.get(back)
    assert response["Location"] == "/?" + LLAMA_8B + "&budget=100&tier=both"
    assert response.cookies["django_language"].value == "en"
    assert client.get("/?" + LLAMA_8B, **GERMAN).status_code == 200  # the choice beats the browser


def test_the_switch_refuses_to_leave_the_site(client, db):
    response = client.get("/language/de/?next=https://elsewhere.example/")
    assert response["Location"] == "/de/"


def test_the_browser_language_sends_a_page_to_its_german_address(client, small_fleet):
    response = client.get("/?" + LLAMA_8B, **GERMAN)
    assert response.status_code == 302 and response["Location"] == "/de/?" + LLAMA_8B
    assert "Accept-Language" in response["Vary"]
    assert client.get("/calculators/", **GERMAN)["Location"] == "/de/calculators/"
    # Without a header, and for English, the page is English where it is.
    assert client.get("/?" + LLAMA_8B).status_code == 200
    assert client.get("/", HTTP_ACCEPT_LANGUAGE="en-GB,en;q=0.9,de;q=0.8").status_code == 200
    # HTMX swaps keep the language of the page that sends them.
    assert client.get("/?" + LLAMA_8B, HTTP_HX_REQUEST="true", **GERMAN).status_code == 200


def test_htmx_pushes_the_german_address(client, small_fleet):
    response = client.get(
        "/de/?" + LLAMA_8B, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="result"
    )
    assert response["HX-Push-Url"].startswith("/de/?workload=inference")


def test_the_api_answers_in_the_language_of_accept_language(client, small_fleet):
    url = "/api/v1/estimate?" + LLAMA_8B.replace("context=4096", "context=0")
    english = client.get(url)
    assert english.status_code == 400
    assert english.json() == {"errors": {"context": "Context must be at least 1 token."}}
    german = client.get(url, **GERMAN)
    assert german.status_code == 400
    assert german.json() == {"errors": {"context": "Der Kontext muss mindestens 1 Token umfassen."}}
    assert "Accept-Language" in german["Vary"]
    # A German language cookie does not change a script's answer; only the header does.
    client.cookies["django_language"] = "de"
    assert client.get(url).json()["errors"]["context"] == "Context must be at least 1 token."
    missing = client.get("/api/v1/nothing-here", **GERMAN)
    assert missing.status_code == 404
    assert missing.json()["errors"]["path"].startswith("Diesen API-Endpunkt gibt es nicht.")


def test_the_api_keys_and_values_stay_neutral_in_german(client, small_fleet):
    english = client.get("/api/v1/recommendations?" + LLAMA_8B + "&budget=100").json()
    german = client.get("/api/v1/recommendations?" + LLAMA_8B + "&budget=100", **GERMAN).json()
    assert english.keys() == german.keys()
    first_en, first_de = english["machines"][0], german["machines"][0]
    assert first_en["price_per_hour"] == first_de["price_per_hour"] and "." in first_de["price_per_hour"]
    assert first_en["confidence"] == first_de["confidence"] in ("high", "medium", "low")


def test_the_german_404_page(client, db):
    response = client.get("/de/no-such-page/")
    assert response.status_code == 404
    assert "Seite nicht gefunden" in response.content.decode()


def test_the_german_calculators_and_tiers_pages(client, db):
    html = client.get("/de/calculators/?parameters=7x&precision=FP16").content.decode()
    assert "GPU-Anzahl für einen Zieldurchsatz" in html
    assert "„7x“ ist keine Parameterzahl." in html
    assert "Der Anbieter kann den Arbeitsspeicher Ihrer Sitzung lesen." in client.get(
        "/de/secure-and-community/"
    ).content.decode()


def test_the_error_pages_and_the_rate_limit_speak_german():
    from django.template.loader import render_to_string
    from django.utils import translation

    from nodelodge.hardening.faults import database_unavailable_json, database_unavailable_page
    from nodelodge.hardening.throttling import throttled_message

    with translation.override("de"):
        page = database_unavailable_page().content.decode()
        assert '<html lang="de">' in page and "Vorübergehend nicht verfügbar" in page
        assert 'href="/de/"' in page
        assert database_unavailable_json().content.decode().count("Die Datenbank der Konsole antwortet") == 1
        assert "Etwas ist schiefgegangen" in render_to_string("500.html")
        message = throttled_message(5)
    assert message.startswith("Zu viele Anfragen von diesem Client: höchstens")
    assert message.endswith("Versuchen Sie es in 5 Sekunden erneut.")


def test_the_switch_carries_the_answer_not_the_typing(client, small_fleet):
    """A budget typed the German way reaches the English page as the same amount."""
    german = client.get("/de/?" + LLAMA_8B + "&budget=1.000").content.decode()
    back = re.search(r'<a href="(/language/en/\?next=[^"]+)"', german).group(1).replace("&amp;", "&")
    english = client.get(client.get(back)["Location"]).content.decode()

    budget = re.search(r'<input[^>]*name="budget"[^>]*>', english).group(0)
    assert 'value="1000"' in budget and "aria-invalid" not in budget, budget
