import html as html_lib
import re

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_throughput_example_of_the_spec(client):
    html = client.get(reverse("wizard:calculators"),
                      {"target": "180000", "measured": "75000", "efficiency": "75", "redundancy": "1"}).content.decode()
    assert "5 GPUs" in html and "4 productive + 1 redundancy" in html
    assert "does not check that the model fits" in html


def test_rule_of_thumb_example_of_the_spec(client):
    html = client.get(reverse("wizard:calculators"), {"parameters": "7000000000", "precision": "FP16"}).content.decode()
    assert "21.01 GB" in html
    assert "10^9" in html or "10⁹" in html or "GB" in html


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"target": "180000", "measured": "75000", "efficiency": "150", "redundancy": "1"}, "efficiency"),
        ({"target": "180000", "measured": "0", "efficiency": "75", "redundancy": "1"}, "measured"),
        ({"target": "-1", "measured": "75000", "efficiency": "75", "redundancy": "1"}, "target"),
        ({"parameters": "0", "precision": "FP16"}, "parameters"),
        ({"parameters": "7000000000", "precision": "FP12"}, "precision"),
    ],
)
def test_bad_input_is_explained_beside_its_field(client, params, field):
    response = client.get(reverse("wizard:calculators"), params)
    assert response.status_code == 200
    assert f'id="err-{field}"' in response.content.decode()


@pytest.mark.parametrize("typed", ["7B", "7b", "70e8", "7,000,000,000", "7 000 000 000", "7000000000", "7e9"])
def test_a_parameter_count_is_read_as_people_write_it(client, typed):
    html = client.get(reverse("wizard:calculators"), {"parameters": typed, "precision": "FP16"}).content.decode()
    assert "21.01 GB" in html and "7,000,000,000 parameters" in html


@pytest.mark.parametrize("typed", ["7X", "seven", "7.5", "1,0000"])
def test_a_parameter_count_that_cannot_be_read_is_refused_in_words(client, typed):
    html = client.get(reverse("wizard:calculators"), {"parameters": typed, "precision": "FP16"}).content.decode()
    assert 'id="err-parameters"' in html and "7B, 70e9 or 7,000,000,000" in html
    assert 'data-testid="rule-result"' not in html


def test_precision_defaults_to_16_bit(client):
    html = client.get(reverse("wizard:calculators")).content.decode()
    assert '<option value="FP16" selected>' in html


def test_submitting_one_calculator_keeps_the_others_answer(client):
    both = {"target": "180000", "measured": "75000", "efficiency": "75", "redundancy": "1",
            "parameters": "7B", "precision": "FP16"}
    html = client.get(reverse("wizard:calculators"), both).content.decode()
    assert 'data-testid="throughput-result"' in html and 'data-testid="rule-result"' in html
    # each form carries the other's values as hidden fields
    assert '<input type="hidden" name="parameters" value="7B">' in html
    assert '<input type="hidden" name="target" value="180000">' in html


def field_error(html: str, field: str) -> str:
    match = re.search(rf'<p class="field-error" id="err-{field}"[^>]*>([^<]*)</p>', html)
    assert match, f"no message beside {field}"
    return html_lib.unescape(match.group(1))


@pytest.mark.parametrize(
    ("path", "typed", "meant"),
    [("/calculators/", "7", "7B"), ("/calculators/", "70", "70B"), ("/calculators/", "1.5", "1.5B"),
     ("/de/calculators/", "7", "7B"), ("/de/calculators/", "1,5", "1,5B")],
)
def test_a_bare_small_figure_is_refused_with_the_count_it_probably_means(client, path, typed, meant):
    html = client.get(path, {"parameters": typed, "precision": "FP16"}).content.decode()
    message = field_error(html, "parameters")
    assert f"{meant}?" in message
    assert ("did you mean" in message) if path == "/calculators/" else ("Meinten Sie" in message)
    assert 'data-testid="rule-result"' not in html
    assert f'value="{typed}"' in html  # what was typed stays in the box


@pytest.mark.parametrize("typed", ["7.000.000.000", "7B", "7 000 000 000", "7000000000", "7e9"])
def test_the_german_page_reads_a_parameter_count_as_germans_write_it(client, typed):
    html = client.get("/de/calculators/", {"parameters": typed, "precision": "FP16"}).content.decode()
    assert "21,01 GB" in html and "7.000.000.000 Parameter" in html


def test_the_german_page_reads_a_decimal_comma_in_a_parameter_count(client):
    html = client.get("/de/calculators/", {"parameters": "7,5B", "precision": "FP16"}).content.decode()
    assert "7.500.000.000 Parameter" in html
    english = client.get("/calculators/", {"parameters": "7.5B", "precision": "FP16"}).content.decode()
    assert "7,500,000,000 parameters" in english


def test_the_german_gpu_count_reads_german_numbers(client):
    html = client.get("/de/calculators/", {"target": "180.000", "measured": "75.000", "efficiency": "75,0",
                                           "redundancy": "1"}).content.decode()
    assert "5 GPUs" in html and "4 produktiv + 1 Redundanz" in html


@pytest.mark.parametrize(("path", "total"), [("/calculators/", "2,533.30 GB"), ("/de/calculators/", "2.533,30 GB")])
def test_the_rule_of_thumbs_total_is_grouped_as_the_language_writes_it(client, path, total):
    html = client.get(path, {"parameters": "1T", "precision": "FP16"}).content.decode()
    assert re.search(r'data-testid="total-gb">([^<]*)<', html).group(1) == total


@pytest.mark.parametrize(
    ("path", "total", "split"),
    [("/calculators/", "1,000,000,001,000 GPUs", "1,000,000,000,000 productive + 1,000 redundancy"),
     ("/de/calculators/", "1.000.000.001.000 GPUs", "1.000.000.000.000 produktiv + 1.000 Redundanz")],
)
def test_the_gpu_counts_total_is_grouped_as_the_language_writes_it(client, path, total, split):
    html = client.get(path, {"target": "1000000000000", "measured": "1", "efficiency": "100",
                             "redundancy": "1000"}).content.decode()
    assert re.search(r'data-testid="total-gpus">([^<]*)<', html).group(1) == total
    assert split in html


@pytest.mark.parametrize(
    ("path", "params", "field", "message"),
    [
        ("/calculators/", {"target": "", "measured": "75000", "efficiency": "75", "redundancy": "1"}, "target",
         "Enter the throughput target in tokens per second."),
        ("/de/calculators/", {"target": "", "measured": "75000", "efficiency": "75", "redundancy": "1"}, "target",
         "Geben Sie den Zieldurchsatz in Token pro Sekunde ein."),
        ("/calculators/", {"target": "180000", "measured": "75000", "efficiency": "75", "redundancy": "-1"},
         "redundancy", "The redundancy cannot be negative; 0 means none."),
        ("/calculators/", {"target": "1e13", "measured": "75000", "efficiency": "75", "redundancy": "1"}, "target",
         "The throughput target can be at most 1,000,000,000,000 tokens/s."),
        ("/de/calculators/", {"target": "1e13", "measured": "75000", "efficiency": "75", "redundancy": "1"},
         "target", "Der Zieldurchsatz darf höchstens 1.000.000.000.000 Token/s betragen."),
        ("/de/calculators/", {"target": "180000", "measured": "abc", "efficiency": "75", "redundancy": "1"},
         "measured", "Der gemessene Durchsatz muss eine Zahl von Token pro Sekunde sein, etwa 75000."),
        ("/calculators/", {"target": "180000", "measured": "75000", "efficiency": "150", "redundancy": "1"},
         "efficiency", "The efficiency can be at most 100 percent."),
    ],
)
def test_the_gpu_count_form_is_checked_by_the_server_in_the_pages_words(client, path, params, field, message):
    html = client.get(path, params).content.decode()
    assert field_error(html, field) == message  # said once, beside the field
    assert re.search(rf'<input[^>]*name="{field}"[^>]*aria-describedby="err-{field}"', html)
    assert 'data-testid="throughput-result"' not in html
    # The server's message is what the person sees: the browser's own checks are off.
    assert re.search(r'<form [^>]*novalidate[^>]*>\s*<label for="id_target"', html)


@pytest.mark.parametrize("path", ["/calculators/", "/de/calculators/"])
@pytest.mark.parametrize("typed", ["1e999999999", "1e-999999999B", "9" * 40])
def test_an_enormous_parameter_count_is_refused_in_words(client, path, typed):
    response = client.get(path, {"parameters": typed, "precision": "FP16"})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="err-parameters"' in html and 'data-testid="rule-result"' not in html
