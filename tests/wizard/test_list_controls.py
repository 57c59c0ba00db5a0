"""The machine list's controls and the message beside each field, as `wizard.list_controls` writes them:
what a person reads and what the page's script and htmx need (the chosen option, the message beside its
field, escaping)."""
from __future__ import annotations

import re

import pytest
from django.utils import translation

from nodelodge.field_values import FieldValues
from nodelodge.recommendations.sorts import CONFIDENCE_FILTERS, GROUPS, SORT_CHOICES
from nodelodge.wizard.list_controls import field_error, list_controls

GPUS = ("A100 80GB", "H100 SXM", "RTX 4090")


def controls(values=None, errors=None, gpus=GPUS) -> str:
    return str(list_controls(FieldValues(values or {}), FieldValues(errors or {}), SORT_CHOICES,
                             CONFIDENCE_FILTERS, GROUPS, gpus))


def chosen(html: str, name: str) -> list[str]:
    select = re.search(rf'<select id="id_{name}"[^>]*>(.*?)</select>', html).group(1)
    return re.findall(r'<option value="([^"]*)" selected>', select)


def test_cheapest_first_is_chosen_until_another_sort_is():
    assert chosen(controls(), "sort") == ["price"]
    assert chosen(controls({"sort": "reliability"}), "sort") == ["reliability"]


def test_a_gpu_model_is_chosen_whatever_its_case_and_any_is_never_marked():
    assert chosen(controls({"gpu": "h100 sxm"}), "gpu") == ["H100 SXM"]
    html = controls()
    assert chosen(html, "gpu") == []
    assert '<select id="id_gpu" name="gpu" form="wizard-form" aria-describedby="err-gpu"><option value="">Any' \
        in html


def test_the_gpu_models_are_those_of_the_machines_looked_at():
    html = controls(gpus=("L40S",))
    options = re.findall(r'<option value="([^"]*)"', re.search(r'<select id="id_gpu".*?</select>', html).group(0))
    assert options == ["", "L40S"]


def test_each_field_has_its_message_beside_it_and_is_marked_invalid():
    errors = {"sort": "Choose a sort.", "min_memory_gib": "Enter a number.", "group": "Choose a grouping."}
    html = controls(errors=errors)
    for name, message in errors.items():
        assert f'<p class="field-error" id="err-{name}" data-error-for="id_{name}">{message}</p>' in html
        assert re.search(rf'id="id_{name}"[^>]*aria-describedby="err-{name}" aria-invalid="true"', html)
    # The fields without an error keep an empty, hidden message for the page's own checks to fill.
    assert '<p class="field-error" id="err-gpu" data-error-for="id_gpu" hidden></p>' in html
    assert not re.search(r'id="id_gpu"[^>]*aria-invalid', html)


def test_typed_values_and_messages_are_escaped():
    html = controls({"min_memory_gib": '"><script>x</script>'}, {"gpu": "<b>bad</b>"}, gpus=("<i>GPU</i>",))
    assert "<script>" not in html and "<b>" not in html and "<i>" not in html
    assert 'value="&quot;&gt;&lt;script&gt;x&lt;/script&gt;"' in html
    assert "&lt;b&gt;bad&lt;/b&gt;</p>" in html


def test_a_change_swaps_the_result_through_the_wizard_form():
    html = controls()
    assert html.startswith('<div class="list-controls" hx-get="/" hx-target="#result"')
    assert 'hx-include="#wizard-form"' in html and 'hx-trigger="change"' in html
    assert html.count('form="wizard-form"') == 6  # four selects, the memory field and Apply


@pytest.mark.parametrize(("language", "words"), [
    ("en", ["Sort by", "GPU model", "Memory per GPU at least (GiB)", "Confidence", "Group by", "Apply"]),
    ("de", ["Sortieren nach", "GPU-Modell", "Konfidenz", "Gruppieren nach", "Anwenden"]),
])
def test_the_labels_are_in_the_pages_language(language, words):
    with translation.override(language):
        html = controls()
        assert all(word in html for word in words), [word for word in words if word not in html]
        assert f'hx-get="/{"de/" if language == "de" else ""}"' in html


def test_a_field_without_a_message_shows_none():
    assert str(field_error("context", "")) == \
        '<p class="field-error" id="err-context" data-error-for="id_context" hidden></p>\n'
    assert str(field_error("context", None)).endswith(" hidden></p>\n")
