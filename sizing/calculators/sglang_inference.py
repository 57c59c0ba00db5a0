"""Inference under SGLang as the wizard sizes it (`engine=sglang`): SGLang's static pool
(`sizing.calculators.sglang`) at a `--mem-fraction-static` that depends on the tensor-parallel size only,
so a machine fits when its GPUs hold the asked requests' tokens in the pool, and every row's command
writes that fraction.

SGLang's own default since 0.5.4 depends on each GPU's memory class, which the wizard does not know
before it has a machine: it sizes at SGLang's earlier default, by `--tp` alone (0.88 at 1, 0.87 from 2,
0.85 from 4, 0.81 from 8, 0.79 from 16; `ServerArgs.__post_init__` before sgl-project/sglang PR #10975),
and sets it in the command, so the row starts as sized on any release. On one GPU:

    the pool's need = the weights ÷ tp + requests × context × one token's KV over every layer per GPU
    the GPU's memory ≥ ⌈need ÷ mem_fraction_static⌉ + the CUDA context (+ NCCL's communicators under
    tensor parallelism) + what the driver keeps from CUDA

which is exactly when `SglangPool.kv_cache_tokens` ≥ requests × context on that GPU.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from .. import nouns
from ..breakdown import Breakdown, Item
from ..capacity import Capacity
from ..errors import SizingError
from ..i18n import gettext
from ..limits import MAX_GPU_MEMORY_GIB
from ..specs import LanguageModelSpec
from ..units import GIB, fmt_gib, fmt_int
from .checks import check_inference_inputs, renamed
from .sglang import (
    FRACTION_BY_TP,
    SGLANG_VERSION,
    cell,
    check_settings,
    weights_item,
    wizard_fraction,
    wizard_settings,
)
from .vllm import CUDA_CONTEXT_BYTES, CUDA_CONTEXT_SPLIT_BYTES, DRIVER_RESERVED_BYTES, plain_number

_ANY_GPU = MAX_GPU_MEMORY_GIB * GIB  # the settings' GPU memory only bounds the checks: no machine yet
# SGLang's fields as the wizard's query names them.
_WIZARD_FIELDS = {"max_model_len": "context", "parallel": "requests"}


@dataclass(frozen=True)
class SglangBreakdown(Breakdown):
    """Inference under SGLang: the need per GPU at --tp n (weights and KV heads divided, a KV head
    replicated below one per GPU) over the wizard's mem_fraction_static at n."""

    spec: LanguageModelSpec | None = None
    kv_bits: int = 16
    context: int = 0
    requests: int = 0

    def pool_need(self, gpus: int) -> tuple[int, int]:
        """(the weights on one GPU, the token pool's need on it) at --tp gpus."""
        spec, precision = cast(LanguageModelSpec, self.spec), cast(int, self.precision)
        weights, _flag = weights_item(spec, precision, gpus, self.context)
        cell_bytes, _words = cell(spec, self.kv_bits, gpus)
        return weights.bytes, self.requests * self.context * cell_bytes

    def can_split_over(self, gpus: int) -> bool:
        if gpus == 1:
            return True
        try:
            check_settings(cast(LanguageModelSpec, self.spec), cast(int, self.precision), self.kv_bits,
                           wizard_settings(_ANY_GPU, gpus, self.context, self.requests))
        except SizingError:  # the heads (or KV heads) do not split over this many GPUs
            return False
        return True

    def per_gpu_shares(self, gpus: int) -> tuple[tuple[str, int], ...]:
        weights, pool = self.pool_need(gpus)
        need = weights + pool
        context = CUDA_CONTEXT_SPLIT_BYTES if gpus > 1 else CUDA_CONTEXT_BYTES
        outside = math.ceil(need / wizard_fraction(gpus)) - need
        shares = (weights, pool, outside, context, DRIVER_RESERVED_BYTES)
        return tuple(zip([item.name for item in self.items], shares, strict=True))

    def bytes_per_gpu(self, gpus: int) -> int:
        self.check_gpu_count(gpus)
        return sum(share for _name, share in self.per_gpu_shares(gpus))


def estimate_sglang(model: LanguageModelSpec, precision: int, context: int, requests: int,
                    kv_bits: int = 16) -> SglangBreakdown:
    """SGLang's static pool on one GPU for `requests` requests of `context` tokens, item by item."""
    precision, context, requests, kv_bits = check_inference_inputs(
        model, precision, context, requests, kv_bits)
    with renamed(_WIZARD_FIELDS):
        check_settings(model, precision, kv_bits, wizard_settings(_ANY_GPU, 1, context, requests))
    fraction = wizard_fraction(1)
    weights, flag = weights_item(model, precision, 1, context)
    cell_bytes, cell_words = cell(model, kv_bits, 1)
    pool = requests * context * cell_bytes
    need = weights.bytes + pool
    items = (
        weights,
        Item(gettext("Token pool (KV cache)"),
             gettext("%(requests)s × %(context)s tokens × %(cell)s bytes per token (%(words)s)") % {
                 "requests": fmt_int(requests), "context": fmt_int(context), "cell": fmt_int(cell_bytes),
                 "words": cell_words},
             pool, per_gpu=True),
        Item(gettext("Activations and CUDA graphs (outside the static pool)"),
             gettext("%(need)s ÷ mem_fraction_static %(fraction)s − %(need)s") % {
                 "need": fmt_gib(need), "fraction": plain_number(fraction)},
             math.ceil(need / fraction) - need, per_gpu=True),
        Item(gettext("CUDA context (before SGLang measures)"),
             gettext("%(bytes)s per GPU%(split)s") % {"bytes": fmt_gib(CUDA_CONTEXT_BYTES), "split": ""},
             CUDA_CONTEXT_BYTES, per_gpu=True),
        Item(gettext("Kept by the driver from CUDA"),
             gettext("%(reserved)s per GPU: a machine reports nvidia-smi's total, CUDA gives less") % {
                 "reserved": fmt_gib(DRIVER_RESERVED_BYTES)},
             DRIVER_RESERVED_BYTES, per_gpu=True),
    )
    assumptions = (
        gettext(
            "Sized as SGLang %(version)s starts: the weights and the token pool take mem_fraction_static of "
            "the memory free at start, %(fractions)s by --tp (SGLang's default before 0.5.4, set in each "
            "command); activations and CUDA graphs live in the rest."
        ) % {"version": SGLANG_VERSION, "fractions": ", ".join(
            f"{plain_number(fraction)} from {least}" for least, fraction in reversed(FRACTION_BY_TP))},
        gettext(
            "The token pool holds %(requests)s × %(context)s tokens (--context-length %(context)s, "
            "--max-running-requests %(requests)s)%(flag)s."
        ) % {"requests": fmt_int(requests), "context": fmt_int(context),
             "flag": gettext(", --quantization %(flag)s") % {"flag": flag} if flag else ""},
    )
    return SglangBreakdown(
        workload="inference",
        title=gettext(
            "%(model)s, inference under SGLang, %(precision)s-bit%(kv)s, %(tokens)s × %(requests)s") % {
            "model": model.name, "precision": precision,
            "kv": gettext(", fp8 KV cache") if kv_bits == 8 else "",
            "tokens": nouns.tokens(context), "requests": nouns.requests(requests)},
        items=items,
        assumptions=assumptions,
        precision=precision,
        splittable_over_heads=model.attention_heads,
        inputs={"model": model.slug, "model_name": model.name, "precision": precision, "context": context,
                "requests": requests, "kv_bits": kv_bits, "engine": "sglang",
                "engine_version": SGLANG_VERSION, "mem_fraction_static": float(fraction)},
        spec=model, kv_bits=kv_bits, context=context, requests=requests,
        capacity=Capacity(model, precision, kv_bits, context, requests, engine="sglang"),
    )
