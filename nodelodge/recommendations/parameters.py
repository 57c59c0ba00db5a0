"""Each input of the workload query, declared once: its name (the query string's, the API's and the
commands' `--name`), kind, default, limits, choices, label, help, messages and which workloads read it.

From these declarations are made the query form's fields (`query.WorkloadQueryForm`), the API's query
parameters and their OpenAPI schema (`wizard.api`), the `estimate` and `recommend` options
(`wizard/management/commands/_query.py`), the page's fine-tuning inputs (`wizard/_query_input.html`)
and the messages a user reads about a bad value (`messages.MESSAGES`). docs/adding-an-input.md says how
an input is added.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal

from django import forms
from django.utils.formats import number_format
from django.utils.functional import lazy
from django.utils.translation import gettext_lazy as _

from sizing.calculators.llamacpp import MAX_GPU_LAYERS, PRECISION_QUANT
from sizing.calculators.llamacpp_builds import (
    AUTO_SLOTS_FROM,
    AUTO_SLOTS_UNTIL,
    OLLAMA_LLAMA_SERVER,
    OLLAMA_PER_SLOT_FROM,
    PER_SLOT_FROM,
    STREAMS_FROM,
)
from sizing.calculators.vllm import DEFAULT_ENGINE, NCCL_BYTES, VLLM_VERSION
from sizing.calculators.vllm_interconnect import NVSWITCH, PCIE, PCIE_P2P
from sizing.calculators.vllm_versions import OLDEST as VLLM_OLDEST_NUMBER
from sizing.calculators.vllm_versions import RUNNER_SWITCH, V1_RUNNER, V2_RUNNER
from sizing.gguf import QUANT_TYPES
from sizing.limits import (
    MAX_CONTEXT,
    MAX_LIMIT,
    MAX_LORA_RANK,
    MAX_MONEY,
    MAX_NOTEBOOK_GIB,
    MAX_PAGE,
    MAX_REDUNDANCY,
    MAX_REQUESTS,
    MAX_TARGET_TOKENS_PER_S,
)
from sizing.markets import ANY_MARKET, DEFAULT_MARKET, INTERRUPTIBLE, MARKET_CHOICES, ON_DEMAND
from sizing.preferences import RELIABILITY_PLACES
from sizing.training import BASE_FORMAT_PRECISION
from sizing.training import CHOICES as TRAINING_CHOICES
from sizing.training import DEFAULTS as TRAINING_DEFAULTS
from sizing.workloads import BY_CODE, DEFAULT_WORKLOAD, WIZARD_CODES, WORKLOADS

from .sorts import CONFIDENCE_FILTERS, GROUPS, SORT_CHOICES, SORTS
from .typed_numbers import TypedDecimalField, TypedIntegerField


def _fill(message, values: dict) -> str:
    return str(message) % {
        name: value if isinstance(value, str) else number_format(value, force_grouping=True)
        for name, value in values.items()
    }


_filled_lazily = lazy(_fill, str)


def filled(message, **values):
    """A translatable message with named figures (and words), filled in when it is read."""
    return _filled_lazily(message, values)


# The kinds of input.
CHOICE, INTEGER, DECIMAL, TEXT, FLAG = "choice", "integer", "decimal", "text", "flag"
VLLM_OLDEST = ".".join(str(part) for part in VLLM_OLDEST_NUMBER[:2])
# Where an input belongs: every query (the page, /estimate, /recommendations, `estimate`, `recommend`),
# how a fine-tune is run (the same places, read for the fine-tuning workload only), or the machines'
# preferences and list (the page, /recommendations and `recommend` only).
QUERY, TRAINING, PREFERENCE = "query", "training", "preference"


@dataclass(frozen=True)
class Parameter:
    """One input of the workload query."""

    name: str
    kind: str  # CHOICE, INTEGER, DECIMAL, TEXT or FLAG
    section: str = QUERY
    label: object = None  # the form's label (None: the page words it, as for the context)
    words: object = None  # the field's name in the page's summary of errors (None: the label the page shows)
    default: str | None = None  # as the query string writes it; None: none (or the form's own rule)
    required: bool = False
    minimum: int | Decimal | None = None
    maximum: int | Decimal | None = None
    max_digits: int | None = None  # a decimal's digits in all
    decimal_places: int | None = None
    max_length: int | None = None  # text
    choices: tuple = ()  # (value, label) pairs
    whole_choices: bool = False  # the choices are whole numbers (a precision in bits)
    messages: dict = field(default_factory=dict)  # Django's error code -> the message a user reads
    description: str = ""  # the API's words beside the schema
    cli_help: str = ""  # the commands' help; "{default}" becomes "default: <the default>"
    cli_choices: bool = True  # the commands refuse a value outside the choices before parsing
    cli: bool = True  # an option of `estimate`/`recommend` (the query's own limit is not: the table's is)
    read_by: str | None = None  # the workload's flag that reads it (another ignores it), e.g. takes_training
    at_precision: int | None = None  # read at this precision only (another ignores it)
    place: tuple[int, int] | None = None  # (row, column) among the page's fine-tuning inputs
    inline: bool = False  # that row's inputs side by side
    arranges_list: bool = False  # only arranges the machine list shown (a watch leaves it out)
    page_help: object = None  # a line of help under the page's input

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def choice_values(self) -> list[str]:
        """The choices as typed (the empty choice, "any", left out)."""
        return [str(value) for value, _label in self.choices if str(value) != ""]

    def error_messages(self) -> dict:
        """The form field's messages: the declared ones, and for a field that must be given the
        message for a bad value where it is left empty (as Django says "Enter a valid value")."""
        found = dict(self.messages)
        if self.required:
            found.setdefault("required", found.get("invalid", _("Enter a valid value.")))
        return found

    def form_field(self, **overrides) -> forms.Field:
        """The Django form field that reads this input (`overrides`: e.g. required=True elsewhere)."""
        required = overrides.get("required", self.required)
        field = self if required == self.required else replace(self, required=required)
        options = {"required": required, "error_messages": field.error_messages()}
        if self.label is not None:
            options["label"] = self.label
        options.update(overrides)
        if self.kind == CHOICE:
            choices = list(self.choices)
            if self.whole_choices:
                return forms.TypedChoiceField(choices=choices, coerce=int, **options)
            return forms.ChoiceField(choices=choices, **options)
        if self.kind == INTEGER:
            minimum, maximum = _whole(self.minimum), _whole(self.maximum)
            return TypedIntegerField(min_value=minimum, max_value=maximum, **options)
        if self.kind == DECIMAL:
            return TypedDecimalField(
                min_value=_decimal(self.minimum), max_value=_decimal(self.maximum),
                max_digits=self.max_digits, decimal_places=self.decimal_places, **options,
            )
        if self.kind == TEXT:
            return forms.CharField(max_length=self.max_length, **options)
        if self.kind == FLAG:
            return forms.BooleanField(**options)
        raise ValueError(f"{self.name}: unknown kind {self.kind!r}")

    def add_option(self, parser) -> None:
        """The `estimate`/`recommend` option (argparse): the value is read as text and checked by the
        query's own rules, as the page's and the API's are; the choices are listed where declared."""
        options: dict[str, object] = {"dest": self.name}
        help_text = self.cli_help or ("{default}" if self.default is not None else "")
        if help_text:
            options["help"] = help_text.replace("{default}", f"default: {self.default}")
        if self.kind == FLAG:
            options.update(action="store_const", const="1")
        elif self.kind == CHOICE and self.cli_choices:
            options["choices"] = self.choice_values
        parser.add_argument(self.option, **options)


def _whole(limit: int | Decimal | None) -> int | None:
    return None if limit is None else int(limit)


def _decimal(limit: int | Decimal | None) -> Decimal | None:
    return None if limit is None else Decimal(limit)


def form_fields(parameters) -> dict[str, forms.Field]:
    return {parameter.name: parameter.form_field() for parameter in parameters}


def _own_models() -> str:
    return ", ".join(f"{w.default_model} ({w.code})" for w in WORKLOADS if w.in_wizard and w.default_model)


def _codes(name: str) -> tuple:
    return tuple((code, code) for code in TRAINING_CHOICES[name])


WORKLOAD_CHOICES = [(code, BY_CODE[code].label) for code in WIZARD_CODES]
PRECISIONS = [("16", _("16-bit")), ("8", _("8-bit")), ("4", _("4-bit"))]
KV_CACHE_PRECISIONS = [("16", _("16-bit (default)")), ("8", _("8-bit (vLLM fp8 KV cache)"))]
ENGINE_CHOICES = [("transformers", _("transformers (default)")), ("vllm", _("vLLM")), ("sglang", "SGLang"),
                  ("llamacpp", "llama.cpp"), ("ollama", "Ollama")]
DEFAULT_KV_BITS = 16
ON_OFF_CHOICES = [("", "—"), ("on", _("on")), ("off", _("off"))]
# The inputs only vLLM reads (`vllm_release.release_refusals`); engine_version is llama.cpp's build and
# Ollama's release too.
VLLM_RELEASE_INPUTS = (
    "engine_version", "cudagraph_estimate", "skip_vision_tower", "model_runner", "interconnect"
)
# vLLM's model runners (`sizing.calculators.vllm_versions.runner_for`); empty: the release's choice.
MODEL_RUNNER_CHOICES = [("", _("The release's choice for the model")), (V1_RUNNER, _("V1 model runner")),
                        (V2_RUNNER, _("V2 model runner"))]
# What the GPUs of a tensor-parallel split are connected by (`sizing.calculators.vllm_interconnect`); empty:
# not said (the GPU what-if takes a named GPU type's, everything else the NVSwitch machines measured).
INTERCONNECT_CHOICES = [
    ("", _("Not said: NVSwitch, or the named GPU type's")),
    (NVSWITCH, _("NVLink through NVSwitch, every GPU to every GPU")),
    (PCIE_P2P, _("PCIe or an NVLink bridge, with peer-to-peer")),
    (PCIE, _("PCIe without peer-to-peer (GeForce cards)")),
]
# Any GGUF type `sizing.gguf` sizes (llama.cpp and Ollama); empty: the precision's short form.
QUANTIZATION_CHOICES = [("", _("From the precision (16-bit F16, 8-bit Q8_0, 4-bit Q4_K_M)"))] + [
    (quant_type, quant_type) for quant_type in QUANT_TYPES]
# Clusters of machines for a model bigger than one machine (inference with a language model): planned
# when no single machine fits (auto), or always (show).
CLUSTERS_AUTO, CLUSTERS_SHOW = "auto", "show"
CLUSTER_CHOICES = [
    (CLUSTERS_AUTO, _("When no single machine fits (default)")), (CLUSTERS_SHOW, _("Always")),
]
MARKET_CHOICE_WORDS = [
    (ON_DEMAND, _("On demand only (default)")), (INTERRUPTIBLE, _("Interruptible allowed")),
    (ANY_MARKET, _("Any: on demand, interruptible or reserved")),
]
TIERS = [
    ("both", _("Secure and Community")), ("secure", _("Secure only")), ("community", _("Community only"))
]


def _decimal_messages(low, high, invalid, places, most=None) -> dict:
    """A decimal's messages: past the limit, its digits say the same as its maximum."""
    most = high if most is None else most
    return {"min_value": low, "max_value": high, "invalid": invalid, "max_decimal_places": places,
            "max_digits": most, "max_whole_digits": most}


# In the order the API lists them and the commands' help shows them: the query, how a fine-tune is run,
# then the machines' preferences and list.
PARAMETERS: tuple[Parameter, ...] = (
    Parameter(
        "workload", CHOICE, label=_("What you want to do"), words=_("What you want to do"),
        default=DEFAULT_WORKLOAD, required=True, choices=tuple(WORKLOAD_CHOICES),
        messages={"invalid_choice": _("Choose run a model, fine-tune, generate images or notebook.")},
    ),
    Parameter(
        "model", TEXT, label=_("Model"), words=_("Model"), max_length=100,
        messages={"required": _("Choose a model.")},
        description=f"Default: the workload's own model: {_own_models()}.",
        cli_help="catalog slug, e.g. llama-3-1-8b (default: the workload's own)",
    ),
    Parameter(
        "precision", CHOICE, label=_("Precision"), words=_("Precision"), default="16",
        choices=tuple(PRECISIONS), whole_choices=True, cli_choices=False,
        messages={"invalid_choice": _("Choose 16-bit, 8-bit or 4-bit."),
                  "required": _("Choose 16-bit, 8-bit or 4-bit.")},
        cli_help="16, 8 or 4 (bits per weight; {default})",
    ),
    Parameter(
        "kv_cache", CHOICE, label=_("KV cache precision"), words=_("KV cache precision"),
        default=str(DEFAULT_KV_BITS), choices=tuple(KV_CACHE_PRECISIONS), whole_choices=True,
        cli_choices=False,
        messages={"invalid_choice": _("Choose a 16-bit or an 8-bit KV cache."),
                  "required": _("Choose a 16-bit or an 8-bit KV cache.")},
        cli_help="16 or 8: bits per KV-cache value ({default})",
    ),
    Parameter(
        "engine", CHOICE, label=_("Engine"), default=DEFAULT_ENGINE, choices=tuple(ENGINE_CHOICES),
        messages={"required": _("Choose the engine: transformers, vllm, sglang, llamacpp or ollama."),
                  "invalid_choice": _("Choose the engine: transformers, vllm, sglang, llamacpp or ollama.")},
        description="Inference: transformers (the default estimate), vllm (vLLM's budget; fits within "
        "the release's default gpu_memory_utilization: 0.92 from 0.20, 0.9 before), sglang (SGLang's static "
        "pool: the weights and the token pool within "
        "--mem-fraction-static, 0.88 at --tp 1 to 0.79 from 16, written in each row's launch_server "
        "command; 16 or 8 bits), llamacpp or ollama (the model's GGUF file at the precision: 16 F16, "
        "8 Q8_0, 4 Q4_K_M; the KV cache in f16 or q8_0; every layer on the GPUs).",
        cli_help="inference: transformers, vllm (vLLM's budget), sglang (its static pool), llamacpp or "
        "ollama (GGUF files; {default})",
    ),
    Parameter(
        "quantization", CHOICE, label=_("GGUF quantization"), words=_("GGUF quantization"),
        choices=tuple(QUANTIZATION_CHOICES), cli_choices=False,
        messages={"invalid_choice": filled(
            _("Choose a GGUF quantization such as Q4_K_M, Q5_K_M, IQ4_XS or F16 (%(types)s), or leave it "
              "empty."),
            types=", ".join(QUANT_TYPES))},
        description="Inference under llama.cpp or Ollama only (refused with another engine): the GGUF quant "
        f"type of the file ({', '.join(QUANT_TYPES)}; either case), sized by llama.cpp's own mix of tensor "
        "types; the answer and each row name the file assumed and whether it is published for the model. "
        "Empty: the precision's short form ("
        + ", ".join(f"{bits} {quant}" for bits, quant in PRECISION_QUANT.items()) + ").",
        cli_help="llamacpp/ollama: a GGUF quant type such as Q4_K_M, Q5_K_M, IQ4_XS or F16 "
        "(default: from --precision)",
    ),
    # vLLM's release and the switches whose default it sets (`sizing.calculators.vllm_versions`): read under
    # engine=vllm only (named with another engine, refused), but engine_version, which under
    # engine=llamacpp is llama.cpp's build and under engine=ollama Ollama's release
    # (`sizing.calculators.llamacpp_builds`); the GPU what-if reads the same declarations.
    Parameter(
        "engine_version", TEXT, label=_("Engine version (vLLM release, llama.cpp build or Ollama version)"),
        words=_("Engine version"), max_length=20,
        messages={"max_length": _(
            "Enter the engine's version: a vLLM release such as 0.19, a llama.cpp build such as b6500 or an "
            "Ollama version such as 0.30.1.")},
        description=f"engine=vllm: vLLM's release, {VLLM_OLDEST} to {VLLM_VERSION} (empty: "
        f"{VLLM_VERSION}, the current stable release): before 0.9.2 the CUDA context is paid inside "
        "gpu_memory_utilization; from 0.20 the CUDA graphs' estimate is (cudagraph_estimate=off, vLLM's "
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0, leaves them outside) and the default "
        "gpu_memory_utilization is 0.92 (0.9 before); from 0.25 to 0.28 a model without a mixture of experts "
        "or linear attention runs on the V2 model runner, which keeps its graphs outside (model_runner). "
        "engine=llamacpp: the llama.cpp build serving it, as b6500 or 6500 (llama-server --version prints "
        f"it): from b{PER_SLOT_FROM} llama-server reserves the compute buffer's logits for one row per slot "
        "(ggml-org/llama.cpp#23861), before it for every token of the micro-batch; from "
        f"b{STREAMS_FROM} the KV cache of -np slots keeps a stream per slot (ggml-org/llama.cpp#14363: each "
        "slot's share of -c rounded up to 256 cells, a sliding-window layer's window plus one micro-batch in "
        f"every stream), before it one pool shared by the slots, and b{AUTO_SLOTS_FROM} to "
        f"b{AUTO_SLOTS_UNTIL - 1} run -np 1 as four slots over one pool; empty, the build is not known: the "
        "whole micro-batch and the larger of one pool and a stream per slot are sized (the larger need). "
        "engine=ollama: Ollama's release as "
        "ollama --version prints it, 0.30.1 or v0.30.1, read as the llama.cpp build it runs: before 0.30.0 "
        "its own runners (every token of the micro-batch, one KV pool shared by the slots); from 0.30.0 "
        "llama-server (ollama/ollama#16031) with a KV stream per slot, each slot's num_ctx rounded up to 256 "
        "tokens and a sliding-window layer's window plus one micro-batch in every slot; 0.30.0 runs "
        f"b{OLLAMA_LLAMA_SERVER[0][1]}, every token of the micro-batch; from {OLLAMA_PER_SLOT_FROM} "
        f"b{OLLAMA_LLAMA_SERVER[-1][1]} or later, one row per slot. "
        "Empty, or a release later than those read, is sized as the own runners (the larger logits). "
        "Another engine refuses it. The answer names the version or build and the rules it assumed.",
        cli_help=f"vllm: release, e.g. 0.19 or 0.9.2 (default: {VLLM_VERSION}); llamacpp: build, e.g. b6500 "
        "(default: not known, the whole micro-batch's logits); ollama: release, e.g. 0.30.1 (default: not "
        "known, its own runners' sizing)",
    ),
    Parameter(
        "cudagraph_estimate", CHOICE, label=_(
            "CUDA graphs' estimate inside the budget (vLLM 0.20 on; empty: the release's default)"),
        words=_("CUDA graphs' estimate"), choices=tuple(ON_OFF_CHOICES),
        messages={"invalid_choice": _("The CUDA graphs' estimate is on or off.")},
        description="engine=vllm from 0.20 only: on (the default) counts the CUDA graphs' estimate inside "
        "gpu_memory_utilization; off is vLLM's VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 (set on each "
        "command). Before 0.20 the graphs are outside the budget (on is refused), and before 0.29 the V2 "
        "model runner estimates none (on is refused with model_runner v2).",
        cli_help="vllm 0.20 on: on or off (off: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)",
    ),
    Parameter(
        "model_runner", CHOICE, label=_("vLLM model runner (empty: the release's choice for the model)"),
        words=_("Model runner"), choices=tuple(MODEL_RUNNER_CHOICES),
        messages={"invalid_choice": _("The vLLM model runner is v1 or v2.")},
        description=f"engine=vllm only: v1 or v2, the model runner sized ({RUNNER_SWITCH}=0 or 1 on each "
        "command). Empty: the release's choice, the V2 runner for every model from 0.29 and for a model "
        "without a mixture of experts or linear attention from 0.25, V1 otherwise. Before 0.29 the V2 "
        "runner keeps the CUDA graphs outside gpu_memory_utilization; v2 is refused before 0.22 and, before "
        "0.29, for a model with a mixture of experts or linear attention.",
        cli_help=f"vllm 0.22 on: v1 or v2 ({RUNNER_SWITCH}=0 or 1; default: the release's choice)",
    ),
    Parameter(
        "skip_vision_tower", CHOICE, label=_("Skip the vision tower (every modality limit 0)"),
        words=_("Skip the vision tower"), choices=tuple(ON_OFF_CHOICES),
        messages={"invalid_choice": _("Skipping the vision tower is on or off.")},
        description="engine=vllm from 0.10.1, a model with a vision tower only: on leaves the tower unloaded "
        "(--limit-mm-per-prompt '{\"image\": 0}' on each command) and its weights out of the budget; off "
        "(the default) loads it.",
        cli_help="vllm, a model with a vision tower: on leaves it unloaded",
    ),
    Parameter(
        "interconnect", CHOICE, label=_("What the GPUs of a split are connected by (vLLM)"),
        words=_("GPU interconnect"), choices=tuple(INTERCONNECT_CHOICES),
        messages={"invalid_choice": _("Choose the GPUs' interconnect: nvswitch, pcie_p2p or pcie.")},
        description="engine=vllm only: what the GPUs of a tensor-parallel split are connected by, which "
        "sets the NCCL and custom all-reduce buffers each GPU holds inside gpu_memory_utilization: nvswitch "
        f"(NVLink through NVSwitch, HGX and DGX machines: {NCCL_BYTES // 2**30} GiB per GPU, as measured on "
        "H100), pcie_p2p (PCIe or an NVLink bridge with peer-to-peer: vLLM's custom all-reduce at 2 GPUs and "
        "NCCL's buffers for 2 channels, about 0.06 GiB) or pcie (PCIe without peer-to-peer, GeForce cards: "
        "no custom all-reduce, NCCL's buffers in host memory, nothing). Empty: nvswitch; /api/v1/capacity "
        "takes a named GPU type's (GeForce cards pcie, cards sold for PCIe slots pcie_p2p, others "
        "nvswitch). The answer names the interconnect it assumed.",
        cli_help="vllm: nvswitch (default), pcie_p2p or pcie: what the GPUs of a tensor-parallel split are "
        "connected by",
    ),
    # llama.cpp's and Ollama's switches (`llamacpp_switches`): read under their engines only (named with
    # another, refused); the GPU what-if reads the same declarations.
    Parameter(
        "flash_attention", CHOICE, label=_("Flash attention (llama.cpp, Ollama)"), words=_("Flash attention"),
        choices=tuple(ON_OFF_CHOICES), cli_choices=False,
        messages={"invalid_choice": _("Flash attention is on or off.")},
        description="engine=llamacpp or engine=ollama only (refused with another engine): on (the default) "
        "or off, written on each row's command (llama-server -fa on/off, OLLAMA_FLASH_ATTENTION=1/0). Off, "
        "the compute buffer holds the attention scores of the whole context, and a quantized V cache "
        "(kv_cache 8: q8_0) is refused, as llama.cpp refuses it.",
        cli_help="llamacpp/ollama: on (default) or off (-fa, OLLAMA_FLASH_ATTENTION)",
    ),
    Parameter(
        "kv_unified", CHOICE, label=_("One KV pool the slots share (llama-server --kv-unified)"),
        words=_("One KV pool the slots share"), choices=tuple(ON_OFF_CHOICES), cli_choices=False,
        messages={"invalid_choice": _("kv_unified is on or off.")},
        description=f"engine=llamacpp only (refused with another engine, and on with a build before "
        f"b{STREAMS_FROM}): on runs llama-server with --kv-unified, one KV pool the requests' slots share "
        f"(-np requests, -c their tokens together) whatever the build's default: no stream per slot, each "
        f"slot's share not rounded up to 256 cells, the micro-batch not rounded to the slots; off (the "
        f"default) sizes the build's own layout (a stream per slot from b{STREAMS_FROM}).",
        cli_help=f"llamacpp from b{STREAMS_FROM}: on adds --kv-unified (one KV pool the slots share; default "
        "off)",
    ),
    # llama.cpp's -ngl, Ollama's num_gpu (`llamacpp_switches`): under those engines only, as the what-if.
    Parameter(
        "gpu_layers", INTEGER, label=_("Layers on the GPUs (-ngl; empty: all)"),
        words=_("Layers on the GPUs"), minimum=0, maximum=MAX_GPU_LAYERS,
        messages={
            "min_value": _("The GPU layers are 0 or more."),
            "max_value": _("At most %(limit_value)s GPU layers."),  # Django fills in the limit
            "invalid": _("The GPU layers are a whole number, such as 20."),
        },
        description="engine=llamacpp or engine=ollama only (refused with another engine): llama-server's "
        "-ngl N, Ollama's num_gpu N, the decoder layers kept on the GPUs (0 to 999; empty: every layer and "
        "the output head). Each machine row is sized with those layers on its GPUs as the build places them "
        "(up to b7433 and Ollama's own runners the last N layers, the output head only past them; from "
        "b7847 and in the llama-server Ollama starts from 0.30.0 the head first and the last N - 1 layers; "
        "the build not given, the placement needing more), the rest, their KV cache and the token "
        "embeddings in host memory, run on the CPU (slower): a machine too small for the whole model can "
        "fit. A count past the model's layers is every layer and the head, as llama.cpp reads it (-ngl "
        "999). Each row's command carries -ngl N (Ollama: num_gpu=N, a model option, after the server's "
        "settings).",
        cli_help="llamacpp/ollama: decoder layers on the GPUs (-ngl, Ollama's num_gpu; default: all)",
    ),
    Parameter(
        "context", INTEGER, default="4096", minimum=1, maximum=MAX_CONTEXT,
        messages={
            "min_value": _("Context must be at least 1 token."),
            "max_value": filled(_("Context can be at most %(max)s tokens."), max=MAX_CONTEXT),
            "invalid": _("Context must be a whole number of tokens, such as 4096."),
        },
        cli_help="tokens per request; sequence length for fine-tuning ({default})",
    ),
    Parameter(
        "requests", INTEGER, default="1", minimum=1, maximum=MAX_REQUESTS,
        messages={
            "min_value": _("Concurrent requests must be at least 1."),
            "max_value": filled(_("Concurrent requests can be at most %(max)s."), max=MAX_REQUESTS),
            "invalid": _("Concurrent requests must be a whole number, such as 1 or 8."),
        },
        description="Concurrent requests; the batch size of a fine-tune; audio streams. Under "
        "engine=llamacpp or engine=ollama the parallel slots: llama-server -np (with -c the requests' tokens "
        "together), OLLAMA_NUM_PARALLEL.",
        cli_help="concurrent requests (-np, OLLAMA_NUM_PARALLEL under llamacpp/ollama); batch size for "
        "fine-tuning; audio streams ({default})",
    ),
    Parameter(
        "memory_gib", DECIMAL, label=_("GPU memory needed (GiB)"), words=_("GPU memory needed"), default="24",
        minimum=Decimal("0.01"), maximum=Decimal(MAX_NOTEBOOK_GIB), max_digits=9, decimal_places=2,
        messages=_decimal_messages(
            _("GPU memory must be more than 0 GiB."),
            filled(_("GPU memory can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
            _("GPU memory must be a number of GiB, such as 24."),
            _("GPU memory takes at most 2 decimal places."),
        ),
        cli_help="notebook: GPU memory needed, GiB ({default})",
    ),
    # How a fine-tune is run (`sizing.training`): read for the fine-tuning workload only, ignored (and not
    # listed) for another.
    Parameter(
        "gradient_checkpointing", CHOICE, TRAINING, label=_("Gradient checkpointing"),
        words=_("Gradient checkpointing"), default=TRAINING_DEFAULTS["gradient_checkpointing"],
        choices=_codes("gradient_checkpointing"), read_by="takes_training", place=(1, 1),
        messages={"invalid_choice": _("Choose gradient checkpointing on, off or offload.")},
        description="Fine-tuning: on (default), off or offload (layer inputs in CPU memory).",
        cli_help="offload: layer inputs in CPU memory ({default})",
    ),
    Parameter(
        "loss", CHOICE, TRAINING, label=_("Loss"), words=_("Loss"), default=TRAINING_DEFAULTS["loss"],
        choices=_codes("loss"), read_by="takes_training", place=(1, 2),
        messages={"invalid_choice": _("Choose the loss: full, fused or chunked.")},
        description="Fine-tuning: full (default: fp32 logits of the whole batch), fused (Unsloth's, FOAK's "
        "cross-entropy over 16-bit logits) or chunked (Liger's fused linear cross-entropy).",
        cli_help="fused: Unsloth/FOAK cross-entropy; chunked: Liger's fused linear cross-entropy ({default})",
    ),
    Parameter(
        "lora_rank", INTEGER, TRAINING, label=_("LoRA rank"), words=_("LoRA rank"),
        default=TRAINING_DEFAULTS["lora_rank"], minimum=1, maximum=MAX_LORA_RANK, read_by="takes_training",
        place=(2, 2), inline=True,
        messages={
            "min_value": _("The LoRA rank must be at least 1."),
            "max_value": filled(_("The LoRA rank can be at most %(max)s."), max=MAX_LORA_RANK),
            "invalid": _("The LoRA rank must be a whole number, such as 16."),
        },
        description="Fine-tuning: adapter rank, 1 to 1024 and at most the hidden size.",
        cli_help="1 to 1024 ({default})",
    ),
    Parameter(
        "lora_targets", CHOICE, TRAINING, label=_("LoRA targets"), words=_("LoRA targets"),
        default=TRAINING_DEFAULTS["lora_targets"], choices=_codes("lora_targets"), read_by="takes_training",
        place=(3, 1),
        messages={"invalid_choice": _("Choose the LoRA targets: attention, qv, mlp or all.")},
        description="Fine-tuning: attention (default: q, k, v, o), qv, mlp or all (every linear layer).",
        cli_help="all: every linear layer ({default})",
    ),
    Parameter(
        "adapter", CHOICE, TRAINING, label=_("Adapter"), words=_("Adapter"),
        default=TRAINING_DEFAULTS["adapter"], choices=_codes("adapter"), read_by="takes_training",
        place=(2, 1),
        messages={"invalid_choice": _("Choose the adapter: lora or dora.")},
        description="Fine-tuning: lora (default) or dora.",
    ),
    Parameter(
        "optimizer", CHOICE, TRAINING, label=_("Optimizer"), words=_("Optimizer"),
        default=TRAINING_DEFAULTS["optimizer"], choices=_codes("optimizer"), read_by="takes_training",
        place=(3, 2),
        messages={"invalid_choice": _("Choose the optimizer: adamw or adamw8bit.")},
        description="Fine-tuning: adamw (default, fp32 states) or adamw8bit (bitsandbytes).",
    ),
    # What the 4-bit base is stored in: read at precision 4 only, ignored (and not listed) at another.
    Parameter(
        "base_format", CHOICE, TRAINING, label=_("4-bit base"), words=_("4-bit base"),
        default=TRAINING_DEFAULTS["base_format"], choices=_codes("base_format"), read_by="takes_training",
        at_precision=BASE_FORMAT_PRECISION, place=(4, 1),
        page_help=_(
            "A GPTQ checkpoint trains with 16-bit activations (AutoGPTQ, PEFT); the 4-bit precision only."
        ),
        messages={"invalid_choice": _("Choose the 4-bit base: nf4 or gptq.")},
        description="Fine-tuning at precision 4 only (ignored at another precision): the 4-bit base, nf4 "
        "(default: bitsandbytes QLoRA) or gptq (a GPTQ checkpoint, group 128, trained with AutoGPTQ/optimum "
        "and PEFT; not with adapter=dora).",
        cli_help="--precision 4 only: nf4 (bitsandbytes) or gptq (a GPTQ checkpoint) ({default})",
    ),
    Parameter(
        "budget", DECIMAL, PREFERENCE, label=_("Budget (USD)"), words=_("Budget"),
        minimum=Decimal("0.01"), maximum=MAX_MONEY, max_digits=14, decimal_places=2,
        messages=_decimal_messages(
            _("The budget must be more than $0; leave it empty for no budget."),
            filled(_("The budget can be at most $%(max)s."), max=MAX_MONEY),
            _("The budget must be an amount in USD, such as 50 or 12.50."),
            _("The budget takes at most 2 decimal places (cents)."),
        ),
        cli_help="USD",
    ),
    Parameter(
        "max_price", DECIMAL, PREFERENCE, label=_("Max price per hour (USD)"), words=_("Max price per hour"),
        minimum=Decimal("0.01"), maximum=MAX_MONEY, max_digits=14, decimal_places=2,
        messages=_decimal_messages(
            _("The max price must be more than $0 per hour; leave it empty for no limit."),
            filled(_("The max price can be at most $%(max)s per hour."), max=MAX_MONEY),
            _("The max price must be an amount in USD per hour, such as 2.50."),
            _("The max price takes at most 2 decimal places (cents)."),
        ),
        cli_help="USD per hour",
    ),
    Parameter(
        "tier", CHOICE, PREFERENCE, label=_("Tier"), words=_("Tier"), default="both", choices=tuple(TIERS),
        messages={"invalid_choice": _("Choose Secure, Community or both.")},
    ),
    Parameter(
        "market", CHOICE, PREFERENCE, label=_("Market"), words=_("Market"), default=DEFAULT_MARKET,
        choices=tuple(MARKET_CHOICE_WORDS),
        messages={
            "invalid_choice": filled(_("Choose a market: %(markets)s."), markets=", ".join(MARKET_CHOICES))
        },
        description="on_demand (default): every machine at its listed price, as a row always was; "
        "interruptible: a machine also offered interruptible is priced at the cheaper of its listed and "
        "interruptible prices (it can be taken back); any: a reserved price counts too. Rows are cheapest "
        "first at the price used, the max price and budget are judged on it, and each row names its market; "
        "Launch books that market. Clusters and throughput plans price each of their machines the same way "
        "(cheapest first, max price and budget on their totals), name each machine's market and say what "
        "an interruptible machine taken back does: a cluster's model stops on every machine, a plan serves "
        "less until it is replaced.",
        cli_help="on_demand (default), interruptible or any: the markets a machine's price may come from",
    ),
    Parameter(
        "min_reliability", DECIMAL, PREFERENCE, label=_("Reliability at least (0 to 1)"),
        words=_("Reliability at least"), minimum=Decimal("0"), maximum=Decimal("1"), max_digits=3,
        decimal_places=RELIABILITY_PLACES,
        messages=_decimal_messages(
            _("The minimum reliability cannot be below 0; leave it empty for any."),
            _("The minimum reliability can be at most 1, which is 100 percent."),
            _("The minimum reliability must be a figure from 0 to 1, such as 0.95."),
            _("The minimum reliability takes at most 2 decimal places, such as 0.95."),
        ),
        description="0 to 1, two places (0.95 is 95 %): only machines whose provider's feed reports at least "
        "this reliability (each feed says what it measures); a machine whose feed reports none does not "
        "meet a minimum, and is an alternative. Empty: any machine, reliability reported or not.",
        cli_help="0 to 1, e.g. 0.95: the reliability a machine's feed must report at least",
    ),
    Parameter(
        "countries", TEXT, PREFERENCE, label=_("Countries"), words=_("Countries"), max_length=2000,
        cli_help="comma-separated ISO codes; EU for its members",
    ),
    Parameter(
        "limit", INTEGER, PREFERENCE, label=_("Machines per page"), words=_("Machines per page"),
        minimum=1, maximum=MAX_LIMIT, cli=False, arranges_list=True,
        messages={
            "min_value": _("Show at least 1 machine per page."),
            "max_value": filled(_("At most %(max)s machines per page."), max=MAX_LIMIT),
            "invalid": _("Machines per page must be a whole number."),
        },
    ),
    # The machine list: sort, filters, grouping and page (defaults: cheapest first, everything, page 1).
    Parameter(
        "sort", CHOICE, PREFERENCE, label=_("Sort"), words=_("Sort by"), choices=tuple(SORT_CHOICES),
        messages={"invalid_choice": filled(_("Sort by one of: %(sorts)s."), sorts=", ".join(SORTS))},
        cli_help="order of the machines (default: price)",
    ),
    Parameter(
        "gpu", TEXT, PREFERENCE, label=_("GPU model"), words=_("GPU model"), max_length=100,
        cli_help="only this GPU model, e.g. 'H100 SXM 80GB'",
    ),
    Parameter(
        "min_memory_gib", DECIMAL, PREFERENCE, label=_("Memory per GPU at least (GiB)"),
        words=_("Memory per GPU at least"), minimum=Decimal("0.01"), maximum=Decimal(MAX_NOTEBOOK_GIB),
        max_digits=9, decimal_places=2,
        messages=_decimal_messages(
            _("Memory per GPU must be more than 0 GiB; leave it empty for any."),
            filled(_("Memory per GPU can be at most %(max)s GiB."), max=MAX_NOTEBOOK_GIB),
            _("Memory per GPU must be a number of GiB, such as 80."),
            _("Memory per GPU takes at most 2 decimal places."),
        ),
        cli_help="memory per GPU at least, GiB",
    ),
    Parameter(
        "confidence", CHOICE, PREFERENCE, label=_("Confidence"), words=_("Confidence"),
        choices=tuple(CONFIDENCE_FILTERS),
        messages={"invalid_choice": _("Confidence filter: high, medium, or empty for any.")},
        cli_help="confidence at least",
    ),
    Parameter(
        "group", CHOICE, PREFERENCE, label=_("Group"), words=_("Group by"), choices=tuple(GROUPS),
        messages={"invalid_choice": _("Group by gpu, or leave it empty.")}, arranges_list=True,
        cli_help="group the machines by GPU model",
    ),
    Parameter(
        "page", INTEGER, PREFERENCE, label=_("Page"), words=_("Page"), minimum=1, maximum=MAX_PAGE,
        arranges_list=True,
        messages={
            "min_value": _("Pages start at 1."),
            "max_value": _("There are not that many pages."),
            "invalid": _("The page must be a whole number, such as 2."),
        },
        cli_help="page of the machine list (pages of 100)",
    ),
    # A throughput plan (language models): the target asks for it.
    Parameter(
        "target_tokens", DECIMAL, PREFERENCE, label=_("Throughput to serve (tokens/s)"),
        words=_("Tokens per second to serve"), minimum=Decimal("0.001"), maximum=MAX_TARGET_TOKENS_PER_S,
        max_digits=13, decimal_places=3,
        messages=_decimal_messages(
            _("The throughput to serve must be more than 0 tokens/s; leave it empty for no plan."),
            filled(
                _("The throughput to serve can be at most %(max)s tokens/s."), max=MAX_TARGET_TOKENS_PER_S
            ),
            _("The throughput to serve must be a number of tokens per second, such as 180000."),
            _("The throughput to serve takes at most 3 decimal places."),
        ),
        cli_help="tokens/s to serve: adds the throughput plan",
    ),
    Parameter(
        "efficiency", DECIMAL, PREFERENCE, label=_("Usable efficiency (%)"), words=_("Usable efficiency"),
        minimum=Decimal("0.01"), maximum=Decimal("100"), max_digits=5, decimal_places=2,
        messages=_decimal_messages(
            _("The efficiency must be more than 0 percent."),
            _("The efficiency can be at most 100 percent."),
            _("The efficiency must be a percentage, such as 75."),
            _("The efficiency takes at most 2 decimal places."),
        ),
        cli_help="usable efficiency of the measured speed, %% (default 75)",
    ),
    Parameter(
        "redundancy", INTEGER, PREFERENCE, label=_("Redundancy (spare model copies)"),
        words=_("Spare copies"), minimum=0, maximum=MAX_REDUNDANCY,
        messages={
            "min_value": _("Spare copies cannot be negative; 0 means none."),
            "max_value": filled(_("At most %(max)s spare copies."), max=MAX_REDUNDANCY),
            "invalid": _("Spare copies must be a whole number, such as 1."),
        },
        cli_help="spare model copies of the plan (default 1)",
    ),
    # Also the cheapest plan on each of the GPU types that serve tokens cheapest (asked for: each is one
    # more exact search and one more list of up to hundreds of machines).
    Parameter(
        "gpu_plans", FLAG, PREFERENCE, label=_("Cheapest plan on each GPU type"),
        words=_("Cheapest plan on each GPU type"),
        cli_help="also the cheapest plan on each of the GPU types that serve tokens cheapest",
    ),
    Parameter(
        "clusters", CHOICE, PREFERENCE, label=_("Clusters of machines"), default=CLUSTERS_AUTO,
        choices=tuple(CLUSTER_CHOICES),
        messages={
            "invalid_choice": _("Choose auto (clusters when no single machine fits) or show (always).")
        },
        description="Language-model inference: clusters of identical machines at one site that serve the "
        "model together under vLLM (tensor parallel within a machine, pipeline parallel across machines): "
        "auto (the default: planned when no single machine fits) or show (always). At most 10, cheapest "
        "first.",
        cli_help="clusters of machines for a model bigger than one machine: auto (when no single machine "
        "fits) or show (always) ({default})",
    ),
)
BY_NAME = {parameter.name: parameter for parameter in PARAMETERS}
ENGINE_VERSION = BY_NAME["engine_version"]
# The inputs of an estimate (the page's, /estimate and `estimate`), and of the whole answer.
ESTIMATE_PARAMETERS = tuple(p for p in PARAMETERS if p.section in (QUERY, TRAINING))
TRAINING_PARAMETERS = tuple(p for p in PARAMETERS if p.section == TRAINING)
LIST_ARRANGEMENT = tuple(p.name for p in PARAMETERS if p.arranges_list)
# What a query asks for in a field it leaves out, as the query string writes it: the page, the API and
# the commands alike. The model left out is the workload's own (`query.default_model`).
DEFAULTS = {p.name: p.default for p in PARAMETERS if p.default is not None}
