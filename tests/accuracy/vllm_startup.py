"""vLLM's budget held against the engine's own start-up logs (ACCURACY.md, "Serving under vLLM").

Each row of `catalog/data/reference/vllm_startup_logs.csv` is a published start-up of vLLM: the model,
GPU, parallel sizes and settings, and what the engine logged (weights, activation peak, memory outside
PyTorch, the KV cache in GiB and in tokens). Each is predicted from the row's settings alone, the way
`/api/v1/capacity` answers them. The rule every row must meet:

- the pool in tokens within −15 % / +5 % of the logged pool (never promising much more than the engine
  gives), and the weights within 5 %;
- where the engine failed to start, the prediction says it does not fit.

Pure Python: no torch, no database.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

from catalog.data.language_models import LANGUAGE_MODELS
from sizing.architectures import architecture_from_dict
from sizing.calculators.vllm import VllmBudget, VllmSettings, vllm_budget
from sizing.calculators.vllm_interconnect import interconnect_of_gpu
from sizing.calculators.vllm_versions import VllmVersion, parse_version
from sizing.specs import LanguageModelSpec
from sizing.units import GIB

ROOT = Path(__file__).resolve().parents[2]
CSV_PATH = ROOT / "catalog" / "data" / "reference" / "vllm_startup_logs.csv"
POOL_LOW = Fraction(-15, 100)
POOL_HIGH = Fraction(5, 100)
WEIGHTS_TOLERANCE = Fraction(5, 100)
PRECISION = {"bf16": 16, "fp16": 16, "fp8": 8, "int4": 4}
KV_BITS = {"bf16": 16, "fp16": 16, "auto": 16, "fp8": 8}
LANGUAGE = {row["slug"]: row for row in LANGUAGE_MODELS}


def language_spec(slug: str) -> LanguageModelSpec:
    """The catalog's shipped row as the sizing engine reads it (architecture included)."""
    row = LANGUAGE[slug]
    return LanguageModelSpec(
        slug=slug, name=row["name"], parameters=row["parameters"], layers=row["layers"],
        attention_heads=row["attention_heads"], kv_heads=row["kv_heads"], head_dim=row["head_dim"],
        hidden_size=row["hidden_size"], intermediate_size=row["intermediate_size"],
        vocab_size=row["vocab_size"], max_context=row["max_context"],
        tied_embeddings=row.get("tied_embeddings", False),
        architecture=architecture_from_dict(row.get("architecture")) if row.get("architecture") else None,
        hf_id=row.get("hf_id") or None, trust_remote_code=row.get("trust_remote_code", False),
    )


def _gib_bytes(text: str) -> int:
    return int(Decimal(text) * GIB)


@dataclass(frozen=True)
class StartupLog:
    case_id: str
    version: str
    model_slug: str
    precision: int
    kv_bits: int
    gpu: str
    gpu_total_bytes: int
    tensor_parallel: int
    pipeline_parallel: int
    utilization: Fraction
    max_model_len: int
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    kv_cache_bytes: int
    kv_cache_tokens: int
    max_concurrency: Decimal | None
    source_url: str

    @property
    def started(self) -> bool:
        return self.kv_cache_tokens > 0

    @property
    def engine_version(self) -> VllmVersion:
        """The release the log names; where it gives only a lower bound ("not stated (>=0.10.2, 2025)"),
        that bound, whose family of budget rules the log's year keeps."""
        found = re.search(r"\d+\.\d+(?:\.\d+)?", self.version)
        return parse_version(found.group(0) if found else None)

    def settings(self) -> VllmSettings:
        return VllmSettings(
            version=self.engine_version,
            gpu_memory_bytes=self.gpu_total_bytes, tensor_parallel=self.tensor_parallel,
            pipeline_parallel=self.pipeline_parallel, gpu_memory_utilization=self.utilization,
            max_model_len=self.max_model_len, max_num_seqs=self.max_num_seqs,
            interconnect=interconnect_of_gpu(self.gpu),  # as the what-if takes a named GPU type's
            **({"max_num_batched_tokens": self.max_num_batched_tokens} if self.max_num_batched_tokens else {}),
        )

    def predict(self) -> VllmBudget:
        return vllm_budget(language_spec(self.model_slug), self.precision, self.kv_bits, self.settings())


def load(path: Path = CSV_PATH) -> list[StartupLog]:
    rows = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            rows.append(StartupLog(
                case_id=row["case_id"], version=row["engine_version"], model_slug=row["model_slug"],
                precision=PRECISION[row["quantization"]], kv_bits=KV_BITS[row["kv_cache_dtype"]],
                gpu=row["gpu"], gpu_total_bytes=_gib_bytes(row["gpu_total_gib"]),
                tensor_parallel=int(row["tensor_parallel"]), pipeline_parallel=int(row["pipeline_parallel"]),
                utilization=Fraction(Decimal(row["gpu_memory_utilization"])),
                max_model_len=int(row["max_model_len"]),
                max_num_seqs=int(row["max_num_seqs"]) if row["max_num_seqs"] else None,
                max_num_batched_tokens=int(row["max_num_batched_tokens"]) if row["max_num_batched_tokens"] else None,
                weights_bytes=_gib_bytes(row["weights_gib"]), activation_bytes=_gib_bytes(row["activation_peak_gib"]),
                non_torch_bytes=_gib_bytes(row["non_torch_gib"]), kv_cache_bytes=_gib_bytes(row["kv_cache_gib"]),
                kv_cache_tokens=int(row["kv_cache_tokens"]),
                max_concurrency=Decimal(row["max_concurrency"]) if row["max_concurrency"] else None,
                source_url=row["source_url"],
            ))
    return rows


@dataclass(frozen=True)
class Verdict:
    log: StartupLog
    budget: VllmBudget

    @property
    def fits(self) -> bool:
        return self.budget.fit(self.log.max_model_len, 1)[0]

    @property
    def reason(self) -> str | None:
        return self.budget.fit(self.log.max_model_len, 1)[1]

    @property
    def pool_error(self) -> Fraction | None:
        if not self.log.started:
            return None
        return Fraction(self.budget.kv_cache_tokens - self.log.kv_cache_tokens, self.log.kv_cache_tokens)

    @property
    def weights_error(self) -> Fraction:
        return Fraction(self.budget.weights.bytes - self.log.weights_bytes, self.log.weights_bytes)

    @property
    def holds(self) -> bool:
        if abs(self.weights_error) > WEIGHTS_TOLERANCE:
            return False
        if not self.log.started:
            return not self.fits
        return self.fits and POOL_LOW <= self.pool_error <= POOL_HIGH


def verdicts(rows: list[StartupLog] | None = None) -> list[Verdict]:
    return [Verdict(row, row.predict()) for row in (rows if rows is not None else load())]


def _gib(n_bytes: int) -> str:
    value = (Decimal(n_bytes) / Decimal(GIB)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{value:,}"


def _percent(value: Fraction | None) -> str:
    if value is None:
        return "—"
    number = (Decimal(value.numerator) / Decimal(value.denominator) * 100).quantize(
        Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{number:+}%"


def _concurrency(verdict: Verdict) -> str:
    if not verdict.log.started:
        return "—"
    predicted = verdict.budget.max_concurrency(verdict.log.max_model_len)
    value = (Decimal(predicted.numerator) / Decimal(predicted.denominator)).quantize(
        Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{verdict.log.max_concurrency} / {value}"


def table(results: list[Verdict]) -> str:
    lines = [
        "| Case (vLLM) | Weights GiB logged / ours | Activation GiB | Outside PyTorch GiB | KV cache GiB | "
        "Pool tokens logged / ours | Pool | Concurrency at max_model_len | Holds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for verdict in results:
        log, budget = verdict.log, verdict.budget
        label = (f"`{log.case_id}` ({log.version}; {log.model_slug}, TP {log.tensor_parallel}, "
                 f"{log.max_model_len:,} tokens)")
        pool = (f"{log.kv_cache_tokens:,} / {budget.kv_cache_tokens:,}" if log.started
                else f"failed / {'fits' if verdict.fits else 'does not fit'}")
        lines.append(
            f"| {label} | {_gib(log.weights_bytes)} / {_gib(budget.weights.bytes)} | "
            f"{_gib(log.activation_bytes)} / {_gib(budget.activation.bytes)} | "
            f"{_gib(log.non_torch_bytes)} / {_gib(budget.non_torch.bytes)} | "
            f"{_gib(log.kv_cache_bytes)} / {_gib(budget.kv_cache_bytes)} | {pool} | "
            f"{_percent(verdict.pool_error)} | {_concurrency(verdict)} | {'yes' if verdict.holds else '**NO**'} |"
        )
    return "\n".join(lines)


def summary(results: list[Verdict]) -> str:
    held = sum(v.holds for v in results)
    errors = [v.pool_error for v in results if v.pool_error is not None]
    weights = [v.weights_error for v in results]
    return (f"**{held} of {len(results)} start-up logs hold the rule.** The predicted pool runs from "
            f"{_percent(min(errors))} to {_percent(max(errors))} of the logged one; the weights from "
            f"{_percent(min(weights))} to {_percent(max(weights))}; "
            f"{sum(not v.log.started for v in results)} failed start-up(s) predicted as not fitting: "
            f"{sum(not v.log.started and not v.fits for v in results)}.")
