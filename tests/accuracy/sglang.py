"""SGLang's static pool held against its start-up logs (ACCURACY.md, "SGLang").

Reads the SGLang rows of `catalog/data/reference/engine_measurements.csv` (the model, the GPU's memory,
--tp, --mem-fraction-static, --context-length and what the server logged: the weights' "mem usage" and
max_total_num_tokens). Each is predicted from the row's settings alone, the way `/api/v1/capacity`
answers engine=sglang. The rule: the pool in tokens within 0.85–1.05× of the logged one, the weights
within ±3 %.

Pure Python: no torch, no database.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from sizing.calculators.sglang import SglangSettings, sglang_pool
from sizing.units import GIB
from tests.accuracy.gguf import rows
from tests.accuracy.vllm_startup import language_spec as spec

POOL_LOW, POOL_HIGH = 0.85, 1.05
WEIGHTS_TOLERANCE = 0.03


@dataclass(frozen=True)
class Verdict:
    case: str
    logged_weights: int
    weights: int
    logged_tokens: int
    tokens: int

    @property
    def weights_ratio(self) -> float:
        return self.weights / self.logged_weights

    @property
    def pool_ratio(self) -> float:
        return self.tokens / self.logged_tokens

    @property
    def holds(self) -> bool:
        return (abs(self.weights_ratio - 1) <= WEIGHTS_TOLERANCE
                and POOL_LOW <= self.pool_ratio <= POOL_HIGH)


def _number(text: str) -> str:
    return text.split()[0]


def verdicts() -> list[Verdict]:
    found = []
    for row in rows():
        if row["engine"] != "sglang":
            continue
        settings = SglangSettings(
            gpu_memory_bytes=int(Fraction(_number(row["gpu_total_gib"])) * GIB),
            tensor_parallel=int(row["tensor_parallel"] or 1),
            mem_fraction_static=Fraction(row["gpu_memory_utilization_or_mem_fraction"]),
            context_length=int(_number(row["context"])),
            max_running_requests=int(_number(row["parallel"])) if row["parallel"] else None,
        )
        kv_bits = 8 if "fp8" in row["kv_cache_type"].split(" (")[0] else 16
        pool = sglang_pool(spec(row["model_slug"]), 8 if row["quant_type"] == "fp8" else 16, kv_bits, settings)
        found.append(Verdict(row["case_id"], int(row["weights_bytes"]), pool.weights.bytes,
                             int(row["kv_tokens"]), pool.kv_cache_tokens))
    return found


def summary(found: list[Verdict]) -> str:
    return (f"{sum(verdict.holds for verdict in found)} of {len(found)} SGLang start-ups hold (the pool within "
            f"{POOL_LOW}–{POOL_HIGH}× of the logged max_total_num_tokens, the weights within "
            f"±{WEIGHTS_TOLERANCE:.0%}).")


def table(found: list[Verdict]) -> str:
    lines = ["| Case | Weights logged GiB | Ours GiB | Ratio | Pool logged (tokens) | Ours | Ratio | Holds |",
             "|---|---|---|---|---|---|---|---|"]
    for verdict in found:
        lines.append(
            f"| {verdict.case} | {verdict.logged_weights / GIB:.2f} | {verdict.weights / GIB:.2f} | "
            f"{verdict.weights_ratio:.3f} | {verdict.logged_tokens:,} | {verdict.tokens:,} | "
            f"{verdict.pool_ratio:.3f} | {'yes' if verdict.holds else '**no**'} |")
    return "\n".join(lines)
