"""The forms of the calculators page. The wizard's query lives in `nodelodge.recommendations.query`."""
from __future__ import annotations

from decimal import Decimal

from django import forms


class ThroughputForm(forms.Form):
    """GPU count for a throughput target (SPEC §8)."""

    target = forms.DecimalField(min_value=Decimal("0.001"), max_value=Decimal("1e12"), max_digits=20,
                                decimal_places=3, label="Target throughput (tokens/s)")
    measured = forms.DecimalField(min_value=Decimal("0.001"), max_value=Decimal("1e9"), max_digits=20,
                                  decimal_places=3, label="Measured throughput of one GPU (tokens/s)")
    efficiency = forms.DecimalField(min_value=Decimal("0.01"), max_value=Decimal("100"), max_digits=6,
                                    decimal_places=2, label="Usable efficiency (%)")
    redundancy = forms.IntegerField(min_value=0, max_value=10_000, initial=0, label="Redundancy GPUs")


class RuleOfThumbForm(forms.Form):
    """The rule-of-thumb memory estimate (SPEC §8), in GB as its source counts."""

    parameters = forms.IntegerField(min_value=1, max_value=10**15, label="Parameters")
    precision = forms.ChoiceField(
        choices=[("FP32", "FP32"), ("FP16", "FP16"), ("INT8", "INT8"), ("INT4", "INT4")], label="Precision"
    )
