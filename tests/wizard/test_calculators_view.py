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
