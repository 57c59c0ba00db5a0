"""Small things a new user meets on the wizard: the German heading and Selected line, place names
in German, one active-parameter figure per screen, a precision that does not follow the workload
switch onto another model, and no model's config on a notebook."""
import re

import pytest

from catalog.models import Machine
from tests.helpers import LLAMA_8B, with_details_opened

pytestmark = pytest.mark.django_db


def visible_text(html: str) -> str:
    """The page's text as read: no tags, scripts, styles or attribute values."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_german_heading_says_what_the_page_does_in_german(client, small_fleet):
    html = client.get("/de/?" + LLAMA_8B).content.decode()
    assert re.search(r"<h1>Nach Workload starten</h1>", html)
    assert "<title>Nach Workload starten · Node Lodge</title>" in html
    assert "Launch by workload" not in html


def test_the_german_selected_line_is_german(client, small_fleet):
    text = visible_text(client.get("/de/?workload=inference&model=gpt-oss-120b&precision=4&context=4096"
                                   "&requests=1").content.decode())
    selected = re.search(r"Ausgewählt: (.*?) veröffentlichte Konfiguration", text).group(1)
    assert "116,83B Parameter, davon 5,71B aktiv pro Token" in selected
    assert "total" not in selected and "active" not in selected
    gemma = visible_text(client.get("/de/?workload=inference&model=gemma-3-27b&precision=16&context=4096"
                                    "&requests=1").content.decode())
    assert "vision encoder" not in gemma and "incl." not in gemma


def test_one_screen_gives_one_active_figure_with_its_meaning(client, small_fleet):
    html = client.get("/?workload=inference&model=gpt-oss-120b&precision=4&context=4096&requests=1").content.decode()
    text = visible_text(html)
    assert "116.83B parameters, 5.71B active per token" in text  # the Selected line
    assert "116.83B total · 5.71B active" in text  # the list: the same figures
    assert "5.1B" not in text
    # The model card's figure is in the title, with what the figure shown counts.
    assert ('title="Counted from the configuration, embeddings included; published: 117B total · 5.1B active"'
            in html)


@pytest.mark.parametrize(("region", "german"), [("Vienna", "Wien"), ("Bavaria", "Bayern"), ("Zurich", "Zürich"),
                                                 ("Turin", "Turin")])
def test_places_are_named_in_german_on_the_german_page(client, small_fleet, region, german):
    Machine.objects.filter(pk=small_fleet["cheap_4090"].pk).update(region=region)
    german_text = visible_text(client.get("/de/?" + LLAMA_8B).content.decode())
    assert f", {german}" in german_text
    # The API's values stay the feed's, whatever the language of its words.
    api = client.get("/api/v1/recommendations?" + LLAMA_8B, HTTP_ACCEPT_LANGUAGE="de").json()
    assert region in [machine["region"] for machine in api["machines"]]


def checked_precision(html: str) -> str:
    select = re.search(r'<select[^>]*name="precision".*?</select>', html, flags=re.S).group(0)
    return re.search(r'<option value="(\d+)"[^>]*selected', select).group(1)


def test_switching_from_qlora_to_images_starts_the_image_model_at_its_own_precision(client, small_fleet):
    """The workload switch sends the form as it was: QLoRA's 4-bit does not carry over to SDXL."""
    qlora = "workload=finetune&model=llama-3-1-8b&precision=4&context=2048&requests=1"
    assert checked_precision(client.get("/?" + qlora).content.decode()) == "4"
    switched = client.get("/?" + qlora.replace("workload=finetune", "workload=image"))
    html = switched.content.decode()
    assert checked_precision(html) == "16"
    assert "Stable Diffusion XL" in html and "16-bit" in visible_text(html)


def test_switching_between_workloads_of_the_same_model_keeps_its_precision(client, small_fleet):
    html = client.get("/?workload=inference&model=llama-3-1-8b&precision=4&context=2048&requests=1").content.decode()
    assert checked_precision(html) == "4"


def test_a_notebook_links_to_no_model_config(client, small_fleet):
    # The form sends the model field along from the workload before; a notebook has none.
    html = client.get("/?workload=notebook&memory_gib=24&model=llama-3-1-8b").content.decode()
    assert 'data-testid="total-gib"' in html
    assert "config.json" not in html and "published config" not in html


def test_a_hosts_doubtful_memory_figure_is_worded_in_german(client, small_fleet):
    from catalog.fleets import memory_flag_for

    flag = memory_flag_for(20_398, 24_576, "RTX 4090")
    assert flag == "Reported 20,398 MiB per GPU; the RTX 4090 datasheet figure is 24,576 MiB (-17.0%)."
    Machine.objects.filter(pk=small_fleet["cheap_4090"].pk).update(memory_flag=flag)
    german = visible_text(with_details_opened(client, client.get("/de/?" + LLAMA_8B).content.decode()))
    assert "Gemeldet: 20.398 MiB pro GPU; laut Datenblatt hat die RTX 4090 24.576 MiB (-17,0 %)." in german
    assert "Reported" not in german
    english = visible_text(with_details_opened(client, client.get("/?" + LLAMA_8B).content.decode()))
    assert flag in english
