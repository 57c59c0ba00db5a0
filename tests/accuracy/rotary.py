"""The weights as vLLM logs them loaded, rotary caches included (ACCURACY.md, "What 'Model loading took'
counts"): published start-ups not handed over, each predicted from its settings alone as
`/api/v1/capacity` answers them (`sizing.calculators.vllm_loading.rotary_caches`).

Pure Python: no torch, no database.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from sizing.calculators.vllm import VllmBudget, VllmSettings, vllm_budget
from sizing.units import GIB

from .vllm_startup import language_spec

H100_CUDA_GIB = Decimal("79.19")  # the weights do not depend on the GPU's size; a GPU is needed to ask
WEIGHTS_TOLERANCE = Fraction(3, 100)  # issue #43: weights within ±3 % of the logged model buffer


@dataclass(frozen=True)
class LoadedWeights:
    """A published "Model loading took … GiB" line with the settings it was logged under."""

    case: str
    model_slug: str
    tensor_parallel: int
    weights_gib: Decimal
    source: str
    note: str

    def predict(self) -> VllmBudget:
        return vllm_budget(language_spec(self.model_slug), 16, 16, VllmSettings(
            gpu_memory_bytes=int(H100_CUDA_GIB * GIB), tensor_parallel=self.tensor_parallel,
            max_model_len=8192,
        ))

    def error(self) -> Fraction:
        ours = self.predict().weights.bytes
        logged = Fraction(self.weights_gib) * GIB
        return Fraction(ours) / logged - 1

    @property
    def holds(self) -> bool:
        return abs(self.error()) <= WEIGHTS_TOLERANCE


LOGS = (
    LoadedWeights(
        "Gemma 3 4B (google/gemma-3-4b-it), bf16", "gemma-3-4b", 1, Decimal("8.58"),
        "vLLM pull request #21489 (its start-up log)",
        "the checkpoint is 8.01 GiB; the global layers' linear RoPE ×8 cache (1,048,576 × 256 × 2 bytes, "
        "0.50 GiB) and the sliding layers' own (131,072 × 256 × 2 bytes, 0.06 GiB) are the rest",
    ),
    LoadedWeights(
        "Llama 4 Scout 17B-16E Instruct, bf16", "llama-4-scout", 4, Decimal("53.12"),
        "published start-up log (issue #43, not handed over)",
        "the checkpoint over four GPUs is 50.59 GiB; its 10,485,760-position cache (× 128 × 2 bytes, "
        "2.50 GiB) is whole on every GPU",
    ),
)


def _gib(n_bytes: int) -> str:
    value = (Decimal(n_bytes) / Decimal(GIB)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{value:,}"


def _percent(value: Fraction) -> str:
    number = (Decimal(value.numerator) / Decimal(value.denominator) * 100).quantize(
        Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{number:+}%"


def table() -> str:
    lines = [
        "| Case | Weights GiB logged / ours | Error | Holds (±3 %) | Source and note |",
        "|---|---|---|---|---|",
    ]
    for log in LOGS:
        budget = log.predict()
        lines.append(
            f"| {log.case}, TP {log.tensor_parallel} | {log.weights_gib} / {_gib(budget.weights.bytes)} | "
            f"{_percent(log.error())} | {'yes' if log.holds else '**NO**'} | {log.source}: {log.note} |"
        )
    return "\n".join(lines)
