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
