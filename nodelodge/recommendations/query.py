"""The workload query: parsed, validated and normalised once, for every surface.

Parameter names are a contract (query string, API and `estimate`/`recommend` options); each input is
declared once in `parameters` (its kind, default, limits, choices, label and messages), and the form
below is made from those declarations. The fine-tuning inputs (`sizing.training`) are read for the
fine-tuning workload only (another ignores them; base_format at precision 4 only).
A field left out takes its default (`DEFAULTS`, and the workload's default model), the same for the
page, the API and the commands. Every message a user reads about a bad value is declared with its input.
Which inputs a workload needs for which model (a speech model takes no context) is the sizing
engine's rule (`sizing.calculators.estimate`); the form checks types and limits.
"""
from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast
from urllib.parse import urlencode

from django import forms
from django.utils.translation import gettext

from sizing.calculators.llamacpp_builds import LLAMACPP, NOT_GIVEN, LlamaCppBuild
from sizing.calculators.vllm import DEFAULT_ENGINE
from sizing.calculators.vllm_versions import DEFAULT_RELEASE, VllmRelease
from sizing.countries import ALL_CODES, EU_CODE, country_hint, expand_countries
from sizing.errors import SizingError
from sizing.limits import MAX_COUNTRY_ITEMS
from sizing.markets import DEFAULT_MARKET
from sizing.throughput_plan import DEFAULT_EFFICIENCY_PERCENT, DEFAULT_REDUNDANCY
from sizing.training import DEFAULT_TRAINING, Training
from sizing.training import FIELDS as TRAINING_FIELDS
from sizing.workloads import DEFAULT_WORKLOAD, known_workload, workload

from .llamacpp_switches import (
    GGUF_ENGINES,
    GGUF_INPUTS,
    flash_attention,
    kv_unified,
    switch_params,
    switch_refusals,
)
from .messages import CONFLICT, MESSAGES, form_errors, only_conflicts
from .parameters import (  # noqa: F401 (the choices and defaults, as the query's users import them)
    CLUSTER_CHOICES,
    CLUSTERS_AUTO,
    CLUSTERS_SHOW,
    DEFAULT_KV_BITS,
    DEFAULTS,
    ENGINE_CHOICES,
    KV_CACHE_PRECISIONS,
    PARAMETERS,
    PRECISIONS,
    TIERS,
    VLLM_RELEASE_INPUTS,
    WORKLOAD_CHOICES,
    form_fields,
)
from .sorts import DEFAULT_SORT
from .typed_numbers import TypedDecimalField, TypedIntegerField
from .vllm_release import (
    build_params,
    clean_release,
    engine_version_pattern,
    read_build,
    read_release,
    release_params,
    release_refusals,
)


def default_model(code: str | None) -> str | None:
    """The model a query of this workload sizes when it names none. A workload that sizes no model
    (a notebook, or an unknown code) keeps the default workload's, for the form to switch back to."""
    chosen = workload(code)
    if chosen is not None and chosen.sizes_model:
        return chosen.default_model
    return known_workload(DEFAULT_WORKLOAD).default_model


def with_defaults(data: dict[str, str]) -> dict[str, str]:
    """The query's values with each field it leaves out at its default (a field given empty stays
    empty: that is an answer, which the form checks)."""
    values = {**DEFAULTS, **data}
    if "model" not in data:
        model = default_model(values["workload"])
        if model is not None:
            values["model"] = model
    return values


class QueryError(Exception):
    """The query cannot be answered: field name -> message in words."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


class NotFound(QueryError):
    """The query names what is not there: a model the catalog does not hold for the workload, a page
    past the list's window. The page says so beside the field, as for any error; the API answers 404
    (a value the schema allows that names nothing)."""


class Conflict(QueryError):
    """Values each valid on its own that do not go together: a throughput plan for a workload or model
    that serves no tokens, a context, precision or size the chosen model cannot take (the sizing
    engine's checks). The page says so beside the field, as for any error; the API answers 422."""


class _QueryForm(forms.Form):
    """The workload query's checks; its fields are the declared inputs (`WorkloadQueryForm`)."""

    def __init__(self, data=None, *args, number_language: str | None = None, **kwargs):
        """`number_language`: the page's language, whose way of writing numbers its fields read
        (None: plain dot decimals, as the API, the commands and the addresses this module writes)."""
        if data is not None:
            data = normalize_query(data)
            if data.get("quantization"):  # GGUF types are written in either case (q4_k_m, Q4_K_M)
                data["quantization"] = data["quantization"].strip().upper()
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
        cleaned = cast(dict[str, Any], super().clean())  # Form.clean returns cleaned_data
        chosen = workload(cleaned.get("workload"))
        if chosen is None:
            return cleaned
        if chosen.serves_tokens:  # vLLM's release (llama.cpp's build, Ollama's release): under their engines
            clean_release(self)
            build = cleaned.get("engine_version")
            refusals = {
                **release_refusals(cleaned.get("engine"), self.data),
                **switch_refusals(cleaned.get("engine"), self.data,
                                  build if isinstance(build, LlamaCppBuild) else NOT_GIVEN),
            }
            for name, message in refusals.items():
                if name not in self.errors:
                    self.add_error(name, forms.ValidationError(message, code=CONFLICT))
        else:  # as the engine itself, ignored by a workload that serves no tokens
            for name in (*VLLM_RELEASE_INPUTS, *GGUF_INPUTS):
                cleaned.pop(name, None)
        # A training field sent with another workload (the base format at another precision) is ignored
        # there; a value no workload takes is still refused, so a query means one thing everywhere.
        for parameter in PARAMETERS:
            if parameter.read_by and not getattr(chosen, parameter.read_by):
                cleaned.pop(parameter.name, None)
            elif parameter.at_precision is not None and cleaned.get("precision") != parameter.at_precision:
                cleaned.pop(parameter.name, None)
        if chosen.takes_memory:
            if cleaned.get("memory_gib") is None and "memory_gib" not in self.errors:
                self.add_error("memory_gib", forms.ValidationError(
                    gettext("Enter the GPU memory the notebook needs, in GiB."), code=CONFLICT
                ))
            return cleaned
        if not cleaned.get("model") and "model" not in self.errors:
            self.add_error("model", forms.ValidationError(gettext("Choose a model."), code=CONFLICT))
        if cleaned.get("precision") is None and "precision" not in self.errors:
            self.add_error("precision", forms.ValidationError(
                str(MESSAGES["precision"]["invalid_choice"]), code=CONFLICT
            ))
        if not chosen.serves_tokens and cleaned.get("target_tokens") is not None:
            self.add_error("target_tokens", forms.ValidationError(
                gettext("A throughput plan is for running a language model."), code=CONFLICT
            ))
        return cleaned


class WorkloadQueryForm(_QueryForm):
    """The workload query as a form: one field for each declared input (`parameters.PARAMETERS`), in
    the declaration's order."""


class _FieldsCopiedShallow(dict):
    """The query form's fields, copied for each form one level deep. Django deep-copies a form's fields
    for each instance, so a form that changes a field's widget or choices changes only its own; this
    form changes neither (it is never rendered: the wizard writes its own inputs) and sets one plain
    attribute per field (`TypedDecimalField.language`), so a shallow copy of each field is enough. The
    deep copy walked every choice of 37 fields: about a millisecond of each answer."""

    def __deepcopy__(self, memo: dict) -> dict[str, forms.Field]:
        return {name: copy.copy(field) for name, field in self.items()}


WorkloadQueryForm.base_fields = WorkloadQueryForm.declared_fields = _FieldsCopiedShallow(
    form_fields(PARAMETERS)
)


def parameter_schema(
    name: str, form_class: type[forms.Form] | None = None, empty_is_default: bool = False
) -> dict:
    """What the query's field `name` accepts on its own, as JSON Schema (the API's OpenAPI schema
    states it): the form's choices, whole-number and decimal ranges, lengths and country codes. What
    depends on other fields or the catalog (a model that suits the workload, a precision its checkpoint
    is offered in, a throughput plan for a language model only) the operations say in words."""
    field = (form_class or WorkloadQueryForm).base_fields[name]
    optional = empty_is_default or not field.required
    stated = _value_schema(name, field, optional)
    if optional and stated["type"] != "string":
        # Given empty, a field is left out (its default); what a workload needs is then a conflict (422).
        return {"anyOf": [stated, {"type": "string", "maxLength": 0}]}
    return stated


def _choices(field: forms.ChoiceField) -> Iterable[tuple[Any, Any]]:
    return cast(Iterable[tuple[Any, Any]], field.choices)  # the form's choices: (value, label) pairs


def _value_schema(name: str, field, optional: bool) -> dict:
    if name == "countries":  # ISO codes or EU, either case, separated by commas or semicolons
        codes = "|".join(f"[{code[0]}{code[0].lower()}][{code[1]}{code[1].lower()}]"
                         for code in sorted(ALL_CODES | {EU_CODE}))
        item = rf"\s*(?:{codes})?\s*"
        return {"type": "string", "pattern": rf"^{item}(?:[,;]{item}){{0,{MAX_COUNTRY_ITEMS - 1}}}$"}
    if name == "engine_version":  # the vLLM releases whose rules are known, llama.cpp builds, Ollama releases
        return {"type": "string", "maxLength": field.max_length, "pattern": engine_version_pattern()}
    if isinstance(field, forms.TypedChoiceField) and field.coerce is int:
        return {"type": "integer", "enum": [int(value) for value, _ in _choices(field)]}
    if isinstance(field, forms.ChoiceField):
        values = [str(value) for value, _ in _choices(field)]
        return {"type": "string", "enum": values + ([""] if optional and "" not in values else [])}
    if isinstance(field, TypedIntegerField):
        return {"type": "integer", "minimum": field.min_value, "maximum": field.max_value}
    if isinstance(field, TypedDecimalField):
        return {"type": "number", "minimum": float(cast(Decimal, field.min_value)),
                "maximum": float(cast(Decimal, field.max_value)),
                "multipleOf": float(Decimal(1).scaleb(-cast(int, field.decimal_places)))}
    if isinstance(field, forms.CharField):  # Django refuses NUL in text
        text = {"type": "string", "maxLength": field.max_length, "pattern": r"^[^\x00]*$"}
        return text if optional else {**text, "minLength": 1}
    return {"type": "string"}


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
    training: Training = DEFAULT_TRAINING  # how a fine-tune is run (the fine-tuning workload only)
    engine: str = DEFAULT_ENGINE  # inference: transformers (the spec's estimate) or vllm (its budget)
    clusters: str = CLUSTERS_AUTO  # language-model inference: plan clusters when none fits (auto) or always
    quantization: str = ""  # llama.cpp and Ollama: a GGUF type; empty: the precision's short form
    min_reliability: Decimal | None = None  # 0 to 1, two places: the reliability a feed must report
    # Under engine=vllm: the release asked and its switches (`vllm_release`); the current stable otherwise.
    vllm_release: VllmRelease = DEFAULT_RELEASE
    # Under engine=llamacpp the build asked, under engine=ollama the release (`vllm_release.read_build`): the
    # logits reserved and the cache's layout.
    llamacpp_build: LlamaCppBuild = NOT_GIVEN
    market: str = DEFAULT_MARKET  # the markets a machine's price may come from (`sizing.markets`)
    # Under engine=llamacpp or engine=ollama: flash attention (-fa, OLLAMA_FLASH_ATTENTION); under
    # engine=llamacpp: --kv-unified (`llamacpp_switches`). The defaults under any other engine.
    flash_attention: bool = True
    kv_unified: bool = False
    # Under engine=llamacpp or engine=ollama: -ngl, num_gpu, the decoder layers on the GPUs (None: all).
    gpu_layers: int | None = None

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
        """The query string parameters that reproduce this query (empty ones left out), with
        `overrides` (a page's number, the plans on every GPU type) in place of its own."""
        params = {**self._params, **overrides}
        return {key: str(value) for key, value in params.items() if value not in (None, "")}

    @functools.cached_property
    def _params(self) -> dict[str, object]:
        """Every parameter of the query, empty ones included, in the address's order: worked out once
        per query (a result panel writes its address half a dozen times: its page links, its permalink)."""
        params: dict[str, object] = {
            "workload": self.workload,
            "model": self.model_slug,
            "precision": self.precision,
            "kv_cache": self.kv_bits if self.kv_bits != DEFAULT_KV_BITS else None,
            "engine": self.engine if self.engine != DEFAULT_ENGINE else None,
            "quantization": self.quantization or None,
            **release_params(self.vllm_release),
            **build_params(self.llamacpp_build),
            **switch_params(self.engine, self.flash_attention, self.kv_unified),
            "gpu_layers": self.gpu_layers,
            "clusters": self.clusters if self.clusters != CLUSTERS_AUTO else None,
            "context": self.context,
            "requests": self.requests,
            "memory_gib": self.memory_gib,
            "budget": self.budget,
            "max_price": self.max_price,
            "tier": self.tier,
            "min_reliability": self.min_reliability,
            "market": self.market if self.market != DEFAULT_MARKET else None,
            "countries": ",".join(self.countries_input),
            "limit": self.limit,
            "sort": self.sort if self.sort != DEFAULT_SORT else None,
            "gpu": self.gpu,
            "min_memory_gib": self.min_memory_gib,
            "confidence": self.confidence,
            "group": self.group,
            "page": self.page if self.page != 1 else None,
        }
        # A fine-tune's choices that differ from the defaults (as the KV cache's precision is written).
        params.update(self.training.non_default())
        if self.target_tokens is not None:
            params.update(
                target_tokens=_address_number(self.target_tokens),
                efficiency=format(self.efficiency.normalize(), "f"),
                redundancy=self.redundancy,
                gpu_plans=1 if self.gpu_plans else None,
            )
        return params

    def as_query_string(self, **overrides) -> str:
        return urlencode(self.as_params(**overrides))

    @classmethod
    def from_form(cls, form: WorkloadQueryForm) -> WorkloadQuery:
        data = form.cleaned_data
        countries_input, countries = data.get("countries") or ((), None)
        chosen = known_workload(data["workload"])
        engine = (data.get("engine") or DEFAULT_ENGINE) if chosen.serves_tokens else DEFAULT_ENGINE
        return cls(
            workload=chosen.code,
            model_slug=(data.get("model") or None) if chosen.sizes_model else None,
            precision=data.get("precision") if chosen.sizes_model else None,
            context=data.get("context"),
            requests=data.get("requests"),
            memory_gib=data.get("memory_gib") if chosen.takes_memory else None,
            budget=data.get("budget"),
            max_price=data.get("max_price"),
            tier=data.get("tier") or "both",
            min_reliability=data.get("min_reliability"),
            market=data.get("market") or DEFAULT_MARKET,
            countries_input=tuple(countries_input),
            countries=countries,
            limit=data.get("limit"),
            kv_bits=(data.get("kv_cache") or DEFAULT_KV_BITS) if chosen.takes_kv_precision
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
            training=_training(data) if chosen.takes_training else DEFAULT_TRAINING,
            engine=engine,
            clusters=(data.get("clusters") or CLUSTERS_AUTO) if chosen.serves_tokens else CLUSTERS_AUTO,
            quantization=(data.get("quantization") or "") if chosen.serves_tokens else "",
            vllm_release=read_release(data) if chosen.serves_tokens and data.get("engine") == "vllm"
            else DEFAULT_RELEASE,
            llamacpp_build=read_build(data) if chosen.serves_tokens else NOT_GIVEN,
            flash_attention=flash_attention(data) if engine in GGUF_ENGINES else True,
            kv_unified=kv_unified(data) if engine == LLAMACPP else False,
            gpu_layers=data.get("gpu_layers") if engine in GGUF_ENGINES else None,
        )


def _training(data: dict) -> Training:
    """The fine-tune's choices as the form cleaned them, each left out at its default."""
    values: dict[str, Any] = {
        name: data.get(name) for name in TRAINING_FIELDS if data.get(name) not in (None, "")
    }
    return Training(**values).for_precision(cast(int, data.get("precision")))


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
    """The query from a query string's values (QueryDict or dict), each left out at its default
    (`with_defaults`), validated; QueryError otherwise. Numbers are plain dot decimals, or as the
    page's `number_language` writes them (`typed_numbers.typed_number`)."""
    form = WorkloadQueryForm(with_defaults(normalize_query(data)), number_language=number_language)
    if not form.is_valid():
        raise (Conflict if only_conflicts(form) else QueryError)(form_errors(form))
    return WorkloadQuery.from_form(form)
