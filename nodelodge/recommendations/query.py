"""The workload query: parsed, validated and normalised once, for every surface.

Parameter names are a contract (query string, API and `estimate`/`recommend` options):
workload, model, precision, kv_cache, context, requests, memory_gib, budget, max_price, tier, countries,
limit, and for the machine list: sort, gpu, min_memory_gib, confidence, group, page.
Every message a user reads about a bad value is worded here (`MESSAGES`), in the user's words.
and for a throughput plan (language models): target_tokens, efficiency, redundancy, gpu_plans.
Which inputs a workload needs for which model (a speech model takes no context) is the sizing
engine's rule (`sizing.calculators.estimate`); the form checks types and limits.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import urlencode

from django import forms
from django.core.exceptions import ValidationError
from django.utils.formats import get_format, number_format
from django.utils.functional import lazy
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from sizing.countries import country_hint, expand_countries
from sizing.errors import SizingError
from sizing.limits import (
    MAX_CONTEXT,
    MAX_LIMIT,
    MAX_MONEY,
    MAX_NOTEBOOK_GIB,
    MAX_REDUNDANCY,
    MAX_REQUESTS,
    MAX_TARGET_TOKENS_PER_S,
)
from sizing.matching import SORT_PRICE_PER_MILLION
from sizing.results import RecommendedMachine
from sizing.throughput_plan import DEFAULT_EFFICIENCY_PERCENT, DEFAULT_REDUNDANCY
from sizing.units import NumberNotRead, read_number
from sizing.workloads import BY_CODE, WIZARD_CODES

WORKLOAD_CHOICES = [(code, BY_CODE[code].label) for code in WIZARD_CODES]
PRECISIONS = [("16", _("16-bit")), ("8", _("8-bit")), ("4", _("4-bit"))]
KV_CACHE_PRECISIONS = [("16", _("16-bit (default)")), ("8", _("8-bit (vLLM fp8 KV cache)"))]
DEFAULT_KV_BITS = 16
TIERS = [
    ("both", _("Secure and Community")), ("secure", _("Secure only")), ("community", _("Community only"))
]

DEFAULTS = {
    "workload": "inference",
    "model": "llama-3-1-8b",
    "precision": "16",
    "kv_cache": "16",
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
PAGE_LIMIT = 25  # machines the page lists when the query names no limit
API_LIMIT = 100  # machines the API lists when the query names no limit


# --- the machine list: sort keys, filters, grouping, pages -----------------------------------------
#
# Every sort ends with the engine's own order (hourly price, price per GPU-hour, provider, machine id,
# our id), so any sort is total and deterministic. Adding a sort is one line here.

CONFIDENCE_RANK = {"high": 0, "medium": 1, "low": 2}


def _engine_order(machine: RecommendedMachine) -> tuple:
    offer = machine.offer
    return (
        machine.hourly_price, offer.price_per_gpu_hour, offer.provider, offer.provider_machine_id, offer.id
    )


@dataclass(frozen=True)
class Sort:
    label: str  # what the page says the list is sorted by (translated when read)
    key: Callable[[RecommendedMachine], tuple]


SORTS: dict[str, Sort] = {
    "price": Sort(_("cheapest first (price per hour)"), lambda m: ()),
    "price_per_gpu": Sort(_("price per GPU-hour, lowest first"), lambda m: (m.offer.price_per_gpu_hour,)),
    "memory": Sort(_("memory per GPU, most first"), lambda m: (-m.fit.memory_per_gpu_bytes,)),
    "gpu": Sort(_("GPU model, A to Z"), lambda m: (m.offer.gpu_type.casefold(),)),
    "location": Sort(_("location (country), A to Z"), lambda m: (m.offer.country or "~",)),
    "tier": Sort(_("tier, Secure first"), lambda m: (m.offer.tier != "secure",)),
    "confidence": Sort(_("confidence, highest first"), lambda m: (CONFIDENCE_RANK.get(m.confidence, 9),)),
    # Measured speeds only, never an estimate: machines without one come last, cheapest per hour.
    SORT_PRICE_PER_MILLION: Sort(
        _("price per million tokens, lowest first (no measured speed last)"),
        lambda m: (m.price_per_million_tokens is None, m.price_per_million_tokens or 0),
    ),
}
DEFAULT_SORT = "price"
SORT_CHOICES = [(code, sort.label) for code, sort in SORTS.items()]
GROUPS = [("", _("No grouping")), ("gpu", _("GPU model"))]
CONFIDENCE_FILTERS = [("", _("Any confidence")), ("medium", _("Medium or high")), ("high", _("High only"))]


def sort_key(code: str) -> Callable[[RecommendedMachine], tuple]:
    """The full key of a sort: its own key, then the engine's order."""
    own = SORTS[code].key
    return lambda machine: (*own(machine), *_engine_order(machine))


# --- what a user reads about a bad value ----------------------------------------------------------
#
# Every message is translated when it is read (the page's or the API caller's language), its figures
# written as that language writes numbers (10,000,000 in English, 10.000.000 in German).


def _fill(message, values: dict) -> str:
    return str(message) % {
        name: value if isinstance(value, str) else number_format(value, force_grouping=True)
        for name, value in values.items()
    }


_filled_lazily = lazy(_fill, str)


def filled(message, **values):
    """A translatable message with named figures (and words), filled in when it is read."""
    return _filled_lazily(message, values)


MESSAGES = {
    "context": {
        "min_value": _("Context must be at least 1 token."),
        "max_value": filled(_("Context can be at most %(max)s tokens."), max=MAX_CONTEXT),
        "invalid": _("Context must be a whole number of tokens, such as 4096."),
    },
    "requests": {
        "min_value": _("Concurrent requests must be at least 1."),
        "max_value": filled(_("Concurrent requests can be at most %(max)s."), max=MAX_REQUESTS),
        "invalid": _("Concurrent requests must be a whole number, such as 1 or 8."),
    },
    "memory_gib": {
        "min_value": _("GPU memory must be more than 0 GiB."),
        "max_value": filled(_("GPU memory can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
        "invalid": _("GPU memory must be a number of GiB, such as 24."),
        "max_decimal_places": _("GPU memory takes at most 2 decimal places."),
        "max_digits": filled(_("GPU memory can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
        "max_whole_digits": filled(_("GPU memory can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
    },
    "budget": {
        "min_value": _("The budget must be more than $0; leave it empty for no budget."),
        "max_value": filled(_("The budget can be at most $%(max)s."), max=MAX_MONEY),
        "invalid": _("The budget must be an amount in USD, such as 50 or 12.50."),
        "max_decimal_places": _("The budget takes at most 2 decimal places (cents)."),
        "max_digits": filled(_("The budget can be at most $%(max)s."), max=MAX_MONEY),
        "max_whole_digits": filled(_("The budget can be at most $%(max)s."), max=MAX_MONEY),
    },
    "max_price": {
        "min_value": _("The max price must be more than $0 per hour; leave it empty for no limit."),
        "max_value": filled(_("The max price can be at most $%(max)s per hour."), max=MAX_MONEY),
        "invalid": _("The max price must be an amount in USD per hour, such as 2.50."),
        "max_decimal_places": _("The max price takes at most 2 decimal places (cents)."),
        "max_digits": filled(_("The max price can be at most $%(max)s per hour."), max=MAX_MONEY),
        "max_whole_digits": filled(_("The max price can be at most $%(max)s per hour."), max=MAX_MONEY),
    },
    "min_memory_gib": {
        "min_value": _("Memory per GPU must be more than 0 GiB; leave it empty for any."),
        "max_value": filled(_("Memory per GPU can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
        "invalid": _("Memory per GPU must be a number of GiB, such as 80."),
        "max_decimal_places": _("Memory per GPU takes at most 2 decimal places."),
        "max_digits": filled(_("Memory per GPU can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
        "max_whole_digits": filled(_("Memory per GPU can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
    },
    "limit": {
        "min_value": _("Show at least 1 machine per page."),
        "max_value": filled(_("At most %(max)s machines per page."), max=MAX_LIMIT),
        "invalid": _("Machines per page must be a whole number."),
    },
    "page": {
        "min_value": _("Pages start at 1."),
        "max_value": _("There are not that many pages."),
        "invalid": _("The page must be a whole number, such as 2."),
    },
    "target_tokens": {
        "min_value": _("The throughput to serve must be more than 0 tokens/s; leave it empty for no plan."),
        "max_value": filled(
            _("The throughput to serve can be at most %(max)s tokens/s."), max=MAX_TARGET_TOKENS_PER_S
        ),
        "invalid": _("The throughput to serve must be a number of tokens per second, such as 180000."),
        "max_decimal_places": _("The throughput to serve takes at most 3 decimal places."),
        "max_digits": filled(
            _("The throughput to serve can be at most %(max)s tokens/s."), max=MAX_TARGET_TOKENS_PER_S
        ),
        "max_whole_digits": filled(
            _("The throughput to serve can be at most %(max)s tokens/s."), max=MAX_TARGET_TOKENS_PER_S
        ),
    },
    "efficiency": {
        "min_value": _("The efficiency must be more than 0 percent."),
        "max_value": _("The efficiency can be at most 100 percent."),
        "invalid": _("The efficiency must be a percentage, such as 75."),
        "max_decimal_places": _("The efficiency takes at most 2 decimal places."),
        "max_digits": _("The efficiency can be at most 100 percent."),
        "max_whole_digits": _("The efficiency can be at most 100 percent."),
    },
    "redundancy": {
        "min_value": _("Spare copies cannot be negative; 0 means none."),
        "max_value": filled(_("At most %(max)s spare copies."), max=MAX_REDUNDANCY),
        "invalid": _("Spare copies must be a whole number, such as 1."),
    },
    "workload": {"invalid_choice": _("Choose run a model, fine-tune, generate images or notebook.")},
    "precision": {"invalid_choice": _("Choose 16-bit, 8-bit or 4-bit.")},
    "kv_cache": {"invalid_choice": _("Choose a 16-bit or an 8-bit KV cache.")},
    "tier": {"invalid_choice": _("Choose Secure, Community or both.")},
    "sort": {"invalid_choice": filled(_("Sort by one of: %(sorts)s."), sorts=", ".join(SORTS))},
    "group": {"invalid_choice": _("Group by gpu, or leave it empty.")},
    "confidence": {"invalid_choice": _("Confidence filter: high, medium, or empty for any.")},
}


# The same messages where the form's labels say otherwise (fine-tuning, speech recognition).
RENAMED = {
    "finetune": {
        "context": {
            "min_value": _("Sequence length must be at least 1 token."),
            "max_value": filled(_("Sequence length can be at most %(max)s tokens."), max=MAX_CONTEXT),
            "invalid": _("Sequence length must be a whole number of tokens, such as 4096."),
        },
        "requests": {
            "min_value": _("Batch size must be at least 1."),
            "max_value": filled(_("Batch size can be at most %(max)s."), max=MAX_REQUESTS),
            "invalid": _("Batch size must be a whole number, such as 1 or 8."),
        },
    },
    "speech": {
        "requests": {
            "min_value": _("Concurrent audio streams must be at least 1."),
            "max_value": filled(_("Concurrent audio streams can be at most %(max)s."), max=MAX_REQUESTS),
            "invalid": _("Concurrent audio streams must be a whole number, such as 1 or 8."),
        },
    },
}


def _renamed(workload: str | None, model_kind: str | None) -> dict:
    return RENAMED.get("speech" if model_kind == "speech" else workload or "", {})


def reworded(name: str, message: str, workload: str | None, model_kind: str | None = None) -> str:
    """A field's message in the words of the form's label for this workload."""
    renamed = _renamed(workload, model_kind).get(name, {})
    for code, text in MESSAGES.get(name, {}).items():
        if code in renamed and str(text) == message:
            return str(renamed[code])
    return message


def messages_for(workload: str | None, model_kind: str | None = None) -> dict[str, dict[str, str]]:
    """Every field's messages as the form for this workload words them (for checks in the browser)."""
    renamed = _renamed(workload, model_kind)
    return {
        name: {code: str(renamed.get(name, {}).get(code, text)) for code, text in codes.items()}
        for name, codes in MESSAGES.items()
    }


def _messages(name: str, *extra: str) -> dict[str, str]:
    found = dict(MESSAGES.get(name, {}))
    for code in extra:
        found.setdefault(code, found.get("invalid", _("Enter a valid value.")))
    return found


class QueryError(Exception):
    """The query cannot be answered: field name -> message in words."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def form_errors(form: forms.Form) -> dict[str, str]:
    """A form's errors as field name -> one message ("__all__" for the form's own). A message is
    said once: a figure past the limit fails both the limit and the count of digits, in one sentence."""
    return {name: " ".join(dict.fromkeys(messages)) for name, messages in form.errors.items()}


# --- numbers as typed: the page's language, or plain for the API and the commands ------------------

def number_marks(language: str) -> tuple[str, str]:
    """The decimal mark and the thousands separator of a language ("." and "," in English)."""
    return get_format("DECIMAL_SEPARATOR", language), get_format("THOUSAND_SEPARATOR", language)


def typed_number(text: str, language: str | None) -> Decimal:
    """A number as typed on a page in `language` (`sizing.units.read_number`: 12,50 and 1.000 in
    German, 12.50 and 1,000 in English), or, with no language (the API, the commands, the addresses
    this module writes), a plain decimal with a dot: 12.50, 1000. NumberNotRead otherwise."""
    if language is None:
        try:
            number = Decimal(str(text).strip())
        except ArithmeticError:
            raise NumberNotRead(text) from None
        if not number.is_finite():
            raise NumberNotRead(text)
        return number
    return read_number(str(text), *number_marks(language))


class TypedDecimalField(forms.DecimalField):
    """A decimal field that reads numbers as the page's language writes them (`language`, set by the
    form); without one it reads them as Django does (the API and the commands stay dot-decimal)."""

    language: str | None = None

    def to_python(self, value):
        if self.language is None or value in self.empty_values:
            return super().to_python(value)
        try:
            return typed_number(value, self.language)
        except NumberNotRead:
            raise ValidationError(self.error_messages["invalid"], code="invalid") from None

    def run_validators(self, value):
        """Each message once: a figure past the limit fails the limit and the count of its digits,
        which say the same sentence."""
        try:
            super().run_validators(value)
        except ValidationError as error:
            raise ValidationError(list(dict.fromkeys(error.messages))) from None


class TypedIntegerField(forms.IntegerField):
    """A whole-number field that reads 4.096 on a German page and 4,096 on an English one as 4096."""

    language: str | None = None
    WHOLE_DIGITS = 18  # more is past every limit: refused before it is made a Python int

    def to_python(self, value):
        if self.language is None or value in self.empty_values:
            return super().to_python(value)
        try:
            number = typed_number(value, self.language)
        except NumberNotRead:
            raise ValidationError(self.error_messages["invalid"], code="invalid") from None
        if number.adjusted() > self.WHOLE_DIGITS:
            raise ValidationError(
                self.error_messages["max_value"], code="max_value", params={"limit_value": self.max_value}
            )
        if number != number.to_integral_value():
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return int(number)


def field_labels(workload: str, model_kind: str | None) -> dict[str, str]:
    """Labels follow the workload: sequence length and batch size for fine-tuning,
    concurrent audio streams for speech recognition."""
    if workload == "finetune":
        return {"context": gettext("Sequence length (tokens)"), "requests": gettext("Batch size")}
    if model_kind == "speech":
        return {
            "context": gettext("Context (fixed: 30-second window)"),
            "requests": gettext("Concurrent audio streams"),
        }
    return {"context": gettext("Context per request (tokens)"), "requests": gettext("Concurrent requests")}


FIELD_WORDS = {
    "workload": _("What you want to do"), "model": _("Model"), "precision": _("Precision"),
    "kv_cache": _("KV cache precision"),
    "memory_gib": _("GPU memory needed"), "budget": _("Budget"), "max_price": _("Max price per hour"),
    "tier": _("Tier"), "countries": _("Countries"), "limit": _("Machines per page"), "sort": _("Sort by"),
    "gpu": _("GPU model"), "min_memory_gib": _("Memory per GPU at least"), "confidence": _("Confidence"),
    "group": _("Group by"), "page": _("Page"), "target_tokens": _("Tokens per second to serve"),
    "efficiency": _("Usable efficiency"), "redundancy": _("Spare copies"),
    "gpu_plans": _("Cheapest plan on each GPU type"),
}


def error_list(errors: dict[str, str], labels: dict[str, str]) -> list[dict]:
    """Errors for a summary: the field's label as the page shows it, its input's id, the message."""
    found = []
    for name, message in errors.items():
        label = labels.get(name) or FIELD_WORDS.get(name) or pgettext_lazy("form field", "Input")
        anchor = None if name in ("__all__", "workload", "page", "limit") else f"id_{name}"
        if name == "model":
            anchor = "id_q"
        found.append({"name": name, "label": label, "anchor": anchor, "message": message})
    return found


class WorkloadQueryForm(forms.Form):
    workload = forms.ChoiceField(
        choices=WORKLOAD_CHOICES, label=_("What you want to do"),
        error_messages=_messages("workload", "required"),
    )
    model = forms.CharField(max_length=100, required=False, label=_("Model"))
    precision = forms.TypedChoiceField(
        choices=PRECISIONS, coerce=int, required=False, label=_("Precision"),
        error_messages=_messages("precision"),
    )
    kv_cache = forms.TypedChoiceField(
        choices=KV_CACHE_PRECISIONS, coerce=int, required=False, label=_("KV cache precision"),
        error_messages=_messages("kv_cache"),
    )
    context = TypedIntegerField(
        min_value=1, max_value=MAX_CONTEXT, required=False, error_messages=_messages("context")
    )
    requests = TypedIntegerField(
        min_value=1, max_value=MAX_REQUESTS, required=False, error_messages=_messages("requests")
    )
    memory_gib = TypedDecimalField(
        min_value=Decimal("0.01"), max_value=Decimal(MAX_NOTEBOOK_GIB), max_digits=9, decimal_places=2,
        required=False, label=_("GPU memory needed (GiB)"), error_messages=_messages("memory_gib"),
    )
    budget = TypedDecimalField(
        min_value=Decimal("0.01"), max_value=MAX_MONEY, max_digits=14, decimal_places=2,
        required=False, label=_("Budget (USD)"), error_messages=_messages("budget"),
    )
    max_price = TypedDecimalField(
        min_value=Decimal("0.01"), max_value=MAX_MONEY, max_digits=14, decimal_places=2,
        required=False, label=_("Max price per hour (USD)"), error_messages=_messages("max_price"),
    )
    tier = forms.ChoiceField(choices=TIERS, required=False, label=_("Tier"), error_messages=_messages("tier"))
    countries = forms.CharField(max_length=2000, required=False, label=_("Countries"))
    limit = TypedIntegerField(
        min_value=1, max_value=MAX_LIMIT, required=False, label=_("Machines per page"),
        error_messages=_messages("limit"),
    )
    # The machine list: sort, filters, grouping and page (defaults: cheapest first, everything, page 1).
    sort = forms.ChoiceField(
        choices=SORT_CHOICES, required=False, label=_("Sort"), error_messages=_messages("sort")
    )
    gpu = forms.CharField(max_length=100, required=False, label=_("GPU model"))
    min_memory_gib = TypedDecimalField(
        min_value=Decimal("0.01"), max_value=Decimal(MAX_NOTEBOOK_GIB), max_digits=9, decimal_places=2,
        required=False, label=_("Memory per GPU at least (GiB)"), error_messages=_messages("min_memory_gib"),
    )
    confidence = forms.ChoiceField(
        choices=CONFIDENCE_FILTERS, required=False, label=_("Confidence"),
        error_messages=_messages("confidence"),
    )
    group = forms.ChoiceField(
        choices=GROUPS, required=False, label=_("Group"), error_messages=_messages("group")
    )
    page = TypedIntegerField(
        min_value=1, max_value=100_000, required=False, label=_("Page"), error_messages=_messages("page")
    )
    target_tokens = TypedDecimalField(
        min_value=Decimal("0.001"), max_value=MAX_TARGET_TOKENS_PER_S, max_digits=13, decimal_places=3,
        required=False, label=_("Throughput to serve (tokens/s)"), error_messages=_messages("target_tokens"),
    )
    efficiency = TypedDecimalField(
        min_value=Decimal("0.01"), max_value=Decimal("100"), max_digits=5, decimal_places=2, required=False,
        label=_("Usable efficiency (%)"), error_messages=_messages("efficiency"),
    )
    redundancy = TypedIntegerField(
        min_value=0, max_value=MAX_REDUNDANCY, required=False, label=_("Redundancy (spare model copies)"),
        error_messages=_messages("redundancy"),
    )
    # Also the cheapest plan on each of the GPU types that serve tokens cheapest (asked for: each is
    # one more exact search and one more list of up to hundreds of machines).
    gpu_plans = forms.BooleanField(required=False, label=_("Cheapest plan on each GPU type"))

    def __init__(self, data=None, *args, number_language: str | None = None, **kwargs):
        """`number_language`: the page's language, whose way of writing numbers its fields read
        (None: plain dot decimals, as the API, the commands and the addresses this module writes)."""
        if data is not None:
            data = normalize_query(data)
        super().__init__(data, *args, **kwargs)
        for field in self.fields.values():
            if isinstance(field, TypedDecimalField | TypedIntegerField):
                field.language = number_language

    def clean_countries(self):
        raw = self.cleaned_data.get("countries") or ""
        codes = [c.strip() for c in raw.replace(";", ",").split(",") if c.strip()]
        if len(codes) > MAX_COUNTRY_ITEMS:
            raise forms.ValidationError(
                gettext("At most %(most)s countries, got %(got)s.")
                % {"most": MAX_COUNTRY_ITEMS, "got": len(codes)}
            )
        try:
            expanded, typed = expand_countries(codes)
        except SizingError as error:
            raise forms.ValidationError(country_message(codes)) from error
        return typed, expanded

    def clean(self):
        cleaned = super().clean()
        workload = cleaned.get("workload")
        if workload is None:
            return cleaned
        if workload == "notebook":
            if cleaned.get("memory_gib") is None and "memory_gib" not in self.errors:
                self.add_error("memory_gib", gettext("Enter the GPU memory the notebook needs, in GiB."))
            return cleaned
        if not cleaned.get("model") and "model" not in self.errors:
            self.add_error("model", gettext("Choose a model."))
        if cleaned.get("precision") is None and "precision" not in self.errors:
            self.add_error("precision", str(MESSAGES["precision"]["invalid_choice"]))
        if workload != "inference" and cleaned.get("target_tokens") is not None:
            self.add_error("target_tokens", gettext("A throughput plan is for running a language model."))
        return cleaned


def country_message(codes: list[str]) -> str:
    """The first code that is not ISO 3166 alpha-2, with what was probably meant."""
    for raw in codes:
        try:
            expand_countries([raw])
        except SizingError:
            hint = country_hint(raw)
            code = raw.strip().upper()[:20]
            if hint:
                return gettext("%(code)s is not an ISO code: did you mean %(hint)s?") % {
                    "code": code, "hint": hint
                }
            return gettext(
                "%(code)s is not an ISO country code; use two letters such as DE, US or CH, or EU."
            ) % {"code": code}
    return gettext("Use ISO country codes such as DE, US or CH, or EU.")


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
    kv_bits: int = DEFAULT_KV_BITS  # bits per KV-cache value: 16 (the spec's) or 8
    sort: str = DEFAULT_SORT
    gpu: str = ""
    min_memory_gib: Decimal | None = None
    confidence: str = ""
    group: str = ""
    page: int = 1
    target_tokens: Decimal | None = None  # tokens/s to serve: asks for a throughput plan
    efficiency: Decimal = DEFAULT_EFFICIENCY_PERCENT
    redundancy: int = DEFAULT_REDUNDANCY
    gpu_plans: bool = False  # the throughput answer also plans on each GPU type alone

    @property
    def lists_by_default(self) -> bool:
        """Cheapest first with no filter, grouping or later page: the documented default list."""
        return (
            self.sort == DEFAULT_SORT and not self.gpu and self.min_memory_gib is None
            and not self.confidence and not self.group
        )

    @property
    def filtered(self) -> bool:
        return bool(self.gpu or self.min_memory_gib is not None or self.confidence)

    def as_params(self, **overrides) -> dict[str, str]:
        """The query string parameters that reproduce this query (empty ones left out)."""
        params = {
            "workload": self.workload,
            "model": self.model_slug,
            "precision": self.precision,
            "kv_cache": self.kv_bits if self.kv_bits != DEFAULT_KV_BITS else None,
            "context": self.context,
            "requests": self.requests,
            "memory_gib": self.memory_gib,
            "budget": self.budget,
            "max_price": self.max_price,
            "tier": self.tier,
            "countries": ",".join(self.countries_input),
            "limit": self.limit,
            "sort": self.sort if self.sort != DEFAULT_SORT else None,
            "gpu": self.gpu,
            "min_memory_gib": self.min_memory_gib,
            "confidence": self.confidence,
            "group": self.group,
            "page": self.page if self.page != 1 else None,
        }
        if self.target_tokens is not None:
            params.update(
                target_tokens=_address_number(self.target_tokens),
                efficiency=format(self.efficiency.normalize(), "f"),
                redundancy=self.redundancy,
                gpu_plans=1 if self.gpu_plans else None,
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
            kv_bits=(data.get("kv_cache") or DEFAULT_KV_BITS) if workload in ("inference", "speech")
            else DEFAULT_KV_BITS,
            sort=data.get("sort") or DEFAULT_SORT,
            gpu=(data.get("gpu") or "").strip(),
            min_memory_gib=data.get("min_memory_gib"),
            confidence=data.get("confidence") or "",
            group=data.get("group") or "",
            page=data.get("page") or 1,
            target_tokens=data.get("target_tokens"),
            efficiency=_or_default(data.get("efficiency"), DEFAULT_EFFICIENCY_PERCENT),
            redundancy=_or_default(data.get("redundancy"), DEFAULT_REDUNDANCY),
            gpu_plans=bool(data.get("gpu_plans")),
        )


def _address_number(value: Decimal) -> str:
    """A decimal for an address that every reading takes as the same number: 20000, never 2E+4, and
    three decimals as 1234e-3 (1.234 would be 1,234 on the German page, which reads 1.234 as 1234)."""
    text = format(value.normalize(), "f")
    whole, _mark, decimals = text.partition(".")
    if len(decimals) == 3:
        return f"{int(whole + decimals)}e-3"
    return text


def _or_default(value, default):
    return default if value is None else value


def parse_query(data, number_language: str | None = None) -> WorkloadQuery:
    """The query from a query string's values (QueryDict or dict), validated; QueryError otherwise.
    Numbers are plain dot decimals, or as the page's `number_language` writes them (`typed_number`)."""
    form = WorkloadQueryForm(data, number_language=number_language)
    if not form.is_valid():
        raise QueryError(form_errors(form))
    return WorkloadQuery.from_form(form)
