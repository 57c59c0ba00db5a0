"""Published start-up logs that were not handed over, held to issue #43's tolerances (ACCURACY.md, "Logs not
handed over").

`catalog/data/reference/published_logs_not_handed.csv` holds start-ups of vLLM and SGLang found in public
logs after the handed set (`vllm_startup_logs.csv`, `engine_measurements.csv`) was fixed: each row with its
source, the lines its figures come from, the settings the log states and what the engine logged. A figure the
log does not state is left blank, never filled in. Each row is predicted from its settings alone, the way
`/api/v1/capacity` answers them. The rule (issue #43):

- the weights within ±3 % of the logged model buffer ("Model loading took", SGLang's "mem usage");
- the KV pool in tokens within 0.85–1.05× of the logged one;
- a start that failed is answered "does not start", with the reason.

Pure Python: no torch, no database.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

from sizing.calculators.sglang import SglangSettings, sglang_pool
from sizing.calculators.vllm import VllmSettings, vllm_budget
from sizing.calculators.vllm_versions import parse_version
from sizing.units import GIB

from .vllm_startup import language_spec

ROOT = Path(__file__).resolve().parents[2]
CSV_PATH = ROOT / "catalog" / "data" / "reference" / "published_logs_not_handed.csv"
WEIGHTS_TOLERANCE = Fraction(3, 100)
POOL_LOW, POOL_HIGH = Fraction(85, 100), Fraction(105, 100)
PRECISION = {"bf16": 16, "fp16": 16, "fp8": 8, "mxfp4": 4}
KV_BITS = {"bf16": 16, "fp16": 16, "fp8": 8}


def _gib(text: str) -> int | None:
    return int(Decimal(text) * GIB) if text else None


@dataclass(frozen=True)
class PublishedLog:
    case_id: str
    engine: str
    version: str
    model_slug: str
    precision: int
    kv_bits: int
    gpu: str
    gpu_total_bytes: int
    tensor_parallel: int
    utilization: Fraction
    max_model_len: int | None
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    weights_bytes: int | None  # None: not logged
    kv_cache_bytes: int | None
    kv_cache_tokens: int | None
    started: bool
    failure: str
    source_url: str
    source_lines: str

    @property
    def family(self) -> str:
        if self.engine != "vllm":
            return f"SGLang ({self.version})"
        return f"vLLM {self.version} (rules of {parse_version(self.version).family})"

    def predict(self) -> Prediction:
        model = language_spec(self.model_slug)
        if self.engine == "sglang":
            pool = sglang_pool(model, self.precision, self.kv_bits, SglangSettings(
                gpu_memory_bytes=self.gpu_total_bytes, tensor_parallel=self.tensor_parallel,
                mem_fraction_static=self.utilization, context_length=self.max_model_len,
            ))
            return Prediction(pool.weights.bytes, pool.kv_cache_tokens, True, None)
        budget = vllm_budget(model, self.precision, self.kv_bits, VllmSettings(
            version=parse_version(self.version), gpu_memory_bytes=self.gpu_total_bytes,
            tensor_parallel=self.tensor_parallel, gpu_memory_utilization=self.utilization,
            max_model_len=self.max_model_len, max_num_seqs=self.max_num_seqs,
            **({"max_num_batched_tokens": self.max_num_batched_tokens} if self.max_num_batched_tokens else {}),
        ))
        fits, reason = budget.fit(budget.max_model_len, 1)
        return Prediction(budget.weights.bytes, budget.kv_cache_tokens, fits, reason)


@dataclass(frozen=True)
class Prediction:
    weights_bytes: int
    kv_cache_tokens: int
    starts: bool
    reason: str | None  # why it does not start


def load(path: Path = CSV_PATH) -> list[PublishedLog]:
    with path.open(newline="", encoding="utf-8") as handle:
        return [PublishedLog(
            case_id=row["case_id"], engine=row["engine"], version=row["engine_version"],
            model_slug=row["model_slug"], precision=PRECISION[row["quantization"]],
            kv_bits=KV_BITS[row["kv_cache_dtype"]], gpu=row["gpu"], gpu_total_bytes=_gib(row["gpu_total_gib"]) or 0,
            tensor_parallel=int(row["tensor_parallel"]),
            utilization=Fraction(Decimal(row["gpu_memory_utilization"])),
            max_model_len=int(row["max_model_len"]) if row["max_model_len"] else None,
            max_num_seqs=int(row["max_num_seqs"]) if row["max_num_seqs"] else None,
            max_num_batched_tokens=int(row["max_num_batched_tokens"]) if row["max_num_batched_tokens"] else None,
            weights_bytes=_gib(row["weights_gib"]), kv_cache_bytes=_gib(row["kv_cache_gib"]),
            kv_cache_tokens=int(row["kv_cache_tokens"]) if row["kv_cache_tokens"] else None,
            started=row["started"] == "yes", failure=row["failure"], source_url=row["source_url"],
            source_lines=row["source_lines"],
        ) for row in csv.DictReader(handle)]


@dataclass(frozen=True)
class Verdict:
    log: PublishedLog
    ours: Prediction

    @property
    def weights_ratio(self) -> Fraction | None:
        if self.log.weights_bytes is None:
            return None
        return Fraction(self.ours.weights_bytes, self.log.weights_bytes)

    @property
    def pool_ratio(self) -> Fraction | None:
        if not self.log.started or not self.log.kv_cache_tokens:
            return None
        return Fraction(self.ours.kv_cache_tokens, self.log.kv_cache_tokens)

    @property
    def weights_hold(self) -> bool | None:
        ratio = self.weights_ratio
        return None if ratio is None else abs(ratio - 1) <= WEIGHTS_TOLERANCE

    @property
    def pool_holds(self) -> bool | None:
        ratio = self.pool_ratio
        return None if ratio is None else POOL_LOW <= ratio <= POOL_HIGH

    @property
    def start_holds(self) -> bool:
        """A logged start is answered "starts"; a failed one "does not start", with a reason."""
        if self.log.started:
            return self.ours.starts
        return not self.ours.starts and bool(self.ours.reason)

    @property
    def holds(self) -> bool:
        return self.weights_hold is not False and self.pool_holds is not False and self.start_holds


def verdicts(rows: list[PublishedLog] | None = None) -> list[Verdict]:
    return [Verdict(row, row.predict()) for row in (rows if rows is not None else load())]


def _ratio(value: Fraction | None) -> str:
    if value is None:
        return "—"
    return str((Decimal(value.numerator) / Decimal(value.denominator)).quantize(
        Decimal("0.001"), rounding=ROUND_HALF_UP))


def _gib_text(n_bytes: int | None) -> str:
    if n_bytes is None:
        return "not logged"
    return str((Decimal(n_bytes) / Decimal(GIB)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _mark(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "**NO**")


def _source(log: PublishedLog) -> str:
    found = re.search(r"https://\S+", log.source_url)
    if found and found.group(0) == log.source_url:
        return f"[log]({log.source_url})"
    return log.source_url


def table(results: list[Verdict]) -> str:
    lines = [
        "| Case | Engine (family) | GPU, TP, utilization, max_model_len | Weights GiB logged / ours (ratio) | "
        "Pool tokens logged / ours (ratio) | Started / ours | Weights ±3 % | Pool 0.85–1.05× | Start | Source |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for verdict in results:
        log, ours = verdict.log, verdict.ours
        length = f"{log.max_model_len:,}" if log.max_model_len else "model's own"
        pool = (f"{log.kv_cache_tokens:,} / {ours.kv_cache_tokens:,} ({_ratio(verdict.pool_ratio)})"
                if verdict.pool_ratio is not None else "—")
        started = "yes" if log.started else f"no ({log.failure})"
        answer = "starts" if ours.starts else f"does not start: {ours.reason}"
        lines.append(
            f"| `{log.case_id}` | {log.family} | {log.gpu}, TP {log.tensor_parallel}, "
            f"{float(log.utilization)}, {length} | {_gib_text(log.weights_bytes)} / {_gib_text(ours.weights_bytes)} "
            f"({_ratio(verdict.weights_ratio)}) | {pool} | {started} / {answer} | {_mark(verdict.weights_hold)} | "
            f"{_mark(verdict.pool_holds)} | {'yes' if verdict.start_holds else '**NO**'} | {_source(log)} |"
        )
    return "\n".join(lines)


def summary(results: list[Verdict]) -> str:
    weights = [v.weights_hold for v in results if v.weights_hold is not None]
    pools = [v.pool_holds for v in results if v.pool_holds is not None]
    failed = [v for v in results if not v.log.started]
    return (f"**{sum(v.holds for v in results)} of {len(results)} logs not handed over hold every figure.** "
            f"Weights within ±3 %: {sum(weights)} of {len(weights)}; the pool within 0.85–1.05×: "
            f"{sum(pools)} of {len(pools)}; failed starts answered \"does not start\" with the reason: "
            f"{sum(v.start_holds for v in failed)} of {len(failed)}; logged starts answered \"starts\": "
            f"{sum(v.start_holds for v in results if v.log.started)} of {len(results) - len(failed)}.")
