"""The forms of the calculators page. The wizard's query lives in `nodelodge.recommendations.query`.

Numbers are read as the page's language writes them (12,5 and 7.000.000.000 on the German page), by
the one rule of the workload query (`typed_number`); every message is the server's, beside its field.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal

from django import forms
from django.utils.formats import number_format
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from nodelodge.recommendations.capacity import CapacityForm
from nodelodge.recommendations.messages import MESSAGES, filled
from nodelodge.recommendations.typed_numbers import TypedDecimalField, TypedIntegerField, typed_number
from sizing.limits import MAX_GPU_COUNT_MEASURED, MAX_GPU_COUNT_TARGET, MAX_PARAMETERS, MAX_REDUNDANCY_GPUS
from sizing.units import NumberNotRead

FEWEST_PARAMETERS = 1000  # fewer is never a model: "7" means 7B
SUFFIXES = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}
PARAMETERS_WORDS = _("Enter the parameter count as 7B, 70e9 or 7,000,000,000.")


def _between_message() -> str:
    return gettext("The parameter count must be between 1 and %(most)s.") % {
        "most": number_format(MAX_PARAMETERS, force_grouping=True)
    }


def parse_parameters(text: str, language: str = "en") -> int:
    """A parameter count as people write it on a page in `language`: 7B, 1.5B, 350M, 70e9,
    7,000,000,000 or 7 000 000 000 (7,5B and 7.000.000.000 in German). A bare figure under 1,000 is
    refused with the count it probably means ("did you mean 7B?"); anything else that cannot be read
    is refused in words, never read as a smaller number."""
    raw = (text or "").strip()
    match = re.fullmatch(r"(.+?)\s*([kKmMbBgGtT])?", raw)
    try:
        number = typed_number(match.group(1), language) if match else None
    except NumberNotRead:
        number = None
    if number is None or match is None:  # no match reads no number
        raise forms.ValidationError(
            gettext("“%(text)s” is not a parameter count.") % {"text": raw[:40]} + " " + str(PARAMETERS_WORDS)
        )
    suffix = (match.group(2) or "").upper()
    if number.adjusted() > 20:  # past the most before it is multiplied (1e999999999 overflows)
        raise forms.ValidationError(_between_message())
    value = number * SUFFIXES.get(suffix, 1)
    if not suffix and 0 < value < FEWEST_PARAMETERS:
        raise forms.ValidationError(
            gettext("“%(text)s” would be fewer than %(fewest)s parameters: did you mean %(text)sB?")
            % {"text": raw[:40], "fewest": number_format(FEWEST_PARAMETERS, force_grouping=True)}
            + " " + str(PARAMETERS_WORDS)
        )
    if value != value.to_integral_value():
        raise forms.ValidationError(
            gettext("%(text)s is not a whole number of parameters.") % {"text": raw[:40]}
            + " " + str(PARAMETERS_WORDS)
        )
    if not 1 <= value <= MAX_PARAMETERS:
        raise forms.ValidationError(_between_message())
    return int(value)


class ParametersField(forms.CharField):
    language = "en"

    def clean(self, value):
        text = super().clean(value)  # required and length checks on the text as typed
        return parse_parameters(text, self.language)


def _typed_input(mode: str) -> forms.TextInput:
    """A text box for a number: the page's language reads it, not the browser's (whose number box
    turns 12,50 into 1250 where its own language groups with a comma)."""
    return forms.TextInput(attrs={"inputmode": mode, "autocomplete": "off"})


def _limits(too_large) -> dict:
    return {"max_value": too_large, "max_digits": too_large, "max_whole_digits": too_large}


class NumbersAsTypedForm(forms.Form):
    """Reads its number fields as the page's language writes them (`number_language`)."""

    def __init__(self, data=None, *args, number_language: str = "en", **kwargs):
        super().__init__(data, *args, **kwargs)
        for field in self.fields.values():
            if isinstance(field, TypedDecimalField | TypedIntegerField | ParametersField):
                field.language = number_language

    def _post_clean(self):
        """A field with a message is described by it (the message beside the field, for readers)."""
        super()._post_clean()  # type: ignore[misc]  # BaseForm's hook, missing from django-stubs
        for name in self.errors:
            if name in self.fields:
                field = self.fields[name]
                described = [f"err-{name}"] + ([f"{self[name].auto_id}_helptext"] if field.help_text else [])
                field.widget.attrs["aria-describedby"] = " ".join(described)


class ThroughputForm(NumbersAsTypedForm):
    """GPU count for a throughput target (SPEC §8)."""

    target = TypedDecimalField(
        min_value=Decimal("0.001"), max_value=MAX_GPU_COUNT_TARGET, max_digits=20, decimal_places=3,
        label=_("Target throughput (tokens/s)"), widget=_typed_input("decimal"),
        error_messages={
            "required": _("Enter the throughput target in tokens per second."),
            "invalid": _("The throughput target must be a number of tokens per second, such as 180000."),
            "min_value": _("The throughput target must be more than 0 tokens/s."),
            "max_decimal_places": _("The throughput target takes at most 3 decimal places."),
            **_limits(filled(
                _("The throughput target can be at most %(max)s tokens/s."), max=MAX_GPU_COUNT_TARGET
            )),
        },
    )
    measured = TypedDecimalField(
        min_value=Decimal("0.001"), max_value=MAX_GPU_COUNT_MEASURED, max_digits=20, decimal_places=3,
        label=_("Measured throughput of one GPU (tokens/s)"), widget=_typed_input("decimal"),
        error_messages={
            "required": _("Enter the throughput one GPU measured, in tokens per second."),
            "invalid": _("The measured throughput must be a number of tokens per second, such as 75000."),
            "min_value": _("The measured throughput per GPU must be more than 0 tokens/s."),
            "max_decimal_places": _("The measured throughput takes at most 3 decimal places."),
            **_limits(filled(
                _("The measured throughput per GPU can be at most %(max)s tokens/s."),
                max=MAX_GPU_COUNT_MEASURED,
            )),
        },
    )
    efficiency = TypedDecimalField(
        min_value=Decimal("0.01"), max_value=Decimal("100"), max_digits=6, decimal_places=2,
        label=_("Usable efficiency (%)"), widget=_typed_input("decimal"),
        error_messages={"required": _("Enter the usable efficiency in percent, such as 75."),
                        **MESSAGES["efficiency"]},
    )
    redundancy = TypedIntegerField(
        min_value=0, max_value=MAX_REDUNDANCY_GPUS, initial=0, label=_("Redundancy GPUs"),
        widget=_typed_input("numeric"),
        error_messages={
            "required": _("Enter the number of redundancy GPUs; 0 for none."),
            "invalid": _("The redundancy must be a whole number of GPUs, such as 1."),
            "min_value": _("The redundancy cannot be negative; 0 means none."),
            "max_value": filled(_("The redundancy can be at most %(max)s GPUs."), max=MAX_REDUNDANCY_GPUS),
        },
    )


class RuleOfThumbForm(NumbersAsTypedForm):
    """The rule-of-thumb memory estimate (SPEC §8), in GB as its source counts."""

    parameters = ParametersField(
        max_length=40, label=_("Parameters"), help_text=_("For example 7B, 70e9 or 7,000,000,000."),
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
        error_messages={"required": PARAMETERS_WORDS},
    )
    precision = forms.ChoiceField(
        choices=[("FP16", _("16-bit (FP16/BF16)")), ("FP32", _("32-bit (FP32)")), ("INT8", _("8-bit (INT8)")),
                 ("INT4", _("4-bit (INT4)"))],
        initial="FP16", label=_("Precision"),
    )


class CapacityPageForm(NumbersAsTypedForm, CapacityForm):
    """The GPU what-if on the calculators page: the API's fields, numbers as the page writes them, the
    model chosen from the catalog's language models."""

    def __init__(self, data=None, *args, models: Sequence[tuple[str, str]] = (),
                 gpus: Sequence[tuple[str, str]] = (), **kwargs):
        super().__init__(data, *args, **kwargs)
        for field in self.fields.values():
            if isinstance(field, TypedDecimalField):
                field.widget = _typed_input("decimal")
            elif isinstance(field, TypedIntegerField):
                field.widget = _typed_input("numeric")
        self.fields["model"].widget = forms.Select(choices=list(models))
        self.fields["gpu"].widget = forms.Select(choices=list(gpus))
        self.fields["gpu"].help_text = _("A GPU type sets the memory below to what CUDA reports for it.")
