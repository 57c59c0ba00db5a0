"""The models as the wizard's page shows them: each choice with its kind, group and parameter
figures in words, in the page's language."""
from __future__ import annotations

import re
from decimal import Decimal

from django.utils.formats import number_format
from django.utils.translation import gettext, gettext_lazy, pgettext

from catalog import rows as catalog_rows
from nodelodge.recommendations.model_choices import model_facts, suited_models
from sizing.units import decimal_text, fmt_int

# A model's kind in words; speech and image read as their group of the model list does.
KIND_LABELS = {
    "language": gettext_lazy("Language model"),
    "speech": catalog_rows.MODEL_GROUPS["speech"],
    "image": catalog_rows.MODEL_GROUPS["image"],
}

_FIGURE = r"\d+(?:\.\d+)?[KMBT]"
# The model cards' figures as the catalog writes them, in the page's language.
_PUBLISHED = (
    (re.compile(rf"^(?P<total>{_FIGURE}) total / (?P<active>{_FIGURE}) active$"),
     gettext_lazy("%(total)s total · %(active)s active")),
    (re.compile(rf"^(?P<total>{_FIGURE}) \(incl\. (?P<part>{_FIGURE}) (?P<name>\S+) vision encoder\)$"),
     gettext_lazy("%(total)s, with the %(part)s %(name)s vision encoder")),
    (re.compile(rf"^(?P<card>{_FIGURE}) \(card\) / (?P<config>{_FIGURE}) \(config\)$"),
     gettext_lazy("%(card)s (model card) / %(config)s (config)")),
    (re.compile(rf"^(?P<card>{_FIGURE}) \(card\) / (?P<config>{_FIGURE}) \(checkpoint\)$"),
     gettext_lazy("%(card)s (model card) / %(config)s (checkpoint)")),
    (re.compile(rf"^(?P<total>{_FIGURE})(?P<rest>( \S+)?)$"), "%(total)s%(rest)s"),
)


def _figure(text: str) -> str:
    """"5.1B" in the page's language ("5,1B" in German)."""
    if not re.fullmatch(_FIGURE, text):
        return text
    return f"{number_format(Decimal(text[:-1]))}{text[-1]}"


def published_display(published: str) -> str:
    """A model card's parameter figure, in the page's language; as written when of another form."""
    for pattern, words in _PUBLISHED:
        match = pattern.match(published)
        if match:
            return str(words) % {key: _figure(value) for key, value in match.groupdict().items()}
    return published


def parameters_display(parameters: int | None, published: str = "") -> str:
    """The card's figure when there is one; else the count in billions or millions, two decimals."""
    if published:
        return published_display(published)
    if parameters is None:
        return pgettext("parameters", "not published")
    for factor, suffix in ((10**9, "B"), (10**6, "M")):
        if parameters >= factor:
            return f"{decimal_text(Decimal(parameters) / factor, 2)}{suffix}"
    return fmt_int(parameters)


def model_choice(row) -> dict | None:
    """A model as the page offers it: its facts and their words."""
    if row is None:
        return None
    facts = model_facts(row)
    active = facts["active_parameters"]
    return {
        **facts,
        "kind_label": KIND_LABELS[row.kind],
        "group_label": catalog_rows.MODEL_GROUPS[facts["group"]],
        "parameters_display": parameters_display(row.parameters, row.parameters_published),
        # The page shows the recount (the figure memory is sized by); the card's figure, with what it
        # is, in the title.
        "published_note": (
            gettext(
                "Counted from the configuration, embeddings included; published: %(published)s"
            ) % {"published": published_display(row.parameters_published)}
            if row.parameters_published else gettext("Counted from the configuration, embeddings included")
        ),
        "total_display": parameters_display(row.parameters),
        "active_display": parameters_display(active) if active else "",
        "counts_display": (
            gettext("%(total)s total · %(active)s active")
            % {"total": parameters_display(row.parameters), "active": parameters_display(active)}
            if active else parameters_display(row.parameters)
        ),
    }


def model_choices(workload: str, search: str = "") -> list[dict | None]:
    """The models that suit the workload (none for a notebook), filtered by a name search."""
    return [model_choice(row) for row in suited_models(workload, search)]
