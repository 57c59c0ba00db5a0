"""Which GPU runs what a serving engine is asked to run: the one rule every start command the console
offers goes through (issue #43). A command is offered only for a GPU that can run it; where a GPU cannot
run the asked weights or KV cache, the answer says so and offers what does run there.

The rule, from the engines' own documentation (current vLLM release):

- FP8 weights (`--quantization fp8`, or a checkpoint published in FP8): W8A8 on NVIDIA compute capability
  8.9 and up (Ada Lovelace, Hopper, Blackwell) and on AMD MI300X (CDNA3); weight-only W8A16 through the
  FP8 Marlin kernel from compute capability 7.5 (Turing, Ampere). Not on Volta (7.0). vLLM docs, "FP8
  W8A8" (docs.vllm.ai/en/latest/features/quantization/fp8/), and "Supported Hardware" in
  docs.vllm.ai/en/latest/features/quantization/ (FP8 W8A8: Ada, Hopper, AMD).
- bitsandbytes (`--quantization bitsandbytes`, the 4-bit path): NVIDIA Volta through Hopper in the
  "Supported Hardware" table, no AMD GPU. Blackwell is not a column of that table; bitsandbytes publishes
  builds for it (sm_100, sm_120), so every NVIDIA GPU from compute capability 7.0 counts as running it.
- MXFP4 checkpoints (gpt-oss): vLLM's GPT-OSS recipe (docs.vllm.ai/projects/recipes, OpenAI/GPT-OSS)
  lists H100, H200, B200 and MI300X, and Ampere through Marlin's MXFP4 MoE; Ada Lovelace and the RTX 5090
  are "being worked on", so they are not offered (Ampere, Hopper, Blackwell below compute capability 11,
  and CDNA3 only).
- An FP8 KV cache (`--kv-cache-dtype fp8`, SGLang's `fp8_e5m2`): the console's conservative rule offers it
  only where FP8 weights run (NVIDIA from compute capability 7.5, AMD CDNA3).
- 16-bit: vLLM refuses bfloat16 below compute capability 8.0 ("Bfloat16 is only supported on GPUs with
  compute capability of at least 8.0 … use --dtype=half", vllm/platforms/cuda.py), so every command for
  such a GPU (V100, T4) carries `--dtype half`; SGLang takes the same flag.
- SGLang itself refuses NVIDIA GPUs below compute capability 7.5 ("SGLang only supports sm75 and above").

The transformers estimate offers no command: there is nothing for the rule to refuse (`COMMAND_ENGINES`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from .i18n import TranslatedWords, gettext, gettext_noop, ngettext
from .specs import LanguageModelSpec
from .weights import native_format_of, precision_choices

NVIDIA, AMD = "NVIDIA", "AMD"
ComputeCapability = tuple[int, int]


@dataclass(frozen=True)
class Family:
    """A GPU architecture the rule knows: its maker, its name (a product name, the same in every
    language) and, on NVIDIA, the compute capabilities its GPUs have."""

    key: str
    maker: str  # NVIDIA or AMD
    name: str
    capabilities: tuple[ComputeCapability, ComputeCapability] | None = None  # lowest, highest; NVIDIA only

    def holds(self, capability: ComputeCapability | None) -> bool:
        """Whether a GPU of this family may have `capability` (AMD GPUs have none)."""
        if self.capabilities is None:
            return capability is None
        low, high = self.capabilities
        return capability is not None and low <= capability <= high


FAMILIES = {family.key: family for family in (
    Family("volta", NVIDIA, "Volta", ((7, 0), (7, 2))),
    Family("turing", NVIDIA, "Turing", ((7, 5), (7, 5))),
    Family("ampere", NVIDIA, "Ampere", ((8, 0), (8, 7))),
    Family("ada", NVIDIA, "Ada Lovelace", ((8, 9), (8, 9))),
    Family("hopper", NVIDIA, "Hopper", ((9, 0), (9, 0))),
    Family("blackwell", NVIDIA, "Blackwell", ((10, 0), (12, 1))),
    Family("cdna2", AMD, "CDNA2"),
    Family("cdna3", AMD, "CDNA3"),
)}

_CAPABILITY = re.compile(r"(\d{1,2})\.(\d)")


def parse_compute_capability(text: str) -> ComputeCapability | None:
    """"8.6" as (8, 6); None for anything else (empty, "8", "8.6.1")."""
    found = _CAPABILITY.fullmatch(text.strip()) if text else None
    return (int(found.group(1)), int(found.group(2))) if found else None


@dataclass(frozen=True)
class GpuArchitecture:
    """What the rule reads of a GPU type: its family and, on NVIDIA, its compute capability."""

    family: Family
    compute_capability: ComputeCapability | None = None

    @property
    def maker(self) -> str:
        return self.family.maker

    def at_least(self, capability: ComputeCapability) -> bool:
        return self.compute_capability is not None and self.compute_capability >= capability

    @property
    def label(self) -> str:
        """"Volta, compute capability 7.0", or the family alone on AMD ("CDNA3")."""
        if self.compute_capability is None:
            return self.family.name
        major, minor = self.compute_capability
        return gettext("%(family)s, compute capability %(capability)s") % {
            "family": self.family.name, "capability": f"{major}.{minor}"}


@lru_cache(maxsize=64)
def gpu_architecture(family: str, compute_capability: str) -> GpuArchitecture | None:
    """A GPU type's architecture from the catalog's two fields, or None where they name none the rule
    knows or disagree (an NVIDIA family without its compute capability): no command is offered then."""
    known = FAMILIES.get(family or "")
    capability = parse_compute_capability(compute_capability or "")
    if known is None or not known.holds(capability):
        return None
    return GpuArchitecture(known, capability)


def architecture_problem(vendor: str, family: str, compute_capability: str) -> tuple[str, str] | None:
    """Where a GPU type's vendor, architecture and compute capability disagree, as (the field at fault,
    why) in the admin's words; None when they agree or nothing is recorded."""
    if not family:
        if compute_capability:
            return "architecture", "Name the architecture of this compute capability."
        return None
    known = FAMILIES.get(family)
    if known is None:
        return "architecture", f"Unknown architecture {family!r}."
    if known.maker != vendor:
        return "architecture", f"{known.name} is an architecture of {known.maker} GPUs, not {vendor}."
    if known.capabilities is None:
        if compute_capability:
            return "compute_capability", "AMD GPUs have no CUDA compute capability: leave it empty."
        return None
    capability = parse_compute_capability(compute_capability)
    if capability is None:
        return "compute_capability", 'Give the compute capability as major.minor, e.g. "8.6".'
    if not known.holds(capability):
        (low_major, low_minor), (high_major, high_minor) = known.capabilities
        return "compute_capability", (f"{known.name} GPUs have compute capability {low_major}.{low_minor} to "
                                      f"{high_major}.{high_minor}, not {compute_capability}.")
    return None


# --- the rule ---------------------------------------------------------------------------------------

# Engines that print a start command, and so are held to the rule.
VLLM, SGLANG = "vllm", "sglang"
COMMAND_ENGINES = (VLLM, SGLANG)
ENGINE_NAMES = {VLLM: "vLLM", SGLANG: "SGLang", "transformers": "transformers"}

# How weights are loaded at a precision (`weights_format`).
SIXTEEN_BIT, FP8, BITSANDBYTES, MXFP4 = "16-bit", "fp8", "bitsandbytes", "mxfp4"
# What may not run, in the order the answer names them.
ENGINE, FP8_KV, UNKNOWN = "engine", "fp8_kv", "unknown"

BFLOAT16_FROM = (8, 0)  # below: float16 only (`--dtype half`)
FP8_FROM = (7, 5)  # W8A16 through FP8 Marlin from here, W8A8 from 8.9
SGLANG_FROM = (7, 5)
FP8_AMD = ("cdna3",)
MXFP4_NVIDIA = ("ampere", "hopper", "blackwell")  # Blackwell below compute capability 11 (B200), not 12
MXFP4_BLACKWELL_BELOW = (11, 0)
MXFP4_AMD = ("cdna3",)


def weights_format(model: LanguageModelSpec, precision: int) -> str:
    """How an engine loads the model's weights at `precision`: as published where the model's own
    checkpoint has that precision (block FP8, MXFP4), else 16-bit, FP8 in flight or bitsandbytes."""
    native = native_format_of(model)
    if native is not None and native.bits == precision:
        return MXFP4 if native.key == "mxfp4" else FP8
    return {16: SIXTEEN_BIT, 8: FP8, 4: BITSANDBYTES}[precision]


def _fp8_runs(gpu: GpuArchitecture) -> bool:
    return gpu.at_least(FP8_FROM) if gpu.maker == NVIDIA else gpu.family.key in FP8_AMD


def _bitsandbytes_runs(gpu: GpuArchitecture) -> bool:
    return gpu.maker == NVIDIA


def _mxfp4_runs(gpu: GpuArchitecture) -> bool:
    if gpu.maker != NVIDIA:
        return gpu.family.key in MXFP4_AMD
    return gpu.family.key in MXFP4_NVIDIA and not gpu.at_least(MXFP4_BLACKWELL_BELOW)


WEIGHTS_RUN = {FP8: _fp8_runs, BITSANDBYTES: _bitsandbytes_runs, MXFP4: _mxfp4_runs}


@dataclass(frozen=True)
class Support:
    """Whether an engine starts the asked weights and KV cache on a GPU: what does not run there
    (`refused`, empty when it all does) and whether its commands carry `--dtype half`."""

    refused: tuple[str, ...] = ()
    half: bool = False

    @property
    def runs(self) -> bool:
        return not self.refused

    @property
    def dtype_flags(self) -> tuple[str, ...]:
        return ("--dtype half",) if self.half else ()


@lru_cache(maxsize=512)
def support(engine: str, weights: str, kv_bits: int, gpu: GpuArchitecture | None) -> Support:
    """The rule: whether `engine` runs `weights` (`weights_format`) with a `kv_bits` KV cache on `gpu`
    (None: an architecture the catalog does not record, where no command is known to start)."""
    if engine not in COMMAND_ENGINES:
        return Support()
    if gpu is None:
        return Support((UNKNOWN,))
    refused = []
    if engine == SGLANG and gpu.maker == NVIDIA and not gpu.at_least(SGLANG_FROM):
        refused.append(ENGINE)
    if weights in WEIGHTS_RUN and not WEIGHTS_RUN[weights](gpu):
        refused.append(weights)
    if kv_bits == 8 and not _fp8_runs(gpu):
        refused.append(FP8_KV)
    return Support(tuple(refused), half=gpu.maker == NVIDIA and not gpu.at_least(BFLOAT16_FROM))


def support_for(engine: str, model: LanguageModelSpec, precision: int, kv_bits: int,
                gpu: GpuArchitecture | None) -> Support:
    return support(engine, weights_format(model, precision), kv_bits, gpu)


def runnable_choices(engine: str, model: LanguageModelSpec, precision: int, kv_bits: int,
                     gpu: GpuArchitecture | None) -> tuple[tuple[int, int], ...]:
    """What runs on `gpu` instead of the asked (precision, KV-cache bits), nearest first: each precision
    the model is offered in (the asked one first, then the nearer, the higher of two as near), at the asked
    KV cache where it runs there, else a 16-bit one. The caller takes the first that fits."""
    if gpu is None:
        return ()
    offered = [bits for bits, refusal in precision_choices(model).items() if refusal is None]
    nearest = sorted(offered, key=lambda bits: (abs(math.log2(bits / precision)), -bits))
    found = []
    for bits in nearest:
        for kv in dict.fromkeys((kv_bits, 16)):
            if (bits, kv) != (precision, kv_bits) and support_for(engine, model, bits, kv, gpu).runs:
                found.append((bits, kv))
                break
    return tuple(found)


# --- its words ----------------------------------------------------------------------------------------

REFUSED_WORDS = TranslatedWords({
    ENGINE: gettext_noop("SGLang itself"),
    FP8: gettext_noop("FP8 weights"),
    BITSANDBYTES: gettext_noop("bitsandbytes 4-bit weights"),
    MXFP4: gettext_noop("MXFP4 weights"),
    FP8_KV: gettext_noop("an FP8 KV cache"),
})
WHY_WORDS = TranslatedWords({
    ENGINE: gettext_noop("SGLang runs on NVIDIA GPUs from compute capability 7.5"),
    FP8: gettext_noop(
        "FP8 runs on NVIDIA GPUs from compute capability 7.5 (weight-only through FP8 Marlin below 8.9) "
        "and on AMD MI300X"),
    BITSANDBYTES: gettext_noop("bitsandbytes runs on NVIDIA GPUs only"),
    MXFP4: gettext_noop(
        "MXFP4 runs on Ampere, Hopper and data-center Blackwell GPUs and on AMD MI300X"),
    FP8_KV: gettext_noop(
        "an FP8 KV cache is offered only where FP8 runs: NVIDIA from compute capability 7.5, AMD MI300X"),
})


def refusal_words(engine: str, gpu_type: str, gpu: GpuArchitecture | None, refused: tuple[str, ...]) -> str:
    """Why the asked command is not offered on `gpu_type`: one sentence per thing that does not run."""
    if gpu is None or UNKNOWN in refused:
        return gettext(
            "The catalog does not record the architecture of %(gpu)s, so no command is offered for it: "
            "none is known to start there."
        ) % {"gpu": gpu_type}
    return " ".join(
        gettext("%(engine)s cannot run %(what)s on %(gpu)s (%(architecture)s): %(why)s.") % {
            "engine": ENGINE_NAMES.get(engine, engine), "what": REFUSED_WORDS[code], "gpu": gpu_type,
            "architecture": gpu.label, "why": WHY_WORDS[code]}
        for code in refused
    )


def choice_words(precision: int, kv_bits: int, half: bool) -> str:
    """"16-bit weights with a 16-bit KV cache (--dtype half)"."""
    words = gettext("%(precision)s-bit weights with a %(kv)s-bit KV cache") % {"precision": precision,
                                                                                "kv": kv_bits}
    return words + " (--dtype half)" if half else words


def alternative_words(choice: tuple[int, int] | None, half: bool = False, commands: int = 1) -> str:
    """What the answer offers instead: the choice that runs there and fits (its `commands` below), or that
    nothing does."""
    if choice is None:
        return gettext("Nothing that runs on this GPU fits here at the asked context and requests.")
    return ngettext("What runs there and fits instead: %(choice)s, started by the command below.",
                    "What runs there and fits instead: %(choice)s, started by the commands below.",
                    commands) % {"choice": choice_words(*choice, half)}


@dataclass(frozen=True)
class RunnableAlternative:
    """The asked query at a precision and KV cache that run on the machine's GPU and fit it, with what it
    holds and its command (None where the catalog names no checkpoint)."""

    precision: int
    kv_bits: int
    half: bool
    command: str | None
    max_requests_at_context: int
    max_context_at_requests: int

    def to_dict(self) -> dict[str, object]:
        return {"precision": self.precision, "kv_cache_bits": self.kv_bits, "command": self.command,
                "max_requests_at_context": self.max_requests_at_context,
                "max_context_at_requests": self.max_context_at_requests}
