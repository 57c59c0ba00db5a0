"""MXFP4 experts as vLLM loads them (ACCURACY.md, "MXFP4 experts as loaded"): gpt-oss against published
start-ups on GPUs without native FP4, each predicted from its settings alone as `/api/v1/capacity`
answers them (`sizing.calculators.vllm_loading`).

Pure Python: no torch, no database.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from sizing.calculators.vllm import VllmBudget, VllmSettings, vllm_budget
from sizing.calculators.vllm_versions import parse_version
from sizing.engine_support import gpu_architecture
from sizing.units import GIB

from .vllm_startup import language_spec

H100_CUDA_GIB = Decimal("79.19")  # what CUDA reports of an H100 80GB (vLLM's logs)
HOPPER = gpu_architecture("hopper", "9.0")


@dataclass(frozen=True)
class PublishedStart:
    """A published start-up of gpt-oss under vLLM: its settings and what the engine did."""

    case: str
    version: str
    model_slug: str
    tensor_parallel: int
    utilization: Fraction
    max_model_len: int
    max_num_batched_tokens: int
    weights_gib: Decimal | None  # "Model loading took … GiB", where quoted
    started: bool | None  # None: the start is not judged here, only the weights
    source: str
    note: str
    release: str  # the release whose budget rules size it (`sizing.calculators.vllm_versions`)

    def predict(self) -> VllmBudget:
        return vllm_budget(language_spec(self.model_slug), 4, 16, VllmSettings(
            version=parse_version(self.release),
            gpu_memory_bytes=int(H100_CUDA_GIB * GIB), tensor_parallel=self.tensor_parallel,
            gpu_memory_utilization=self.utilization, max_model_len=self.max_model_len,
            max_num_batched_tokens=self.max_num_batched_tokens, gpu=HOPPER,
        ))


STARTS = (
    PublishedStart(
        "gpt-oss-20b over two Hopper/Ampere GPUs", "published log (issue #43, not handed over)", "gpt-oss-20b",
        2, Fraction(9, 10), 131_072, 8192, Decimal("7.01"), None,
        "issue #43", "the checkpoint halved is 6.41 GiB: Marlin's padding is the 0.6 GiB between",
        "0.19",  # not stated: weights only, sized by the 0.9.2 – 0.20 rules
    ),
    PublishedStart(
        "gpt-oss-120b on one H100, vLLM's defaults", "0.10.1", "gpt-oss-120b",
        1, Fraction(9, 10), 131_072, 8192, None, False,
        "https://github.com/vllm-project/vllm/issues/23278",
        "`vllm serve openai/gpt-oss-120b` with no other argument: max model len 131,072, fails to start",
        "0.10.1",
    ),
    PublishedStart(
        "gpt-oss-120b on one H100, a shorter prefill step", "not quoted (October 2025)", "gpt-oss-120b",
        1, Fraction(95, 100), 131_072, 1024, None, False,
        "https://github.com/vllm-project/vllm/issues/27508",
        "logged 1.71 GiB left for the KV cache and failed to start; ours leaves more: sized by the rules of "
        "0.11 (October 2025's release; the CUDA context and graphs outside the budget), its profiling step "
        "is larger than this budget's",
        "0.11",
    ),
    PublishedStart(
        "gpt-oss-120b on one H100, Triton backend", "0.14.1", "gpt-oss-120b",
        1, Fraction(97, 100), 5 * 1024, 8192, Decimal("64.38"), None,
        "https://github.com/vllm-project/vllm/issues/33155",
        "\"Using Triton backend\" (triton_kernels installed on Hopper): its swizzled layout pads less than "
        "Marlin; its start ran out of memory at utilization 0.97 outside the budget, so only its weights are "
        "compared",
        "0.14.1",
    ),
)


def _gib(n_bytes: int) -> str:
    value = (Decimal(n_bytes) / Decimal(GIB)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{value:,}"


def _percent(ours: int, logged: Decimal) -> str:
    number = ((Decimal(ours) / Decimal(GIB) / logged - 1) * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{number:+}%"


def table() -> str:
    lines = [
        "| Case | vLLM | Weights GiB logged / ours | KV cache left GiB (ours) | One request of max_model_len "
        "GiB | Started / ours | Source and note |",
        "|---|---|---|---|---|---|---|",
    ]
    for start in STARTS:
        budget = start.predict()
        fits, _reason = budget.fit(start.max_model_len, 1)
        logged = (f"{start.weights_gib} / {_gib(budget.weights.bytes)} "
                  f"({_percent(budget.weights.bytes, start.weights_gib)})"
                  if start.weights_gib is not None else f"— / {_gib(budget.weights.bytes)}")
        one = budget.layout.request_bytes(budget.max_model_len)
        if start.started is None:
            verdict = "— (weights only)"
        else:
            verdict = f"{'yes' if start.started else 'no'} / {'starts' if fits else 'does not start'}"
            verdict += "" if fits == start.started else " **NO**"
        lines.append(
            f"| {start.case} (TP {start.tensor_parallel}, utilization {float(start.utilization)}, "
            f"{start.max_model_len:,} tokens) | {start.version} | {logged} | "
            f"{_gib(max(budget.kv_cache_bytes, 0))} | {_gib(one)} | {verdict} | {start.source}: {start.note} |"
        )
    return "\n".join(lines)
