"""Serving a language model under SGLang (`python -m sglang.launch_server`): its static memory pool.

SGLang measures the memory free on each GPU once its CUDA context (and, under tensor parallelism,
NCCL's communicators) exist, loads the weights, and gives the token pool what `--mem-fraction-static`
of that free memory leaves after the weights (`ModelRunner.profile_max_num_token` in
sglang/srt/model_executor/model_runner.py):

    rest = free after the weights − free before them × (1 − mem_fraction_static)
    max_total_num_tokens = rest ÷ cell_size

so the weights and the pool together take mem_fraction_static × the memory free at start, and the
activations of a prefill chunk and the CUDA graphs live in what is left (1 − mem_fraction_static).
`cell_size` is one token's KV over every layer on one GPU: 2 (K and V) × KV heads per GPU × head_dim ×
layers × the cache's bytes (2 in bf16, 1 for `--kv-cache-dtype fp8_e5m2`); a KV head is replicated
where there are fewer of them than GPUs (`get_num_kv_heads`: max(1, heads ÷ tp)). MLA models cache one
latent per token and layer, (kv_lora_rank + qk_rope_head_dim) values, on every GPU of the group. The
pool holds tokens one by one (page size 1), shared by all running requests; a request of
`--context-length` tokens needs that many of them.

Sliding-window layers are counted as full ones (SGLang's hybrid SWA pool, where a model has it, holds
more tokens than this: never fewer). Linear-attention layers keep a recurrent state in a pool of its own
(`MambaPool`), which is not sized here: such models are refused.

The default `--mem-fraction-static` follows `ServerArgs._handle_gpu_memory_settings`
(sglang/srt/server_args.py, since sgl-project/sglang PR #10975, October 2025; SGLang 0.5.4 and later):
from the GPU's memory as nvidia-smi reports it (MiB), a chunked-prefill size and a CUDA-graph batch size
per memory class, reserved = 512 + max(chunked_prefill_size, 2048) × 1.5 + cuda_graph_max_bs × 2 +
tp ÷ 8 × 1024 MiB, at least 10 GiB on GPUs above 60 GiB, and mem_fraction_static = round((memory −
reserved) ÷ memory, 3). Releases before it used 0.88 at tp 1, 0.87 at tp 2, 0.85 at tp 4, 0.81 at tp 8
and 0.79 at tp 16, whatever the GPU.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

from .. import nouns
from ..architectures import LINEAR, PLAIN
from ..breakdown import Item
from ..errors import SizingError
from ..i18n import gettext
from ..limits import MAX_CONTEXT, MAX_GPU_MEMORY_GIB, MAX_PARALLEL
from ..specs import LanguageModelSpec
from ..units import GIB, MIB, fmt_gib, fmt_int
from .checks import check_context_limit, check_count, model_value
from .vllm import (
    CUDA_CONTEXT_BYTES,
    CUDA_CONTEXT_SPLIT_BYTES,
    DRIVER_RESERVED_BYTES,
    ONLINE_FP8,
    model_flags,
    plain_number,
)
from .vllm import (
    loaded_bytes as vllm_loaded_bytes,
)
from .vllm_loading import rotary_caches

SGLANG_VERSION = "0.5"  # the release family whose defaults and accounting these formulas follow
PRECISIONS = (16, 8)  # bf16, or FP8 (--quantization fp8, or an FP8 checkpoint as stored)
MAX_RUNNING_REQUESTS = 4096  # SGLang's own ceiling on its request slots (max_num_reqs)
KV_CACHE_DTYPE = {16: None, 8: "fp8_e5m2"}
# SGLang's online FP8 (--quantization fp8): one byte per linear weight with a float32 scale per tensor;
# the embeddings and the output head stay 16-bit, as under vLLM.
# The rotary embeddings' cos/sin caches stay float32 on CUDA (`weights_item`).
SGLANG_ROTARY_CACHE_BYTES = 4
SGLANG_FP8 = replace(ONLINE_FP8, key="fp8-online-sglang", source="SGLang --quantization fp8")
# The default mem_fraction_static's memory classes (MiB as nvidia-smi reports them): below each bound,
# (chunked_prefill_size, cuda_graph_max_bs below tp 4, cuda_graph_max_bs from tp 4).
MEMORY_CLASSES = (
    (20 * 1024, 2048, 8, 8),
    (35 * 1024, 2048, 24, 80),
    (60 * 1024, 4096, 32, 160),
    (90 * 1024, 8192, 256, 512),
    (160 * 1024, 8192, 256, 512),
)
LARGEST_CLASS = (16384, 512, 512)
RESERVED_FLOOR_FROM_MIB = 60 * 1024
RESERVED_FLOOR_MIB = 10 * 1024


def default_mem_fraction_static(gpu_memory_bytes: int, tensor_parallel: int) -> Fraction:
    """SGLang's mem_fraction_static when none is given, for one GPU of `gpu_memory_bytes` as CUDA reports
    it (SGLang reads nvidia-smi's total: CUDA's figure and what the driver keeps)."""
    memory = Fraction(gpu_memory_bytes + DRIVER_RESERVED_BYTES, MIB)
    chunk, graphs = LARGEST_CLASS[0], LARGEST_CLASS[1]
    for bound, prefill, small, large in MEMORY_CLASSES:
        if memory < bound:
            chunk, graphs = prefill, (small if tensor_parallel < 4 else large)
            break
    reserved = 512 + Fraction(max(chunk, 2048) * 3, 2) + graphs * 2 + Fraction(tensor_parallel * 1024, 8)
    if memory > RESERVED_FLOOR_FROM_MIB:
        reserved = max(reserved, Fraction(RESERVED_FLOOR_MIB))
    share = (memory - reserved) / memory
    rounded = (Decimal(share.numerator) / Decimal(share.denominator)).quantize(Decimal("0.001"),
                                                                                rounding=ROUND_HALF_EVEN)
    return Fraction(rounded)


@dataclass(frozen=True)
class SglangSettings:
    """The server's settings that change its memory: those `sglang.launch_server` takes as flags."""

    gpu_memory_bytes: int  # one GPU's total as CUDA reports it
    tensor_parallel: int = 1  # --tp
    mem_fraction_static: Fraction | None = None  # None: SGLang's default for the GPU and --tp
    context_length: int | None = None  # --context-length; None: the model's own maximum
    max_running_requests: int | None = None  # --max-running-requests; None: SGLang's own

    @property
    def fraction(self) -> Fraction:
        if self.mem_fraction_static is not None:
            return self.mem_fraction_static
        return default_mem_fraction_static(self.gpu_memory_bytes, self.tensor_parallel)


@dataclass(frozen=True)
class SglangPool:
    """One GPU under SGLang: the memory free at start, the weights, the token pool and the rest."""

    model: LanguageModelSpec
    settings: SglangSettings
    precision: int
    kv_bits: int
    fraction: Fraction  # mem_fraction_static as used (asked or SGLang's default)
    context_bytes: int  # CUDA context (and NCCL under tensor parallelism), before SGLang measures
    weights: Item
    quantization: str | None  # --quantization
    cell_bytes: int  # one token's KV over every layer on one GPU
    cell_words: str
    context_length: int

    @property
    def free_at_start_bytes(self) -> int:
        return max(self.settings.gpu_memory_bytes - self.context_bytes, 0)

    @property
    def static_bytes(self) -> int:
        """mem_fraction_static × the memory free at start: the weights and the token pool."""
        return math.floor(self.fraction * self.free_at_start_bytes)

    @property
    def kv_cache_tokens(self) -> int:
        """max_total_num_tokens, as SGLang logs it."""
        rest = self.static_bytes - self.weights.bytes
        return max(rest // self.cell_bytes, 0)

    @property
    def kv_cache_bytes(self) -> int:
        return self.kv_cache_tokens * self.cell_bytes

    @property
    def rest_bytes(self) -> int:
        """What mem_fraction_static leaves: activations, CUDA graphs, the request slots."""
        return self.free_at_start_bytes - self.static_bytes

    @property
    def requests_at_once(self) -> int:
        """Requests of the whole context the pool holds at once (within --max-running-requests)."""
        whole = self.kv_cache_tokens // self.context_length
        limit = self.settings.max_running_requests
        return min(whole, limit) if limit is not None else whole

    def fit(self) -> tuple[bool, str | None]:
        """Whether SGLang starts and serves one request of --context-length, with the reason when not."""
        if self.kv_cache_tokens < 1:
            return False, gettext(
                "The weights (%(weights)s) leave nothing of %(static)s (mem_fraction_static %(fraction)s × "
                "the %(free)s free at start) for the token pool: SGLang stops with \"Not enough memory\"."
            ) % {"weights": fmt_gib(self.weights.bytes), "static": fmt_gib(self.static_bytes),
                 "fraction": plain_number(self.fraction), "free": fmt_gib(self.free_at_start_bytes)}
        if self.kv_cache_tokens < self.context_length:
            return False, gettext(
                "The token pool (%(tokens)s) cannot hold one request of --context-length %(context)s: "
                "SGLang would cut every prompt to the pool's size."
            ) % {"tokens": nouns.tokens(self.kv_cache_tokens), "context": fmt_int(self.context_length)}
        return True, None

    def items(self) -> tuple[Item, ...]:
        return (
            self.weights,
            Item(name=gettext("Token pool (KV cache)"),
                 formula=gettext("(%(static)s − the weights) ÷ %(cell)s bytes per token (%(words)s) = "
                                 "%(tokens)s") % {
                     "static": fmt_gib(self.static_bytes), "cell": fmt_int(self.cell_bytes),
                     "words": self.cell_words, "tokens": nouns.tokens(self.kv_cache_tokens)},
                 bytes=self.kv_cache_bytes, per_gpu=True),
            Item(name=gettext("Activations and CUDA graphs (outside the static pool)"),
                 formula=gettext("(1 − %(fraction)s) × %(free)s free at start") % {
                     "fraction": plain_number(self.fraction), "free": fmt_gib(self.free_at_start_bytes)},
                 bytes=self.rest_bytes, per_gpu=True),
            Item(name=gettext("CUDA context (before SGLang measures)"),
                 formula=gettext("%(bytes)s per GPU%(split)s") % {
                     "bytes": fmt_gib(self.context_bytes),
                     "split": gettext(", with NCCL's communicators") if self.settings.tensor_parallel > 1
                     else ""},
                 bytes=self.context_bytes, per_gpu=True),
        )

    def command(self, hf_id: str, dtype_flags: tuple[str, ...] = ()) -> str:
        """`python -m sglang.launch_server` with the flags this pool was sized for (`--dtype half` below
        compute capability 8.0: `sizing.engine_support.Support.dtype_flags`)."""
        settings = self.settings
        parts = ["python -m sglang.launch_server", "--model-path", hf_id, *model_flags(self.model),
                 *dtype_flags, f"--tp {settings.tensor_parallel}", f"--context-length {self.context_length}",
                 f"--mem-fraction-static {plain_number(self.fraction)}"]
        if settings.max_running_requests is not None:
            parts.append(f"--max-running-requests {settings.max_running_requests}")
        if self.quantization:
            parts.append(f"--quantization {self.quantization}")
        if KV_CACHE_DTYPE[self.kv_bits]:
            parts.append(f"--kv-cache-dtype {KV_CACHE_DTYPE[self.kv_bits]}")
        scaling = yarn_override(self.model, self.context_length)
        if scaling is not None:
            parts.append(f"--json-model-override-args '{scaling}'")
        return " ".join(parts)


def yarn_override(model: LanguageModelSpec, tokens: int) -> str | None:
    """The card's YaRN scaling as SGLang is told it (`--json-model-override-args`), where `tokens` are
    beyond the model's own maximum; None otherwise."""
    yarn = model.architecture.yarn if model.architecture is not None else None
    if yarn is None or model.max_context is None or tokens <= model.max_context:
        return None
    return json.dumps({"rope_scaling": {
        "rope_type": "yarn", "factor": float(yarn.factor),
        "original_max_position_embeddings": yarn.original_context,
    }}, separators=(", ", ": "))


# --- checks ------------------------------------------------------------------------------------------

def check_settings(model: LanguageModelSpec, precision: int, kv_bits: int, settings: SglangSettings) -> None:
    """Refuse what SGLang refuses at start-up, or what is not sized here, each naming its field."""
    if precision not in PRECISIONS:
        raise SizingError("precision", gettext(
            "SGLang is sized with 16-bit (bf16) or 8-bit (fp8) weights: precision 16 or 8."))
    if kv_bits not in KV_CACHE_DTYPE:
        raise SizingError("kv_cache", gettext(
            "SGLang caches K and V in 16 bits or in fp8: kv_cache 16 or 8."))
    tp = check_count(settings.tensor_parallel, "tensor_parallel", gettext("The tensor-parallel size"),
                     MAX_PARALLEL)
    heads = model_value(model, "attention_heads")
    if heads % tp:
        raise SizingError("tensor_parallel", gettext(
            "%(model)s has %(heads)s attention heads: the tensor-parallel size must divide them."
        ) % {"model": model.name, "heads": fmt_int(heads)})
    arch = model.architecture or PLAIN
    if arch.mla is None:
        kv_heads = model_value(model, "kv_heads")
        if (kv_heads % tp) if tp <= kv_heads else (tp % kv_heads):
            raise SizingError("tensor_parallel", gettext(
                "%(model)s has %(heads)s KV heads: SGLang splits them over the tensor-parallel GPUs, or "
                "replicates them, only where one number divides the other."
            ) % {"model": model.name, "heads": fmt_int(kv_heads)})
    if arch.linear_attention is not None and arch.layer_counts(model_value(model, "layers"))[LINEAR]:
        raise SizingError("model", gettext(
            "%(model)s has linear-attention layers, whose state SGLang keeps in a pool of its own; the "
            "what-if does not size that pool under SGLang yet."
        ) % {"model": model.name})
    fraction = settings.mem_fraction_static
    if fraction is not None and (not isinstance(fraction, Fraction) or not 0 < fraction < 1):
        raise SizingError("mem_fraction_static", gettext(
            "mem_fraction_static must be more than 0 and less than 1."))
    check_count(settings.gpu_memory_bytes, "gpu_memory_gib", gettext("The GPU memory"),
                MAX_GPU_MEMORY_GIB * GIB)
    if settings.max_running_requests is not None:
        check_count(settings.max_running_requests, "parallel", gettext("--max-running-requests"),
                    MAX_RUNNING_REQUESTS)
    if settings.context_length is not None:
        check_count(settings.context_length, "max_model_len", gettext("The context length"), MAX_CONTEXT)
        check_context_limit(model, settings.context_length, "max_model_len")


# --- the items -----------------------------------------------------------------------------------------

def loaded_bytes(model: LanguageModelSpec, precision: int) -> tuple[int, str, str | None]:
    """The whole model's weights as SGLang loads them: vLLM's rule with SGLang's own online FP8 (no
    in-flight 4-bit)."""
    return vllm_loaded_bytes(model, precision, {8: (SGLANG_FP8, "fp8")})


def weights_item(
    model: LanguageModelSpec, precision: int, tp: int, context_length: int | None = None
) -> tuple[Item, str | None]:
    """The weights on one GPU at --tp `tp`, with what "Load weight end … mem usage" counts besides them:
    the rotary embeddings' cos/sin caches, whole on every GPU, built as vLLM builds them
    (`vllm_loading.rotary_caches`: SGLang's rotary embeddings, `get_rope` and its `_ROPE_DICT`, follow
    vLLM's) but kept in float32 on CUDA ("cache needs to be in FP32 for numerical stability",
    sglang/srt/layers/rotary_embedding.py, `RotaryEmbedding.__init__` casts to the model's dtype only off
    CUDA). YaRN's longer cache where `context_length` passes the model's own maximum (`yarn_override`)."""
    total, formula, flag = loaded_bytes(model, precision)
    if tp > 1:
        formula += gettext(" ÷ %(tp)s tensor-parallel GPUs") % {"tp": tp}
    yarn_on = context_length is not None and yarn_override(model, context_length) is not None
    rotary = rotary_caches(model, yarn_on, SGLANG_ROTARY_CACHE_BYTES)
    return Item(name=gettext("Model weights as loaded"), formula=formula + " " + rotary.formula(),
                bytes=math.ceil(total / tp) + rotary.bytes, per_gpu=True), flag


def cell(model: LanguageModelSpec, kv_bits: int, tp: int) -> tuple[int, str]:
    """One token's KV over every layer on one GPU, with its formula."""
    arch = model.architecture or PLAIN
    layers = model_value(model, "layers")
    kv_bytes = kv_bits // 8
    if arch.mla is not None:
        return arch.mla.latent_width * layers * kv_bytes, gettext(
            "MLA latent (%(rank)s + %(rope)s) × %(layers)s × %(bytes)s bytes") % {
            "rank": arch.mla.kv_lora_rank, "rope": arch.mla.qk_rope_head_dim, "layers": nouns.layers(layers),
            "bytes": kv_bytes}
    heads = math.ceil(model_value(model, "kv_heads") / tp)  # replicated below one head per GPU
    head_dim = model_value(model, "head_dim")
    return 2 * heads * head_dim * layers * kv_bytes, gettext(
        "2 × %(heads)s KV heads per GPU × %(head_dim)s × %(layers)s × %(bytes)s bytes") % {
        "heads": heads, "head_dim": head_dim, "layers": nouns.layers(layers), "bytes": kv_bytes}


def sglang_pool(model: LanguageModelSpec, precision: int, kv_bits: int,
                settings: SglangSettings) -> SglangPool:
    check_settings(model, precision, kv_bits, settings)
    tp = settings.tensor_parallel
    context_length = settings.context_length or model_value(model, "max_context")
    weights, flag = weights_item(model, precision, tp, context_length)
    cell_bytes, cell_words = cell(model, kv_bits, tp)
    return SglangPool(
        model=model, settings=settings, precision=precision, kv_bits=kv_bits, fraction=settings.fraction,
        context_bytes=CUDA_CONTEXT_SPLIT_BYTES if tp > 1 else CUDA_CONTEXT_BYTES,
        weights=weights, quantization=flag, cell_bytes=cell_bytes, cell_words=cell_words,
        context_length=context_length,
    )


def fraction_words(pool: SglangPool) -> str:
    """mem_fraction_static in words: asked, or SGLang's default for this GPU and --tp."""
    if pool.settings.mem_fraction_static is not None:
        return plain_number(pool.fraction)
    return gettext("%(fraction)s (SGLang's default for this GPU at --tp %(tp)s)") % {
        "fraction": plain_number(pool.fraction), "tp": pool.settings.tensor_parallel}


# --- the wizard's fraction (`sizing.calculators.sglang_inference`) ----------------------------------

# SGLang's default mem_fraction_static by tensor-parallel size before 0.5.4: (from tp, fraction).
FRACTION_BY_TP = ((16, Fraction(79, 100)), (8, Fraction(81, 100)), (4, Fraction(85, 100)),
                  (2, Fraction(87, 100)), (1, Fraction(88, 100)))


def wizard_fraction(tensor_parallel: int) -> Fraction:
    """The mem_fraction_static the wizard sizes and writes for `--tp tensor_parallel`."""
    return next(fraction for least, fraction in FRACTION_BY_TP if tensor_parallel >= least)


def wizard_settings(gpu_memory_bytes: int, tensor_parallel: int, context: int,
                    requests: int) -> SglangSettings:
    return SglangSettings(gpu_memory_bytes=gpu_memory_bytes, tensor_parallel=tensor_parallel,
                          mem_fraction_static=wizard_fraction(tensor_parallel), context_length=context,
                          max_running_requests=requests)
