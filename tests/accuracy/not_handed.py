"""Published start-up logs that were not handed over, held to issue #43's tolerances (ACCURACY.md, "Logs not
handed over").

`catalog/data/reference/published_logs_not_handed.csv` holds start-ups of vLLM, SGLang, llama.cpp and Ollama
found in public logs after the handed set (`vllm_startup_logs.csv`, `engine_measurements.csv`) was fixed: each row with its
source, the lines its figures come from, the settings the log states and what the engine logged. A figure the
log does not state is left blank, never filled in. Each row is predicted from its settings alone, the way
`/api/v1/capacity` answers them: what the GPUs of a split are connected by is the log's where it says it
(`interconnect`), else the GPU type's (`vllm_interconnect.interconnect_of_gpu`). The rule (issue #43):

- the weights within ±3 % of the logged model buffer ("Model loading took", SGLang's "mem usage");
- the KV pool in tokens within 0.85–1.05× of the logged one;
- a start that failed is answered "does not start", with the reason.

llama.cpp and Ollama rows (`GgufLog`) are predicted as `/api/v1/capacity?engine=llamacpp|ollama` answers them
(Ollama's context is per request, allocated once per slot; a llama.cpp build the log states is asked as
engine_version, which decides the logits the compute buffer is reserved for) and held to the same issue's rule
for GGUF engines:

- the file within ±3 % of the logged file size (llama.cpp's "file size", printed in GiB to two decimals: the
  rounding is added) and the weights on the GPU within ±3 % of the logged device model buffer;
- the KV cache within ±2 % of the logged KV buffer;
- the compute buffer, which the product sizes, shows and counts in whether a start fits, within ±3 % (the issue
  names no tolerance of its own for it; it is held like the other buffer the engine allocates).

Pure Python: no torch, no database.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

from sizing.calculators.llamacpp import LlamaCppSettings, llamacpp_need
from sizing.calculators.llamacpp_builds import (
    KV_POOL,
    NOT_GIVEN,
    OLLAMA_PATTERN,
    LlamaCppBuild,
    kv_layout,
    parse_build,
    parse_ollama_version,
)
from sizing.calculators.sglang import SglangSettings, sglang_pool
from sizing.calculators.vllm import VllmBudget, VllmSettings, vllm_budget
from sizing.calculators.vllm_interconnect import interconnect_of_gpu
from sizing.calculators.vllm_versions import parse_version
from sizing.units import GIB, MIB

from .vllm_startup import language_spec

ROOT = Path(__file__).resolve().parents[2]
CSV_PATH = ROOT / "catalog" / "data" / "reference" / "published_logs_not_handed.csv"
WEIGHTS_TOLERANCE = Fraction(3, 100)
POOL_LOW, POOL_HIGH = Fraction(85, 100), Fraction(105, 100)
PRECISION = {"bf16": 16, "fp16": 16, "fp8": 8, "mxfp4": 4}
KV_BITS = {"bf16": 16, "fp16": 16, "fp8": 8}
GGUF_ENGINES = ("llamacpp", "ollama")
KV_TOLERANCE = Fraction(2, 100)
COMPUTE_TOLERANCE = WEIGHTS_TOLERANCE
FILE_ROUNDING = Decimal("0.005")  # llama.cpp prints the file size in GiB to two decimals


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
    interconnect_stated: str = ""  # what the log says the GPUs are connected by; empty: not said

    @property
    def interconnect(self) -> str:
        """What the log says the GPUs are connected by, else what the what-if takes for the GPU type."""
        return self.interconnect_stated or interconnect_of_gpu(self.gpu)

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
        budget = self.budget()
        fits, reason = budget.fit(budget.max_model_len, 1)
        return Prediction(budget.weights.bytes, budget.kv_cache_tokens, fits, reason)

    def budget(self) -> VllmBudget:
        """vLLM's budget for the row's settings (a vLLM row), as `/api/v1/capacity` sizes them."""
        return vllm_budget(language_spec(self.model_slug), self.precision, self.kv_bits, VllmSettings(
            version=parse_version(self.version), gpu_memory_bytes=self.gpu_total_bytes,
            tensor_parallel=self.tensor_parallel, gpu_memory_utilization=self.utilization,
            max_model_len=self.max_model_len, max_num_seqs=self.max_num_seqs, interconnect=self.interconnect,
            **({"max_num_batched_tokens": self.max_num_batched_tokens} if self.max_num_batched_tokens else {}),
        ))


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
            source_lines=row["source_lines"], interconnect_stated=row["interconnect"],
        ) for row in csv.DictReader(handle) if row["engine"] not in GGUF_ENGINES]


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


def _source(log: PublishedLog | GgufLog) -> str:
    found = re.search(r"https://\S+", log.source_url)
    if found and found.group(0) == log.source_url:
        return f"[log]({log.source_url})"
    return log.source_url


def table(results: list[Verdict]) -> str:
    lines = [
        "| Case | Engine (family) | GPU (interconnect), TP, utilization, max_model_len | Weights GiB logged / ours (ratio) | "
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
            f"| `{log.case_id}` | {log.family} | {log.gpu} ({log.interconnect}), TP {log.tensor_parallel}, "
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


# --- llama.cpp and Ollama ---------------------------------------------------------------------------------------

def _mib(text: str) -> int | None:
    return int(Decimal(text) * MIB) if text else None


@dataclass(frozen=True)
class GgufLog:
    """A llama.cpp or Ollama start-up: the settings it states and the buffers it logged (None: not logged)."""

    case_id: str
    engine: str
    version: str
    model_slug: str
    quant_type: str
    cache_type: str
    gpu: str
    gpu_total_bytes: int | None  # None: not stated, the start is not judged
    gpus: int
    context: int | None  # llama.cpp's -c (every slot together); Ollama's num_ctx (each request)
    parallel: int
    flash_attention: bool
    file_gib: Decimal | None
    model_buffer_bytes: int | None  # the device model buffers together
    kv_buffer_bytes: int | None
    compute_buffer_bytes: int | None
    started: bool
    failure: str
    source_url: str
    source_lines: str

    @property
    def family(self) -> str:
        return f"{'Ollama' if self.engine == 'ollama' else 'llama.cpp'} ({self.version})"

    @property
    def build(self) -> LlamaCppBuild:
        """The llama.cpp build the log states ("build 10240"), asked as engine_version=b10240, or Ollama's
        release ("0.5.4"), asked as engine_version=0.5.4; not stated: not given."""
        stated = re.fullmatch(r"build (\d+)", self.version)
        if self.engine == "llamacpp" and stated:
            return parse_build(stated.group(1))
        if self.engine == "ollama" and re.fullmatch(OLLAMA_PATTERN, self.version):
            return parse_ollama_version(self.version)
        return NOT_GIVEN

    @property
    def settings(self) -> LlamaCppSettings:
        """The settings as the capacity what-if takes them: Ollama's num_ctx is allocated once per slot, the
        logits reserved and the cache laid out as the stated build or Ollama release does."""
        context = self.context or 4096  # the engines' default; rows without a context judge the file only
        total = context * self.parallel if self.engine == "ollama" else context
        return LlamaCppSettings(
            quant_type=self.quant_type, context=total, parallel=self.parallel, cache_type_k=self.cache_type or "f16",
            cache_type_v=self.cache_type or "f16", flash_attention=self.flash_attention,
            reservation=self.build.reservation, kv_layout=self.kv_layout,
        )

    @property
    def kv_layout(self) -> str:
        """The cache's layout: one pool where the log says llama-server turned on its unified cache (its auto
        slots, `-np` left out: "kv_unified = true"), else as the stated build or Ollama release lays out
        `-np` slots (`llamacpp_builds.kv_layout`)."""
        if "kv_unified = true" in self.source_lines:
            return KV_POOL
        return kv_layout(self.engine, self.build, self.parallel)

    def predict(self) -> GgufPrediction:
        need = llamacpp_need(language_spec(self.model_slug), self.settings)
        fits, reason = (need.fits(self.gpus, self.gpu_total_bytes) if self.gpu_total_bytes
                        else (None, None))
        return GgufPrediction(need.weights.bytes, need.gpu_items[0].bytes, need.kv_cache_bytes,
                              need.gpu_items[2].bytes, fits, reason)


@dataclass(frozen=True)
class GgufPrediction:
    file_bytes: int
    gpu_weights_bytes: int
    kv_cache_bytes: int
    compute_bytes: int
    starts: bool | None  # None: the GPU's memory is not stated
    reason: str | None


def load_gguf(path: Path = CSV_PATH) -> list[GgufLog]:
    with path.open(newline="", encoding="utf-8") as handle:
        return [GgufLog(
            case_id=row["case_id"], engine=row["engine"], version=row["engine_version"],
            model_slug=row["model_slug"], quant_type=row["quantization"], cache_type=row["kv_cache_dtype"],
            gpu=row["gpu"], gpu_total_bytes=_gib(row["gpu_total_gib"]), gpus=int(row["tensor_parallel"]),
            context=int(row["max_model_len"]) if row["max_model_len"] else None,
            parallel=int(row["parallel"] or 1), flash_attention=row["flash_attention"] != "no",
            file_gib=Decimal(row["file_gib"]) if row["file_gib"] else None,
            model_buffer_bytes=_mib(row["model_buffer_mib"]), kv_buffer_bytes=_mib(row["kv_buffer_mib"]),
            compute_buffer_bytes=_mib(row["compute_buffer_mib"]), started=row["started"] == "yes",
            failure=row["failure"], source_url=row["source_url"], source_lines=row["source_lines"],
        ) for row in csv.DictReader(handle) if row["engine"] in GGUF_ENGINES]


def _held(ours: int, logged: int | None, tolerance: Fraction) -> tuple[Fraction | None, bool | None]:
    if logged is None:
        return None, None
    ratio = Fraction(ours, logged)
    return ratio, abs(ratio - 1) <= tolerance


@dataclass(frozen=True)
class GgufVerdict:
    log: GgufLog
    ours: GgufPrediction

    @property
    def file(self) -> tuple[Fraction | None, bool | None]:
        if self.log.file_gib is None:
            return None, None
        logged = Fraction(self.log.file_gib) * GIB
        ratio = Fraction(self.ours.file_bytes) / logged
        slack = Fraction(FILE_ROUNDING) / Fraction(self.log.file_gib)
        return ratio, abs(ratio - 1) <= WEIGHTS_TOLERANCE + slack

    @property
    def weights(self) -> tuple[Fraction | None, bool | None]:
        return _held(self.ours.gpu_weights_bytes, self.log.model_buffer_bytes, WEIGHTS_TOLERANCE)

    @property
    def kv_cache(self) -> tuple[Fraction | None, bool | None]:
        return _held(self.ours.kv_cache_bytes, self.log.kv_buffer_bytes, KV_TOLERANCE)

    @property
    def compute(self) -> tuple[Fraction | None, bool | None]:
        return _held(self.ours.compute_bytes, self.log.compute_buffer_bytes, COMPUTE_TOLERANCE)

    @property
    def start_holds(self) -> bool | None:
        """As for the servers; None where the log does not state the GPU's memory."""
        if self.ours.starts is None:
            return None
        if self.log.started:
            return self.ours.starts
        return not self.ours.starts and bool(self.ours.reason)

    def marks(self) -> dict[str, bool | None]:
        return {"file": self.file[1], "weights": self.weights[1], "KV cache": self.kv_cache[1],
                "compute buffer": self.compute[1], "start": self.start_holds}

    @property
    def holds(self) -> bool:
        return all(mark is not False for mark in self.marks().values())


def gguf_verdicts(rows: list[GgufLog] | None = None) -> list[GgufVerdict]:
    return [GgufVerdict(row, row.predict()) for row in (rows if rows is not None else load_gguf())]


def _pair(logged: int | None, ours: int, ratio: Fraction | None) -> str:
    if logged is None:
        return "—"
    return f"{Decimal(logged) / MIB:,.2f} / {Decimal(ours) / MIB:,.2f} ({_ratio(ratio)})"


def gguf_table(results: list[GgufVerdict]) -> str:
    lines = [
        "| Case | Engine | GPU; context, slots, cache, flash attention | File GiB logged / ours (ratio) | "
        "Model buffer MiB logged / ours | KV buffer MiB logged / ours | Compute buffer MiB logged / ours | "
        "Started / ours | File ±3 % | Weights ±3 % | KV ±2 % | Compute ±3 % | Start | Source |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for verdict in results:
        log, ours = verdict.log, verdict.ours
        file_ratio, _ = verdict.file
        file = (f"{log.file_gib} / {Decimal(ours.file_bytes) / GIB:.2f} ({_ratio(file_ratio)})"
                if log.file_gib is not None else "—")
        context = (f"{'num_ctx' if log.engine == 'ollama' else '-c'} {log.context:,}, {log.parallel} slot"
                   f"{'s' if log.parallel > 1 else ''}, {log.cache_type}, FA {'on' if log.flash_attention else 'off'}"
                   if log.context else "not stated (the file only)")
        started = "yes" if log.started else f"no ({log.failure})"
        answer = ("—" if ours.starts is None else "starts" if ours.starts else f"does not start: {ours.reason}")
        marks = verdict.marks()
        lines.append(
            f"| `{log.case_id}` | {log.family} | {log.gpu or 'not stated'} {log.quant_type}; {context} | {file} | "
            f"{_pair(log.model_buffer_bytes, ours.gpu_weights_bytes, verdict.weights[0])} | "
            f"{_pair(log.kv_buffer_bytes, ours.kv_cache_bytes, verdict.kv_cache[0])} | "
            f"{_pair(log.compute_buffer_bytes, ours.compute_bytes, verdict.compute[0])} | {started} / {answer} | "
            + " | ".join(_mark(marks[name]) for name in ("file", "weights", "KV cache", "compute buffer", "start"))
            + f" | {_source(log)} |"
        )
    return "\n".join(lines)


def gguf_summary(results: list[GgufVerdict]) -> str:
    counts = []
    for name, label in (("file", "the file within ±3 %"), ("weights", "the weights within ±3 % of the model buffer"),
                        ("KV cache", "the KV cache within ±2 %"), ("compute buffer", "the compute buffer within ±3 %"),
                        ("start", "logged starts answered \"starts\"")):
        judged = [v.marks()[name] for v in results if v.marks()[name] is not None]
        counts.append(f"{label}: {sum(judged)} of {len(judged)}")
    return (f"**{sum(v.holds for v in results)} of {len(results)} llama.cpp and Ollama logs not handed over hold "
            f"every figure they log.** " + "; ".join(counts) + ".")
