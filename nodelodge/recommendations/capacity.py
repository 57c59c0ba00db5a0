"""The GPU what-if (`/api/v1/capacity`, the calculators page): how much one GPU type holds of a model
under vLLM, SGLang, llama.cpp or Ollama, without a machine. Parsed and validated once here, answered by
`sizing.calculators.vllm` (vLLM), `sglang_capacity` (SGLang) or `llamacpp_capacity` (llama.cpp and
Ollama, GGUF files).

Parameter names: model, precision, kv_cache, engine (vllm, llamacpp, ollama), gpu_memory_gib (one GPU's
memory as CUDA reports it), tensor_parallel, pipeline_parallel, gpu_memory_utilization (default: the
release's, `vllm_versions`), max_model_len
(vLLM: default the model's longest; llama.cpp: -c, every slot's tokens; Ollama: num_ctx, each request's),
max_num_batched_tokens, max_num_seqs (default: vLLM's for the GPU's size); for llama.cpp and Ollama also
quantization (a GGUF quant type), flash_attention, parallel (-np, OLLAMA_NUM_PARALLEL) and gpu_layers
(-ngl), for llama.cpp kv_unified (--kv-unified: one KV pool the slots share), and engine_version: for
llama.cpp its build (b6500: the logits it reserves, `llamacpp_builds`),
for Ollama its release (0.30.1: the llama.cpp build it runs, the logits it reserves and the KV cache's
layout); for SGLang mem_fraction_static (default: SGLang's for the GPU and tensor_parallel), with
max_model_len as --context-length and parallel as --max-running-requests. kv_cache is 16 or 8 (bits),
or a cache type by name: f16, bf16, fp8 (vLLM), q8_0, q4_0… (llama.cpp). Under vLLM, interconnect is what
the GPUs of a tensor-parallel split are connected by (nvswitch, pcie_p2p, pcie); left empty, a named GPU
type's (`catalog.rows.UsableMemory.interconnect`), else nvswitch.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any, cast

from django import forms
from django.utils.formats import number_format
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from catalog import rows as catalog_rows
from catalog.models import LanguageModel
from sizing.calculators.llamacpp import KV_CACHE_TYPES, MAX_SLOTS
from sizing.calculators.llamacpp_builds import NOT_GIVEN, LlamaCppBuild
from sizing.calculators.vllm import (
    DEFAULT_BATCHED_TOKENS,
    VllmSettings,
    budget_item,
    check_settings,
    has_vision_tower,
    model_flags,
    release_words,
    serve_command,
    vision_parameters,
    vllm_budget,
)
from sizing.calculators.vllm_interconnect import DEFAULT_INTERCONNECT, SplitCost, interconnect_label
from sizing.calculators.vllm_versions import (
    SKIP_TOWER_FLAG,
    VllmRelease,
    VllmVersion,
    parse_version,
)
from sizing.engine_support import (
    VLLM,
    GpuArchitecture,
    alternative_words,
    refusal_words,
    runnable_choices,
    support_for,
)
from sizing.errors import SizingError
from sizing.gguf import DEFAULT_GGUF_TYPE, QUANT_TYPES
from sizing.limits import (
    MAX_BATCHED_TOKENS,
    MAX_CONTEXT,
    MAX_GPU_MEMORY_GIB,
    MAX_NUM_SEQS,
    MAX_PARALLEL,
    UTILIZATION_PLACES,
)
from sizing.units import GIB, fmt_gib, gib_number

from . import llamacpp_capacity, sglang_capacity
from .llamacpp_switches import flash_attention, kv_unified, switch_refusals
from .messages import error_words, form_errors, only_conflicts
from .parameters import BY_NAME
from .query import Conflict, NotFound, QueryError, normalize_query
from .typed_numbers import TypedDecimalField, TypedIntegerField
from .vllm_release import clean_release, read_build, read_release, release_refusals

ENGINES = [("vllm", "vLLM"), ("sglang", "SGLang"), ("llamacpp", "llama.cpp"), ("ollama", "Ollama")]
GGUF_ENGINES = ("llamacpp", "ollama")
SGLANG = "sglang"
# The KV cache as the what-if takes it: bits (the wizard's 16 or 8), or the engine's own cache type.
KV_CACHE_CHOICES = ("16", "8", "f16", "bf16", "fp8", *(name for name in KV_CACHE_TYPES if name not in
                                                      ("f16", "bf16")))
VLLM_KV_BITS = {"16": 16, "f16": 16, "bf16": 16, "8": 8, "fp8": 8}
GGUF_KV_TYPES = {"16": "f16", "8": "q8_0", **{name: name for name in KV_CACHE_TYPES}}
KV_CACHE_WORDS = _("Choose the KV cache: 16 or 8 bits, or a cache type (f16, fp8, q8_0, q4_0…).")
# What only one engine reads: named to the other, it is refused rather than ignored.
VLLM_ONLY = ("precision", "gpu_memory_utilization", "max_num_batched_tokens", "max_num_seqs")
# flash_attention, kv_unified and gpu_layers: `llamacpp_switches.switch_refusals`, the wizard's query's
# rule too.
GGUF_ONLY = ("quantization", "parallel")
SGLANG_ONLY = ("mem_fraction_static",)
# What SGLang does not read of the others' settings (parallel is its --max-running-requests).
NOT_SGLANG = ("gpu_memory_utilization", "max_num_batched_tokens", "max_num_seqs", "quantization")
CAPACITY_DEFAULTS = {
    "model": "llama-3-1-8b",
    "precision": "16",
    "kv_cache": "16",
    "engine": "vllm",
    "gpu_memory_gib": "79.19",
    "tensor_parallel": "1",
    "pipeline_parallel": "1",
    "max_num_batched_tokens": str(DEFAULT_BATCHED_TOKENS),
}


class CapacityForm(forms.Form):
    # The model and its precisions as the workload query declares them (`parameters`), each required here.
    model = BY_NAME["model"].form_field(required=True)
    precision = BY_NAME["precision"].form_field(required=True)
    kv_cache = forms.ChoiceField(
        choices=[(code, code) for code in KV_CACHE_CHOICES], label=_("KV cache precision"),
        error_messages={"required": KV_CACHE_WORDS, "invalid_choice": KV_CACHE_WORDS})
    gpu = forms.CharField(max_length=100, required=False, label=_("GPU type"))
    engine = forms.ChoiceField(choices=ENGINES, label=_("Engine"), error_messages={
        "required": _("Choose the engine: vllm, sglang, llamacpp or ollama."),
        "invalid_choice": _("Choose the engine: vllm, sglang, llamacpp or ollama."),
    })
    gpu_memory_gib = TypedDecimalField(
        min_value=Decimal("0.01"), max_value=Decimal(MAX_GPU_MEMORY_GIB), max_digits=9, decimal_places=2,
        label=_("Memory of one GPU as CUDA reports it (GiB)"),
        error_messages=error_words("gpu_memory_gib", "required"),
    )
    tensor_parallel = TypedIntegerField(min_value=1, max_value=MAX_PARALLEL, label=_("Tensor-parallel size"),
                                        error_messages=error_words("tensor_parallel", "required"))
    pipeline_parallel = TypedIntegerField(min_value=1, max_value=MAX_PARALLEL,
                                          label=_("Pipeline-parallel size"),
                                          error_messages=error_words("pipeline_parallel", "required"))
    # vLLM takes any fraction in (0, 1] (a float): any decimal up to UTILIZATION_PLACES places, the
    # smallest of them more than 0; empty, the release's default (0.92 from 0.20, 0.9 before).
    gpu_memory_utilization = TypedDecimalField(
        min_value=Decimal(1).scaleb(-UTILIZATION_PLACES), max_value=Decimal("1"),
        max_digits=UTILIZATION_PLACES + 1, decimal_places=UTILIZATION_PLACES, required=False,
        label=_("GPU memory utilization (empty: the release's default)"),
        error_messages=error_words("gpu_memory_utilization", "required"),
    )
    # SGLang takes any fraction in (0, 1) (a float): the weights and the token pool live inside it.
    mem_fraction_static = TypedDecimalField(
        min_value=Decimal(1).scaleb(-UTILIZATION_PLACES),
        max_value=1 - Decimal(1).scaleb(-UTILIZATION_PLACES),
        max_digits=UTILIZATION_PLACES + 1, decimal_places=UTILIZATION_PLACES, required=False,
        label=_("Static memory fraction (SGLang's mem_fraction_static; empty: its default)"),
        error_messages=error_words("mem_fraction_static"),
    )
    max_model_len = TypedIntegerField(min_value=1, max_value=MAX_CONTEXT, required=False,
                                      label=_("Longest context (max_model_len)"),
                                      error_messages=error_words("max_model_len"))
    max_num_batched_tokens = TypedIntegerField(
        min_value=1, max_value=MAX_BATCHED_TOKENS,
        label=_("Tokens per prefill step (max_num_batched_tokens)"),
        error_messages=error_words("max_num_batched_tokens", "required"),
    )
    max_num_seqs = TypedIntegerField(min_value=1, max_value=MAX_NUM_SEQS, required=False,
                                     label=_("Sequences per step (max_num_seqs)"),
                                     error_messages=error_words("max_num_seqs"))
    # vLLM's release and the switches whose default it sets (`sizing.calculators.vllm_versions`); under
    # engine=llamacpp engine_version is the build, under engine=ollama the release
    # (`sizing.calculators.llamacpp_builds`).
    engine_version = BY_NAME["engine_version"].form_field()
    cudagraph_estimate = BY_NAME["cudagraph_estimate"].form_field()
    skip_vision_tower = BY_NAME["skip_vision_tower"].form_field()
    interconnect = BY_NAME["interconnect"].form_field()
    model_runner = BY_NAME["model_runner"].form_field()
    # llama.cpp and Ollama
    quantization = forms.CharField(max_length=20, required=False,
                                   label=_("GGUF quant type (llama.cpp, Ollama)"))
    # llama.cpp's and Ollama's switches as the workload query declares them (`llamacpp_switches`)
    flash_attention = BY_NAME["flash_attention"].form_field()
    parallel = TypedIntegerField(
        min_value=1, max_value=MAX_SLOTS, required=False,
        label=_("Parallel requests (-np, OLLAMA_NUM_PARALLEL, SGLang's --max-running-requests)"),
        error_messages={"min_value": _("At least one parallel request."),
                        "max_value": _("At most %(limit_value)s parallel requests."),
                        "invalid": _("Parallel requests are a whole number, such as 4.")})
    kv_unified = BY_NAME["kv_unified"].form_field()
    gpu_layers = BY_NAME["gpu_layers"].form_field()  # -ngl, num_gpu, as the workload query declares it

    def __init__(self, data=None, *args, number_language: str | None = None, **kwargs):
        super().__init__(data, *args, **kwargs)
        for field in self.fields.values():
            if isinstance(field, TypedDecimalField | TypedIntegerField):
                field.language = number_language

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        clean_release(self)  # the release and its switches (llama.cpp's build), as the wizard's query reads
        return cleaned


@dataclass(frozen=True)
class CapacityQuery:
    gpu: str | None  # the GPU type whose usable memory gpu_memory_gib is, when one was named
    model_slug: str
    precision: int
    kv_bits: int  # vLLM's (16 or 8); llama.cpp and Ollama read kv_cache_type
    engine: str
    gpu_memory_gib: Decimal
    tensor_parallel: int
    pipeline_parallel: int
    gpu_memory_utilization: Decimal | None  # None: the release's default
    max_model_len: int | None
    max_num_batched_tokens: int
    max_num_seqs: int | None
    kv_cache_type: str = "f16"  # llama.cpp's cache type for K and V
    quantization: str = DEFAULT_GGUF_TYPE
    flash_attention: bool = True
    parallel: int = 1
    gpu_layers: int | None = None
    kv_unified: bool = False  # llama-server's --kv-unified
    mem_fraction_static: Decimal | None = None  # SGLang's; None: its default for the GPU and tp
    parallel_asked: int | None = None  # parallel as given (SGLang's --max-running-requests), None if not
    engine_version: VllmVersion = parse_version(None)  # vLLM's release: which budget rules hold
    cudagraph_estimate: bool | None = None  # None: the release's default
    skip_vision_tower: bool = False
    interconnect: str | None = None  # what the GPUs of a split are connected by; None: not said
    model_runner: str | None = None  # None: the release's choice for the model
    # under llama.cpp the build, under Ollama its release: the logits reserved and the cache's layout
    llamacpp_build: LlamaCppBuild = NOT_GIVEN

    @property
    def utilization(self) -> Fraction:
        """gpu_memory_utilization as sized: the one asked, else the release's default."""
        if self.gpu_memory_utilization is None:
            return self.engine_version.default_utilization
        return Fraction(self.gpu_memory_utilization)

    def interconnect_for(self, gpu_type: catalog_rows.UsableMemory | None) -> str:
        """The interconnect the what-if sizes: the one asked, else the named GPU type's, else NVSwitch."""
        if self.interconnect:
            return self.interconnect
        return gpu_type.interconnect if gpu_type is not None else DEFAULT_INTERCONNECT

    def settings(self, gpu: GpuArchitecture | None = None, interconnect: str | None = None) -> VllmSettings:
        """vLLM's settings asked, on `gpu`'s architecture where a GPU type was named, its GPUs connected by
        `interconnect` (None: as asked, else NVSwitch)."""
        return VllmSettings(
            gpu=gpu,
            interconnect=interconnect or self.interconnect or DEFAULT_INTERCONNECT,
            gpu_memory_bytes=int(self.gpu_memory_gib * GIB),
            tensor_parallel=self.tensor_parallel,
            pipeline_parallel=self.pipeline_parallel,
            gpu_memory_utilization=self.utilization,
            max_model_len=self.max_model_len,
            max_num_batched_tokens=self.max_num_batched_tokens,
            max_num_seqs=self.max_num_seqs,
            version=self.engine_version,
            cudagraph_estimate=self.cudagraph_estimate,
            skip_vision_tower=self.skip_vision_tower,
            model_runner=self.model_runner,
        )


def with_capacity_defaults(data) -> dict[str, str]:
    """The values asked for; one left out or given empty takes its default, as in the wizard's query."""
    asked = {key: value for key, value in normalize_query(data).items() if value != ""}
    return {**CAPACITY_DEFAULTS, **asked}


def parse_capacity(data, number_language: str | None = None) -> CapacityQuery:
    """The what-if from a query string's values, each left out at its default; QueryError otherwise."""
    values = with_usable_memory(with_capacity_defaults(data))
    form = CapacityForm(values, number_language=number_language)
    if not form.is_valid():
        # a value of the form another engine reads (an engine_version): a conflict, as the schema allows it
        raise (Conflict if only_conflicts(form) else QueryError)(
            {**settings_refusals(form.cleaned_data), **form_errors(form)})
    # Each value valid alone, but not for the chosen engine: a conflict (422), as the schema allows them.
    wrong_engine = engine_refusals(form.cleaned_data, normalize_query(data))
    if wrong_engine:
        raise Conflict(wrong_engine)
    refusals = settings_refusals(form.cleaned_data)
    if refusals:
        raise Conflict(refusals)
    return query_from(form.cleaned_data)


def engine_refusals(cleaned: dict, asked: dict) -> dict[str, str]:
    """The settings asked that the chosen engine does not read, and a KV cache it does not store, by
    field: said, never silently ignored. `asked`: the values the request named (not the defaults)."""
    engine = cleaned.get("engine")
    refusals: dict[str, str] = release_refusals(engine, asked)
    if engine != SGLANG:
        for name in SGLANG_ONLY:
            if asked.get(name) not in (None, ""):
                refusals[name] = gettext("%(name)s is SGLang's (engine=sglang).") % {"name": name}
    refusals.update(switch_refusals(engine, asked, read_build(cleaned)))
    if engine == SGLANG:
        for name in NOT_SGLANG:
            if asked.get(name) not in (None, ""):
                refusals[name] = gettext(
                    "%(name)s is not SGLang's; SGLang reads mem_fraction_static, max_model_len "
                    "(--context-length), parallel (--max-running-requests) and tensor_parallel (--tp).") % {
                    "name": name}
        if cleaned.get("pipeline_parallel") not in (None, 1):
            refusals["pipeline_parallel"] = gettext(
                "The SGLang what-if sizes tensor parallelism (--tp) on one machine: pipeline_parallel 1.")
        if cleaned.get("precision") not in (None, 16, 8):
            refusals["precision"] = gettext(
                "SGLang is sized with 16-bit (bf16) or 8-bit (fp8) weights: precision 16 or 8.")
        if cleaned.get("kv_cache") not in VLLM_KV_BITS:
            refusals["kv_cache"] = gettext("SGLang caches K and V in 16 bits or in fp8: kv_cache 16 or 8.")
    elif engine in GGUF_ENGINES:
        for name in VLLM_ONLY:
            if asked.get(name) not in (None, ""):
                refusals[name] = gettext(
                    "%(name)s is vLLM's; llama.cpp and Ollama read quantization (a GGUF quant type such as "
                    "Q4_K_M), flash_attention, parallel and gpu_layers.") % {"name": name}
        quantization = (cleaned.get("quantization") or DEFAULT_GGUF_TYPE).strip()
        if quantization.upper() not in QUANT_TYPES:
            refusals["quantization"] = gettext("Choose a GGUF quant type: %(types)s.") % {
                "types": ", ".join(QUANT_TYPES)}
        if cleaned.get("kv_cache") not in GGUF_KV_TYPES:
            refusals["kv_cache"] = gettext(
                "llama.cpp and Ollama cache K and V as %(types)s (16 and 8 mean f16 and q8_0).") % {
                "types": ", ".join(KV_CACHE_TYPES)}
    else:
        for name in GGUF_ONLY:
            if asked.get(name) not in (None, ""):
                refusals[name] = gettext(
                    "%(name)s is read by llama.cpp and Ollama (engine=llamacpp or engine=ollama); vLLM "
                    "takes precision 16, 8 or 4.") % {"name": name}
        if cleaned.get("kv_cache") not in VLLM_KV_BITS:
            refusals["kv_cache"] = gettext("vLLM caches K and V in 16 bits or in fp8: kv_cache 16 or 8.")
    return refusals


def usable_gib(mib: int) -> Decimal:
    """A GPU type's usable memory in GiB as the what-if takes, lists and answers it: one rule, two
    decimals rounded half up, as vLLM logs it and the catalog's source states it (81,090 MiB: 79.19)."""
    return (Decimal(mib) / 1024).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


# What a setting the model refuses is taken as while the others are checked: vLLM's own defaults.
_ACCEPTED = {"tensor_parallel": 1, "pipeline_parallel": 1, "max_model_len": None}


def settings_refusals(cleaned: dict) -> dict[str, str]:
    """Every setting the chosen model refuses under vLLM (a tensor-parallel size that does not divide its
    attention heads, more pipeline stages than layers, a max_model_len past its longest), by field, in the
    sizing engine's words, from the values that were read: said with the other fields' messages, all at
    once, not one after another as each is fixed. llama.cpp and Ollama check theirs as they are sized."""
    if cleaned.get("engine") in GGUF_ENGINES:
        return {}
    slug = (cleaned.get("model") or "").strip()
    row = catalog_rows.get_model(slug) if slug else None
    if not isinstance(row, LanguageModel):
        return {}
    spec = catalog_rows.language_model_spec(row)
    values: dict[str, Any] = {name: cleaned.get(name) or accepted for name, accepted in _ACCEPTED.items()}
    refusals: dict[str, str] = {}
    memory = int(Decimal(CAPACITY_DEFAULTS["gpu_memory_gib"]) * GIB)  # checked on its own field
    while True:
        try:
            check_settings(spec, VllmSettings(gpu_memory_bytes=memory, **values))
        except SizingError as error:
            if error.field not in _ACCEPTED or error.field in refusals:
                return refusals
            refusals[error.field] = error.message
            values[error.field] = _ACCEPTED[error.field]
        else:
            return refusals


def with_usable_memory(values: dict[str, str]) -> dict[str, str]:
    """A named GPU type (`gpu`, by name, case ignored) sets gpu_memory_gib to the memory CUDA reports for
    it, whatever gpu_memory_gib says; an unknown one is refused."""
    wanted = (values.get("gpu") or "").strip()
    if not wanted:
        return values
    for usable in catalog_rows.gpu_types_usable():
        if usable.gpu_type.casefold() == wanted.casefold():
            return {**values, "gpu": usable.gpu_type, "gpu_memory_gib": str(usable_gib(usable.mib))}
    raise NotFound({"gpu": gettext("No GPU type %(gpu)s in the catalog.") % {"gpu": repr(wanted[:100])}})


def query_from(cleaned: dict) -> CapacityQuery:
    """The what-if from a valid form's values."""
    return CapacityQuery(
        gpu=cleaned.get("gpu") or None,
        model_slug=cleaned["model"].strip(), precision=cleaned["precision"],
        kv_bits=VLLM_KV_BITS.get(cleaned["kv_cache"], 16),
        kv_cache_type=GGUF_KV_TYPES.get(cleaned["kv_cache"], "f16"),
        quantization=(cleaned.get("quantization") or DEFAULT_GGUF_TYPE).strip().upper(),
        flash_attention=flash_attention(cleaned), parallel=cleaned.get("parallel") or 1,
        gpu_layers=cleaned.get("gpu_layers"), kv_unified=kv_unified(cleaned),
        mem_fraction_static=cleaned.get("mem_fraction_static"), parallel_asked=cleaned.get("parallel"),
        engine=cleaned["engine"], gpu_memory_gib=cleaned["gpu_memory_gib"],
        tensor_parallel=cleaned["tensor_parallel"], pipeline_parallel=cleaned["pipeline_parallel"],
        gpu_memory_utilization=cleaned["gpu_memory_utilization"], max_model_len=cleaned.get("max_model_len"),
        max_num_batched_tokens=cleaned["max_num_batched_tokens"], max_num_seqs=cleaned.get("max_num_seqs"),
        **_release_fields(read_release(cleaned)), llamacpp_build=read_build(cleaned),
    )


def _release_fields(release: VllmRelease) -> dict[str, Any]:
    return {"engine_version": release.version, "cudagraph_estimate": release.cudagraph_estimate,
            "skip_vision_tower": release.skip_vision_tower, "model_runner": release.model_runner,
            "interconnect": release.interconnect}


def _item(item) -> dict:
    return {"name": item.name, "gib": gib_number(item.bytes), "bytes": item.bytes, "formula": item.formula,
            "per_gpu": item.per_gpu}


def capacity_for(query: CapacityQuery) -> dict:
    """The answer: whether the engine starts, its budget item by item, the pool and the command."""
    row = catalog_rows.get_model(query.model_slug)
    if not isinstance(row, LanguageModel):
        raise NotFound({"model": gettext("No language model %(slug)s in the catalog.") % {
            "slug": repr(query.model_slug)}})
    spec = catalog_rows.language_model_spec(row)
    if query.engine in GGUF_ENGINES:
        return llamacpp_capacity.answer(spec, query, _gpu_type(query.gpu))
    if query.engine == SGLANG:
        return sglang_capacity.answer(spec, query, _gpu_type(query.gpu))
    gpu_type = _gpu_type(query.gpu)
    architecture = gpu_type.architecture if gpu_type is not None else None
    interconnect = query.interconnect_for(gpu_type)
    try:
        budget = vllm_budget(spec, query.precision, query.kv_bits, query.settings(architecture, interconnect))
    except SizingError as error:  # settings each valid that the model cannot take together
        raise Conflict({error.field: error.message}) from error
    fits, reason = budget.fit(budget.max_model_len, 1)
    kv = max(budget.kv_cache_bytes, 0)
    concurrency = budget.max_concurrency()
    on_gpu = _on_gpu(spec, query, gpu_type, interconnect) if query.gpu is not None else NOT_ASKED
    return {
        "model": spec.slug,
        "engine": query.engine,
        "engine_version": query.engine_version.text,
        "engine_version_rules": release_words(budget),
        "model_runner": budget.runner,
        "interconnect": interconnect,
        "interconnect_text": _interconnect_words(query, gpu_type, interconnect),
        "fits": fits,
        "reason": reason,
        "gpu": query.gpu,
        "gpu_memory_source": gpu_type.source if gpu_type is not None else None,
        "gpu_architecture": gpu_type.architecture.label if gpu_type and gpu_type.architecture else None,
        "gpu_memory_gib": float(query.gpu_memory_gib),
        "gpu_memory_utilization": float(budget.settings.gpu_memory_utilization),
        "budget_gib": gib_number(budget.budget_bytes),
        "budget": budget_item(budget),
        "weights_gib": gib_number(budget.weights.bytes),
        "activation_gib": gib_number(budget.activation.bytes),
        "non_torch_gib": gib_number(budget.non_torch.bytes),
        "kv_cache_gib": gib_number(kv),
        "kv_cache_tokens": budget.kv_cache_tokens,
        "max_model_len": budget.max_model_len,
        "max_concurrency": round(concurrency.numerator / concurrency.denominator, 2),
        # The whole requests of max_model_len tokens the pool holds at once (54 where vLLM logs 54.28x).
        "requests_at_once": concurrency.numerator // concurrency.denominator,
        "items": [_item(item) for item in budget.inside_items],
        "vision_tower": _vision_tower(spec, budget),
        "outside_budget": [_item(item) for item in budget.outside],
        # A setting that does not start has no command to copy: vLLM would stop at start-up, as it would
        # on a named GPU that cannot run the asked weights or KV cache.
        "command": (serve_command(spec.hf_id, budget, dtype_flags=on_gpu.dtype_flags,
                                  model_flags=model_flags(spec))
                    if spec.hf_id and fits and on_gpu.runs is not False else None),
        "runs_on_gpu": on_gpu.runs,
        "gpu_support_text": on_gpu.words,
        "alternative": on_gpu.alternative,
    }


def _vision_tower(spec, budget) -> dict | None:
    """A multimodal model's vision tower: whether it is loaded, its weights, and the flag that skips it
    (None where the release loads it whatever the limits). None for a language model only."""
    if not has_vision_tower(spec):
        return None
    parameters = vision_parameters(spec)
    skipped = budget.settings.skip_vision_tower
    return {"loaded": not skipped, "parameters": parameters, "gib": gib_number(parameters * 2),
            "skip_flag": SKIP_TOWER_FLAG if budget.settings.version.skips_tower else None}


@dataclass(frozen=True)
class OnGpu:
    """What a named GPU type runs of the what-if (`sizing.engine_support`): whether the asked weights and KV
    cache run there (None: no GPU type named), the flags its commands carry, and where they do not run,
    why and what runs there and starts instead."""

    runs: bool | None
    dtype_flags: tuple[str, ...] = ()
    words: str | None = None
    alternative: dict | None = None


NOT_ASKED = OnGpu(runs=None)


def _gpu_type(gpu: str | None) -> catalog_rows.UsableMemory | None:
    if gpu is None:
        return None
    return next((usable for usable in catalog_rows.gpu_types_usable() if usable.gpu_type == gpu), None)


def _interconnect_words(query: CapacityQuery, gpu_type: catalog_rows.UsableMemory | None,
                        interconnect: str) -> str:
    """The interconnect sized and where it comes from, with what the split costs each GPU on it."""
    if query.interconnect:
        where = gettext("as asked")
    elif gpu_type is not None:
        where = gettext("taken for the %(gpu)s (interconnect= to say otherwise)") % {"gpu": gpu_type.gpu_type}
    else:
        where = gettext("not said: the NVSwitch machines measured (interconnect= to say otherwise)")
    cost = SplitCost(interconnect, query.tensor_parallel)
    words = gettext("GPUs connected by %(interconnect)s, %(where)s.") % {
        "interconnect": interconnect_label(interconnect), "where": where}
    if cost.split:
        words += " " + gettext("The split adds %(bytes)s per GPU of NCCL and all-reduce buffers.") % {
            "bytes": fmt_gib(cost.bytes)}
    return words


def _on_gpu(spec, query: CapacityQuery, gpu_type: catalog_rows.UsableMemory | None,
            interconnect: str) -> OnGpu:
    architecture = gpu_type.architecture if gpu_type is not None else None
    asked = support_for(VLLM, spec, query.precision, query.kv_bits, architecture)
    if asked.runs:
        return OnGpu(runs=True, dtype_flags=asked.dtype_flags)
    alternative, choice, half = None, None, False
    for precision, kv_bits in runnable_choices(VLLM, spec, query.precision, query.kv_bits, architecture):
        try:
            budget = vllm_budget(spec, precision, kv_bits, query.settings(architecture, interconnect))
        except SizingError:
            continue
        if budget.fit(budget.max_model_len, 1)[0]:
            flags = support_for(VLLM, spec, precision, kv_bits, architecture).dtype_flags
            choice, half = (precision, kv_bits), bool(flags)
            command = (serve_command(spec.hf_id, budget, dtype_flags=flags, model_flags=model_flags(spec))
                       if spec.hf_id else None)
            alternative = {"precision": precision, "kv_cache_bits": kv_bits, "command": command}
            break
    words = (refusal_words(VLLM, cast(str, query.gpu), architecture, asked.refused) + " "
             + alternative_words(choice, half))
    return OnGpu(runs=False, words=words, alternative=alternative)


def gpu_choices() -> list[tuple[str, str]]:
    """The GPU types a what-if may name, each with the memory CUDA reports for it."""
    return [("", gettext("Enter the memory below"))] + [
        (usable.gpu_type, f"{usable.gpu_type} ({number_format(usable_gib(usable.mib), 2)} GiB)")
        for usable in catalog_rows.gpu_types_usable()
    ]


def language_model_choices() -> list[tuple[str, str]]:
    """The catalog's language models a what-if may size, as (slug, name), in the wizard's order."""
    return [(row.slug, row.name) for row in catalog_rows.models_for_workload("inference")
            if getattr(row, "kind", None) == "language"]
