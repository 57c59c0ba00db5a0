"""The workload query: parsed, validated and normalised once, for every surface.

Parameter names are a contract (query string, API and `estimate`/`recommend` options):
workload, model, precision, context, requests, memory_gib, budget, max_price, tier, countries, limit,
sort; and for a throughput plan (language models): target_tokens, efficiency, redundancy.
Which inputs a workload needs for which model (a speech model takes no context) is the sizing
engine's rule (`sizing.calculators.estimate`); the form checks types and limits.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import urlencode

from django import forms

from sizing.calculators import MAX_CONTEXT, MAX_REQUESTS
from sizing.countries import expand_countries
from sizing.errors import SizingError
from sizing.matching import SORT_PRICE, SORT_PRICE_PER_MILLION
from sizing.throughput_plan import (
    DEFAULT_EFFICIENCY_PERCENT,
    DEFAULT_REDUNDANCY,
    MAX_REDUNDANCY,
    MAX_TARGET_TOKENS_PER_S,
)
from sizing.workloads import BY_CODE, WIZARD_CODES

WORKLOAD_CHOICES = [(code, BY_CODE[code].label) for code in WIZARD_CODES]
PRECISIONS = [("16", "16-bit"), ("8", "8-bit"), ("4", "4-bit")]
TIERS = [("both", "Secure and Community"), ("secure", "Secure only"), ("community", "Community only")]
SORTS = [(SORT_PRICE, "Price per hour"), (SORT_PRICE_PER_MILLION, "Price per million tokens")]

DEFAULTS = {
    "workload": "inference",
    "model": "llama-3-1-8b",
    "precision": "16",
    "context": "4096",
    "requests": "1",
    "memory_gib": "24",
    "tier": "both",
}
DEFAULT_MODEL_BY_WORKLOAD = {
    "inference": "llama-3-1-8b",
    "finetune": "llama-3-1-8b",
    "image": "stable-diffusion-xl",
}
MAX_COUNTRY_ITEMS = 300
MAX_MONEY = Decimal("1000000000")
MAX_LIMIT = 1000  # machines listed in one answer; all are counted
PAGE_LIMIT = 25  # machines the page lists when the query names no limit
API_LIMIT = 100  # machines the API lists when the query names no limit


class QueryError(Exception):
    """The query cannot be answered: field name -> message in words."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def form_errors(form: forms.Form) -> dict[str, str]:
    """A form's errors as field name -> one message ("__all__" for the form's own)."""
    return {name: " ".join(messages) for name, messages in form.errors.items()}


def field_labels(workload: str, model_kind: str | None) -> dict[str, str]:
    """Labels follow the workload: sequence length and batch size for fine-tuning,
    concurrent audio streams for speech recognition."""
    if workload == "finetune":
        return {"context": "Sequence length (tokens)", "requests": "Batch size"}
    if model_kind == "speech":
        return {"context": "Context (fixed: 30-second window)", "requests": "Concurrent audio streams"}
    return {"context": "Context per request (tokens)", "requests": "Concurrent requests"}


class WorkloadQueryForm(forms.Form):
    workload = forms.ChoiceField(choices=WORKLOAD_CHOICES, label="What you want to do")
    model = forms.CharField(max_length=100, required=False, label="Model")
    precision = forms.TypedChoiceField(choices=PRECISIONS, coerce=int, required=False, label="Precision")
    context = forms.IntegerField(min_value=1, max_value=MAX_CONTEXT, required=False)
    requests = forms.IntegerField(min_value=1, max_value=MAX_REQUESTS, required=False)
    memory_gib = forms.DecimalField(
        min_value=Decimal("0.01"), max_value=Decimal("10000"), max_digits=9, decimal_places=2,
        required=False, label="GPU memory needed (GiB)",
    )
    budget = forms.DecimalField(
        min_value=Decimal("0.01"), max_value=MAX_MONEY, max_digits=14, decimal_places=2,
        required=False, label="Budget (USD)",
    )
    max_price = forms.DecimalField(
        min_value=Decimal("0.01"), max_value=MAX_MONEY, max_digits=14, decimal_places=2,
        required=False, label="Max price per hour (USD)",
    )
    tier = forms.ChoiceField(choices=TIERS, required=False, label="Tier")
    countries = forms.CharField(max_length=2000, required=False, label="Countries")
    limit = forms.IntegerField(min_value=1, max_value=MAX_LIMIT, required=False, label="Machines to list")
    sort = forms.ChoiceField(choices=SORTS, required=False, label="Sort machines by")
    target_tokens = forms.DecimalField(
        min_value=Decimal("0.001"), max_value=MAX_TARGET_TOKENS_PER_S, max_digits=13, decimal_places=3,
        required=False, label="Throughput to serve (tokens/s)",
    )
    efficiency = forms.DecimalField(
        min_value=Decimal("0.01"), max_value=Decimal("100"), max_digits=5, decimal_places=2, required=False,
        label="Usable efficiency (%)",
    )
    redundancy = forms.IntegerField(
        min_value=0, max_value=MAX_REDUNDANCY, required=False, label="Redundancy (spare model copies)"
    )

    def __init__(self, data=None, *args, **kwargs):
        if data is not None:
            data = normalize_query(data)
        super().__init__(data, *args, **kwargs)

    def clean_countries(self):
        raw = self.cleaned_data.get("countries") or ""
        codes = [c.strip() for c in raw.replace(";", ",").split(",") if c.strip()]
        if len(codes) > MAX_COUNTRY_ITEMS:
            raise forms.ValidationError(f"At most {MAX_COUNTRY_ITEMS} countries, got {len(codes)}.")
        try:
            expanded, typed = expand_countries(codes)
        except SizingError as error:
            raise forms.ValidationError(error.message) from error
        return typed, expanded

    def clean(self):
        cleaned = super().clean()
        workload = cleaned.get("workload")
        if workload is None:
            return cleaned
        if workload == "notebook":
            if cleaned.get("memory_gib") is None and "memory_gib" not in self.errors:
                self.add_error("memory_gib", "Enter the GPU memory the notebook needs, in GiB.")
            return cleaned
        if not cleaned.get("model") and "model" not in self.errors:
            self.add_error("model", "Choose a model.")
        if cleaned.get("precision") is None and "precision" not in self.errors:
            self.add_error("precision", "Choose 16-bit, 8-bit or 4-bit.")
        if workload != "inference" and cleaned.get("target_tokens") is not None:
            self.add_error("target_tokens", "A throughput plan is for running a language model.")
        return cleaned


def normalize_query(data) -> dict[str, str]:
    """A plain dict from a QueryDict (repeated `countries` joined; other repeats: the last wins,
    as Django does)."""
    if hasattr(data, "getlist"):
        flat = {key: data.get(key) for key in data}
        countries = [c for c in data.getlist("countries") if c]
        flat["countries"] = ",".join(countries)
    else:
        flat = dict(data)
    return {key: ("" if value is None else str(value)) for key, value in flat.items()}


@dataclass(frozen=True)
class WorkloadQuery:
    workload: str
    model_slug: str | None
    precision: int | None
    context: int | None
    requests: int | None
    memory_gib: Decimal | None
    budget: Decimal | None
    max_price: Decimal | None
    tier: str
    countries_input: tuple[str, ...]
    countries: frozenset[str] | None
    limit: int | None = None
    sort: str = SORT_PRICE
    target_tokens: Decimal | None = None  # tokens/s to serve: asks for a throughput plan
    efficiency: Decimal = DEFAULT_EFFICIENCY_PERCENT
    redundancy: int = DEFAULT_REDUNDANCY

    def as_params(self, **overrides) -> dict[str, str]:
        """The query string parameters that reproduce this query (empty ones left out)."""
        params = {
            "workload": self.workload,
            "model": self.model_slug,
            "precision": self.precision,
            "context": self.context,
            "requests": self.requests,
            "memory_gib": self.memory_gib,
            "budget": self.budget,
            "max_price": self.max_price,
            "tier": self.tier,
            "countries": ",".join(self.countries_input),
            "limit": self.limit,
            "sort": self.sort if self.sort != SORT_PRICE else None,
        }
        if self.target_tokens is not None:
            params.update(
                target_tokens=self.target_tokens.normalize(),
                efficiency=self.efficiency.normalize(),
                redundancy=self.redundancy,
            )
        params.update(overrides)
        return {key: str(value) for key, value in params.items() if value not in (None, "")}

    def as_query_string(self, **overrides) -> str:
        return urlencode(self.as_params(**overrides))

    @classmethod
    def from_form(cls, form: WorkloadQueryForm) -> WorkloadQuery:
        data = form.cleaned_data
        countries_input, countries = data.get("countries") or ((), None)
        workload = data["workload"]
        return cls(
            workload=workload,
            model_slug=(data.get("model") or None) if workload != "notebook" else None,
            precision=data.get("precision") if workload != "notebook" else None,
            context=data.get("context"),
            requests=data.get("requests"),
            memory_gib=data.get("memory_gib") if workload == "notebook" else None,
            budget=data.get("budget"),
            max_price=data.get("max_price"),
            tier=data.get("tier") or "both",
            countries_input=tuple(countries_input),
            countries=countries,
            limit=data.get("limit"),
            sort=data.get("sort") or SORT_PRICE,
            target_tokens=data.get("target_tokens"),
            efficiency=_or_default(data.get("efficiency"), DEFAULT_EFFICIENCY_PERCENT),
            redundancy=_or_default(data.get("redundancy"), DEFAULT_REDUNDANCY),
        )


def _or_default(value, default):
    return default if value is None else value


def parse_query(data) -> WorkloadQuery:
    """The query from a query string's values (QueryDict or dict), validated; QueryError otherwise."""
    form = WorkloadQueryForm(data)
    if not form.is_valid():
        raise QueryError(form_errors(form))
    return WorkloadQuery.from_form(form)
