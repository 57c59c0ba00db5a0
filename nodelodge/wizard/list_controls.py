"""The machine list's controls and the message beside each form field, written in Python.

Through the template language the controls cost about two milliseconds of a result panel: every option
of four selects compared with the chosen value through a filter chain, and five included templates for
the messages beside them. Here each is a few formatted strings; the markup is what the templates wrote
(the browser tests read it: the selects, their labels, the message beside each field)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.urls import reverse
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import capfirst

from sizing.i18n import gettext


def _escaped(value: object) -> str:
    """A value as the templates wrote it: safe text kept, anything else escaped as its str()."""
    return conditional_escape(str(value))


def field_error(name: str, message: object) -> SafeString:
    """The message beside the field `name` (`id_<name>`), hidden while it has none: the element a
    field's `aria-describedby` names, which the page's script fills when a check fails in the browser."""
    hidden = "" if message else " hidden"
    name_text = _escaped(name)
    return mark_safe(  # noqa: S308  # nosec B308, B703: the name and the message are escaped
        f'<p class="field-error" id="err-{name_text}" data-error-for="id_{name_text}"{hidden}>'
        f'{_escaped(message or "")}</p>\n'
    )


def _select(name: str, label: str, options: Iterable[tuple[object, object]], chosen: str,
            errors: Mapping[str, object], same=lambda value, chosen: value == chosen, first: str = "") -> str:
    """One labelled select of the controls, its chosen option marked (`first`: an option written before
    the others, never marked), with the message beside it."""
    error = errors.get(name) or ""
    invalid = ' aria-invalid="true"' if error else ""
    written = first + "".join(
        f'<option value="{_escaped(value)}"{" selected" if same(value, chosen) else ""}>'
        f'{_escaped(text)}</option>'
        for value, text in options
    )
    return (
        f'    <div><label for="id_{name}">{_escaped(label)}</label>\n'
        f'      <select id="id_{name}" name="{name}" form="wizard-form" aria-describedby="err-{name}"'
        f'{invalid}>{written}</select>{field_error(name, error)}</div>\n'
    )


def list_controls(values: Mapping[str, object], errors: Mapping[str, object], sorts, confidence_filters,
                  groups, gpu_types: Iterable[str]) -> SafeString:
    """Sort, GPU model, memory per GPU, confidence and grouping over the machine list: a change sends the
    wizard's form again (htmx) and the result is swapped in; without JavaScript, Apply sends it."""
    chosen_gpu = str(values.get("gpu") or "").lower()
    memory_error = errors.get("min_memory_gib") or ""
    memory_invalid = ' aria-invalid="true"' if memory_error else ""
    # "Any" is never marked: where no GPU model is chosen the browser shows the first option.
    memory_label, apply_words = gettext("Memory per GPU at least (GiB)"), gettext("Apply")
    any_words = gettext("Any")
    any_gpu = f'<option value="">{_escaped(any_words)}</option>'
    return mark_safe(  # noqa: S308  # nosec B308, B703: every value is escaped where it is written
        f'<div class="list-controls" hx-get="{reverse("wizard:start")}" hx-target="#result" '
        'hx-swap="outerHTML" hx-include="#wizard-form"\n'
        '       hx-trigger="change" hx-push-url="true" hx-indicator="#loading" hx-sync="#wizard:replace">\n'
        + _select("sort", gettext("Sort by"), ((value, capfirst(str(label))) for value, label in sorts),
                  str(values.get("sort") or "price"), errors)
        + _select("gpu", gettext("GPU model"), ((name, name) for name in gpu_types), chosen_gpu, errors,
                  same=lambda value, chosen: str(value).lower() == chosen, first=any_gpu)
        + '    <div><label for="id_min_memory_gib">'
        f'{_escaped(memory_label)}</label>\n'
        '      <input type="text" inputmode="decimal" autocomplete="off" id="id_min_memory_gib" '
        'name="min_memory_gib" form="wizard-form" aria-describedby="err-min_memory_gib"'
        f'{memory_invalid} value="{_escaped(values.get("min_memory_gib") or "")}">'
        f'{field_error("min_memory_gib", memory_error)}</div>\n'
        + _select("confidence", gettext("Confidence"), confidence_filters,
                  str(values.get("confidence") or ""), errors)
        + _select("group", gettext("Group by"), groups, str(values.get("group") or ""), errors)
        + '    <div class="apply"><button type="submit" form="wizard-form" class="secondary">'
        f'{_escaped(apply_words)}</button></div>\n'
        '  </div>\n'
    )
