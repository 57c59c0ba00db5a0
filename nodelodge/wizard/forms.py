"""The forms of the calculators page. The wizard's query lives in `nodelodge.recommendations.query`."""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from django import forms
from django.utils.formats import number_format
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

MAX_PARAMETERS = 10**15
SUFFIXES = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}
PARAMETERS_WORDS = _("Enter the parameter count as 7B, 70e9 or 7,000,000,000.")


def parse_parameters(text: str) -> int:
    """A parameter count as people write it: 7B, 1.5B, 350M, 70e9, 7,000,000,000 or 7 000 000 000.
    Anything else is refused in words, never read as a smaller number."""
    raw = (text or "").strip()
    compact = re.sub(r"(?<=\d)[,_ ](?=\d{3}\b)", "", raw).replace("\u202f", "")
    match = re.fullmatch(r"(\d+(?:\.\d+)?(?:[eE]\+?\d+)?)\s*([kKmMbBgGtT])?", compact)
    if not match:
        raise forms.ValidationError(
            gettext("“%(text)s” is not a parameter count.") % {"text": raw[:40]} + " " + str(PARAMETERS_WORDS)
        )
    try:
        value = Decimal(match.group(1)) * SUFFIXES.get((match.group(2) or "").upper(), 1)
    except InvalidOperation as error:
        raise forms.ValidationError(PARAMETERS_WORDS) from error
    if value != value.to_integral_value():
        raise forms.ValidationError(
            gettext("%(text)s is not a whole number of parameters.") % {"text": raw[:40]}
            + " " + str(PARAMETERS_WORDS)
        )
    if not 1 <= value <= MAX_PARAMETERS:
        raise forms.ValidationError(
            gettext("The parameter count must be between 1 and %(most)s.")
            % {"most": number_format(MAX_PARAMETERS, force_grouping=True)}
        )
    return int(value)


class ParametersField(forms.CharField):
    def clean(self, value):
        text = super().clean(value)  # required and length checks on the text as typed
        return parse_parameters(text)


class ThroughputForm(forms.Form):
    """GPU count for a throughput target (SPEC §8)."""

    target = forms.DecimalField(min_value=Decimal("0.001"), max_value=Decimal("1e12"), max_digits=20,
                                decimal_places=3, label=_("Target throughput (tokens/s)"))
    measured = forms.DecimalField(min_value=Decimal("0.001"), max_value=Decimal("1e9"), max_digits=20,
                                  decimal_places=3, label=_("Measured throughput of one GPU (tokens/s)"))
    efficiency = forms.DecimalField(min_value=Decimal("0.01"), max_value=Decimal("100"), max_digits=6,
                                    decimal_places=2, label=_("Usable efficiency (%)"))
    redundancy = forms.IntegerField(min_value=0, max_value=10_000, initial=0, label=_("Redundancy GPUs"))


class RuleOfThumbForm(forms.Form):
    """The rule-of-thumb memory estimate (SPEC §8), in GB as its source counts."""

    parameters = ParametersField(
        max_length=40, label=_("Parameters"), help_text=_("For example 7B, 70e9 or 7,000,000,000."),
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    precision = forms.ChoiceField(
        choices=[("FP16", _("16-bit (FP16/BF16)")), ("FP32", _("32-bit (FP32)")), ("INT8", _("8-bit (INT8)")),
                 ("INT4", _("4-bit (INT4)"))],
        initial="FP16", label=_("Precision"),
    )
