"""Our estimates held against published measurements of peak GPU memory, and the page that shows them.

    python -m tests.accuracy.published            # rewrites ACCURACY.md
    python -m tests.accuracy.published --check    # exits 1 if ACCURACY.md is not what it would write

The rows come from `catalog/data/reference/measured_memory.csv` (and the fine-tunes run other ways from
`measured_training.csv`, each with the training inputs `TRAINING_CONDITIONS` names) (each with its source, quote, conditions
and what was measured). Every row is sized as a new user would ask for it: the catalog's model, the row's
precision, context (or sequence length) and requests (or batch size). The rule each row must meet:

- the estimate is at least the measurement (the one error a user cannot afford), and
- where the measurement is at least 4 GiB, the estimate is at most 1.3 × the process's footprint: the
  measurement plus 0.5 GiB of CUDA context where it counts tensors only (PyTorch's allocated or reserved
  memory), the measurement itself where the driver reported it.

Pure Python: no torch, no database. The page is deterministic, so a test checks that it is current.
"""
from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from catalog.data.image_pipelines import IMAGE_PIPELINES  # noqa: E402
from catalog.data.language_models import LANGUAGE_MODELS  # noqa: E402
from catalog.data.speech_models import SPEECH_MODELS  # noqa: E402
from sizing.architectures import architecture_from_dict  # noqa: E402
from sizing.breakdown import Breakdown  # noqa: E402
from sizing.calculators import (  # noqa: E402
    estimate_finetune,
    estimate_image,
    estimate_inference,
    estimate_speech,
    prefill_activation_bytes,
)
from sizing.calculators.finetune import recomputed_layer_bytes  # noqa: E402
from sizing.calculators.image import (  # noqa: E402
    DENOISER_MLP_TENSORS,
    DENOISER_SHAPES,
    DENOISER_WIDTH_TENSORS,
    VAE_DECODE_BYTES_PER_PIXEL,
    denoiser_tokens,
)
from sizing.calculators.inference import local_prefill  # noqa: E402
from sizing.specs import ImageComponent, ImagePipelineSpec, LanguageModelSpec, SpeechModelSpec  # noqa: E402
from sizing.training import Training  # noqa: E402
from sizing.units import GIB  # noqa: E402

CSV_PATH = ROOT / "catalog" / "data" / "reference" / "measured_memory.csv"
# Other published measurements (other models, another source) that judge the same rule.
OTHER_CSV_PATH = ROOT / "catalog" / "data" / "reference" / "other_measured_memory.csv"
# Our own measurements (tests/accuracy/measure.py on a GPU; raw runs in tests/accuracy/gpu_runs/).
HERE_CSV_PATH = ROOT / "catalog" / "data" / "reference" / "measured_here.csv"
# Published fine-tunes run in other ways than the documentation's trainer (checkpointing, loss, targets).
TRAINING_CSV_PATH = ROOT / "catalog" / "data" / "reference" / "measured_training.csv"
# The training inputs each row of measured_training.csv is sized with, read from its conditions; a row
# not named here ran the documentation's trainer (HF Trainer, gradient checkpointing on, the full fp32
# logits, rank-16 LoRA on q, k, v and o, AdamW with fp32 states).
TRAINING_CONDITIONS = {
    # PEFT's method comparison: no gradient checkpointing (use_gc=false), r=32 on q_proj and v_proj.
    "peft-llama32-3b-lora-r32-qv": Training(gradient_checkpointing="off", lora_rank=32, lora_targets="qv"),
    # fms-acceleration's FOAK kernels: a Triton cross-entropy over the whole batch's logits.
    "fms-llama3-8b-lora-foak-bs4": Training(loss="fused"),
    "fms-llama3-8b-qlora-foak-bs4": Training(loss="fused"),
    # ... and with Liger's fused linear cross-entropy: the logits never exist whole.
    "fms-llama3-8b-lora-foak-liger-bs4": Training(loss="chunked"),
    "fms-llama3-8b-qlora-foak-liger-bs4": Training(loss="chunked"),
    # fms-acceleration's accelerated-peft-autogptq: TheBloke's GPTQ checkpoint (4-bit, group 128) as the base.
    "fms-mistral7b-gptq-lora-bs4": Training(base_format="gptq"),
}
PAGE_PATH = ROOT / "ACCURACY.md"
COMMAND = "python -m tests.accuracy.published"
CUDA_CONTEXT_BYTES = GIB // 2  # what a tensors-only figure leaves out of the process's footprint
UPPER_FACTOR = Fraction(13, 10)
UPPER_FROM_BYTES = 4 * GIB
TENSORS_ONLY = ("allocated", "reserved")
# Items that are headroom rather than tensors a measurement sees.
HEADROOM_ITEMS = ("Safety margin", "CUDA runtime")

LANGUAGE = {row["slug"]: row for row in LANGUAGE_MODELS}
SPEECH = {row["slug"]: row for row in SPEECH_MODELS}
IMAGE = {row["slug"]: row for row in IMAGE_PIPELINES}


def language_spec(slug: str) -> LanguageModelSpec:
    row = LANGUAGE[slug]
    return LanguageModelSpec(
        slug=slug, name=row["name"], parameters=row["parameters"], layers=row["layers"],
        attention_heads=row["attention_heads"], kv_heads=row["kv_heads"], head_dim=row["head_dim"],
        hidden_size=row["hidden_size"], intermediate_size=row["intermediate_size"],
        vocab_size=row["vocab_size"], max_context=row["max_context"],
        tied_embeddings=row.get("tied_embeddings", False),
    )


def architecture_spec(slug: str) -> LanguageModelSpec:
    """The catalog's model with its architecture (layer kinds, windows): as the wizard sizes it."""
    row = LANGUAGE[slug]
    base = language_spec(slug)
    return LanguageModelSpec(**{**base.__dict__, "architecture": architecture_from_dict(row.get("architecture"))})


def speech_spec(slug: str) -> SpeechModelSpec:
    row = SPEECH[slug]
    return SpeechModelSpec(
        slug=slug, name=row["name"], parameters=row["parameters"], decoder_layers=row["decoder_layers"],
        d_model=row["d_model"], attention_heads=row["attention_heads"],
        max_source_positions=row["max_source_positions"], max_target_positions=row["max_target_positions"],
    )


def image_spec(slug: str) -> ImagePipelineSpec:
    row = IMAGE[slug]
    return ImagePipelineSpec(
        slug=slug, name=row["name"],
        components=tuple(ImageComponent(name, role, parameters) for name, role, parameters in row["components"]),
        native_resolution=row["native_resolution"],
    )


@dataclass(frozen=True)
class Measurement:
    case_id: str
    model_slug: str
    workload: str
    precision: int
    tokens: int | None
    count: int
    framework: str
    measured_bytes: int
    metric: str
    source_url: str
    conditions: str
    within_assumptions: bool = True  # False: the software did what the estimate states it does not
    outside_note: str = ""
    speech_beams: int | None = None  # Whisper: set when `count` is streams; else `count` is the beam size
    training: Training | None = None  # fine-tuning: how it was run (None: the documentation's trainer)

    @property
    def tensors_only(self) -> bool:
        return self.metric.rstrip("?") in TENSORS_ONLY

    @property
    def footprint_bytes(self) -> int:
        return self.measured_bytes + (CUDA_CONTEXT_BYTES if self.tensors_only else 0)

    @property
    def upper_bound_bytes(self) -> int | None:
        if self.measured_bytes < UPPER_FROM_BYTES:
            return None
        return int(self.footprint_bytes * UPPER_FACTOR)

    def estimate(self) -> Breakdown:
        if self.workload == "image":
            return estimate_image(image_spec(self.model_slug), self.precision)
        if self.model_slug in SPEECH:
            if self.speech_beams is not None:
                return estimate_speech(speech_spec(self.model_slug), self.precision, self.count,
                                       beams=self.speech_beams)
            # The published row's "batch" is Whisper's beam size on one audio stream.
            return estimate_speech(speech_spec(self.model_slug), self.precision, 1, beams=self.count)
        if self.workload == "finetune":
            return estimate_finetune(language_spec(self.model_slug), self.precision, self.tokens, self.count,
                                     training=self.training)
        return estimate_inference(language_spec(self.model_slug), self.precision, self.tokens, self.count)


def load(path: Path = CSV_PATH) -> list[Measurement]:
    rows = []
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            rows.append(Measurement(
                case_id=row["case_id"],
                model_slug=row["model_slug"],
                workload=row["workload"],
                precision=int(row["precision"]),
                tokens=int(row["context_or_seq"]) if row["context_or_seq"] else None,
                count=int(row["requests_or_batch"]),
                framework=row["framework"],
                measured_bytes=int(Decimal(row["measured_gib"]) * GIB),
                metric=row["metric"],
                source_url=row["source_url"],
                conditions=row["conditions_notes"],
                within_assumptions=row.get("within_assumptions", "yes") == "yes",
                outside_note=row.get("outside_note", ""),
                speech_beams=int(row["speech_beams"]) if row.get("speech_beams") else None,
                training=TRAINING_CONDITIONS.get(row["case_id"]) if row["workload"] == "finetune" else None,
            ))
    return rows


@dataclass(frozen=True)
class Verdict:
    measurement: Measurement
    breakdown: Breakdown

    @property
    def estimate_bytes(self) -> int:
        return self.breakdown.total_bytes

    @property
    def ratio(self) -> Fraction:
        return Fraction(self.estimate_bytes, self.measurement.measured_bytes)

    @property
    def covers(self) -> bool:
        return self.estimate_bytes >= self.measurement.measured_bytes

    @property
    def within_upper(self) -> bool:
        bound = self.measurement.upper_bound_bytes
        return bound is None or self.estimate_bytes <= bound

    @property
    def holds(self) -> bool:
        return self.covers and self.within_upper

    def dominating_item(self) -> str:
        """The item that accounts for most of the difference between estimate and measurement."""
        difference = self.estimate_bytes - self.measurement.measured_bytes
        if difference < 0:
            return f"below the measurement by {_gib(-difference)} GiB: see the note under the table"
        items = {item.name: item.bytes for item in self.breakdown.items}
        headroom = [name for name in HEADROOM_ITEMS if name in items]
        if not self.measurement.tensors_only:
            headroom = [name for name in headroom if name != "CUDA runtime"]  # the driver counts the context
        top = max(headroom, key=lambda name: items[name])
        share = f"{_gib(items[top])} GiB; difference {_gib(difference)} GiB"
        added = [item for item in self.breakdown.items if item.name not in (
            "Model weights", "Base weights", "KV cache", "Decoder KV cache", "Safety margin", "CUDA runtime",
            "LoRA adapters", "Activations", "Logits") and not item.name.startswith(
            ("Denoiser", "Text encoder", "Autoencoder"))]
        extra = "; " + ", ".join(f"{item.name.lower()} {_gib(item.bytes)}" for item in added) if added else ""
        return f"{top.lower()} ({share}){extra}"


def verdicts(rows: list[Measurement] | None = None) -> list[Verdict]:
    return [Verdict(row, row.estimate()) for row in (rows if rows is not None else load())]


def _gib(n_bytes: int) -> str:
    value = (Decimal(n_bytes) / Decimal(GIB)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{value:,}"


def _ratio(value: Fraction) -> str:
    return str((Decimal(value.numerator) / Decimal(value.denominator)).quantize(
        Decimal("0.001"), rounding=ROUND_HALF_UP))


def _case_label(row: Measurement) -> str:
    if row.model_slug in SPEECH:
        if row.speech_beams is not None:
            return (f"`{row.case_id}` ({row.model_slug}, {row.precision}-bit, {row.count} streams, "
                    f"beam {row.speech_beams})")
        return f"`{row.case_id}` ({row.model_slug}, {row.precision}-bit, 1 stream, beam {row.count})"
    if row.workload == "image":
        return f"`{row.case_id}` ({row.model_slug}, {row.precision}-bit, native resolution)"
    count = f"batch {row.count}" if row.workload == "finetune" else (
        f"{row.count} request" + ("" if row.count == 1 else "s"))
    tokens = f"{row.tokens:,} token" + ("" if row.tokens == 1 else "s")
    return f"`{row.case_id}` ({row.model_slug}, {row.precision}-bit, {tokens} × {count})"


def _training_inputs(row: Measurement) -> str:
    changed = (row.training or Training()).non_default()
    if not changed:
        return "defaults"
    return ", ".join(f"`{name}={value}`" for name, value in changed.items())


def training_table(results: list[Verdict]) -> str:
    """The training rows with the inputs each is sized with."""
    lines = [
        "| Case | Inputs | Metric | Measured GiB | Estimate GiB | Estimate ÷ measured | Upper bound GiB | Holds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for verdict in results:
        row = verdict.measurement
        bound = row.upper_bound_bytes
        lines.append(
            f"| {_case_label(row)} | {_training_inputs(row)} | {row.metric} | {_gib(row.measured_bytes)} | "
            f"{_gib(verdict.estimate_bytes)} | {_ratio(verdict.ratio)} | "
            f"{_gib(bound) if bound else '— (under 4 GiB)'} | {_holds_text(verdict)} |"
        )
    return "\n".join(lines)


def outside_notes(results: list[Verdict]) -> str:
    lines = [f"- `{v.measurement.case_id}`: {v.measurement.outside_note}"
             for v in results if not v.measurement.within_assumptions]
    return "\n".join(lines)


def table(results: list[Verdict]) -> str:
    lines = [
        "| Case | Metric | Measured GiB | Estimate GiB | Estimate ÷ measured | Upper bound GiB | Holds | "
        "What dominates the difference |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for verdict in results:
        row = verdict.measurement
        bound = row.upper_bound_bytes
        lines.append(
            f"| {_case_label(row)} | {row.metric} | {_gib(row.measured_bytes)} | {_gib(verdict.estimate_bytes)} | "
            f"{_ratio(verdict.ratio)} | {_gib(bound) if bound else '— (under 4 GiB)'} | "
            f"{_holds_text(verdict)} | {verdict.dominating_item()} |"
        )
    return "\n".join(lines)


def _holds_text(verdict: Verdict) -> str:
    if verdict.holds:
        return "yes"
    return "no, outside the assumptions (below)" if not verdict.measurement.within_assumptions else "**NO**"


def summary(results: list[Verdict], noun: str = "published measurements") -> str:
    held = sum(v.holds for v in results)
    below = [v for v in results if not v.covers]
    ratios = [v.ratio for v in results]
    worst_low = min(results, key=lambda v: v.ratio)
    worst_high = max(results, key=lambda v: v.ratio)
    text = (f"**{held} of {len(results)} {noun} hold the rule.** "
            f"{len(below)} estimates are below their measurement. Estimate ÷ measured runs from "
            f"{_ratio(min(ratios))} (`{worst_low.measurement.case_id}`) to {_ratio(max(ratios))} "
            f"(`{worst_high.measurement.case_id}`).")
    return text


def other_summary(results: list[Verdict]) -> str:
    inside = [v for v in results if v.measurement.within_assumptions]
    outside = [v for v in results if not v.measurement.within_assumptions]
    return (f"**{sum(v.holds for v in inside)} of the {len(inside)} measurements made within the estimate's "
            f"assumptions hold the rule**. {len(outside)} more were made with software that computes attention "
            f"eagerly, which the estimate assumes it does not; {sum(not v.covers for v in outside)} of those "
            "measured more than the estimate.")


# Figures reported without a raw run in this repository: Gemma 3 27B, one 32,768-token prompt, transformers
# (SDPA), NVIDIA H200, peak allocated. The estimate it was held against then: 63.86 GiB without the runtime.
GEMMA3_REPORTED_ALLOCATED_GIB = Decimal("72.24")
GEMMA3_SLUG = "gemma-3-27b"
GEMMA3_CONTEXTS = (8_192, 32_768)
# Hugging Face's "Exploring Quantization Backends in Diffusers" (May 2025): FLUX.1 [dev] at 1,024², 50 steps,
# max_sequence_length 512, the transformer and T5 quantized with bitsandbytes, torch.cuda.max_memory_reserved
# on one H100 80GB, after loading and at the peak of generation (GiB).
FLUX_SLUG = "flux-1-dev"
FLUX_BLOG = "https://github.com/huggingface/blog/blob/0b53cb19406564a21da2bff693a71a08e73538ee/diffusers-quantization.md"
FLUX_BLOG_RESERVED = {16: (Decimal("31.447"), Decimal("36.166")), 8: (Decimal("19.273"), Decimal("24.432")),
                      4: (Decimal("12.584"), Decimal("17.281"))}
IMAGE_NETWORK_PREFIXES = ("Denoiser:", "Text encoder:", "Autoencoder:")


def _item(breakdown: Breakdown, name: str) -> int:
    return sum(item.bytes for item in breakdown.items if item.name == name)


def image_table() -> str:
    """FLUX.1 [dev] at native resolution in each precision: weights per the recipe, the two activation peaks."""
    spec = image_spec(FLUX_SLUG)
    shape = DENOISER_SHAPES[FLUX_SLUG]
    tokens = denoiser_tokens(spec, shape)
    denoiser_need = shape.batch * tokens * (DENOISER_WIDTH_TENSORS * shape.width
                                            + DENOISER_MLP_TENSORS * shape.mlp_width) * 2
    width, height = (int(part) for part in spec.native_resolution.split("x"))
    decode_need = width * height * VAE_DECODE_BYTES_PER_PIXEL
    lines = [
        "| Precision | Networks' weights GiB | Margin GiB | Denoiser activations GiB | Decoding GiB | "
        "Beyond the margin GiB | Estimate GiB | Blog: after loading / peak reserved GiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for precision in (16, 8, 4):
        breakdown = estimate_image(spec, precision)
        weights = sum(item.bytes for item in breakdown.items if item.name.startswith(IMAGE_NETWORK_PREFIXES))
        beyond = (_item(breakdown, "Denoiser activations at native resolution")
                  + _item(breakdown, "Image decoding at native resolution"))
        loaded, peak = FLUX_BLOG_RESERVED[precision]
        lines.append(
            f"| {precision}-bit | {_gib(weights)} | {_gib(_item(breakdown, 'Safety margin'))} | "
            f"{_gib(denoiser_need)} | {_gib(decode_need)} | {_gib(beyond)} | {_gib(breakdown.total_bytes)} | "
            f"{loaded} / {peak} |"
        )
    return "\n".join(lines)


def sliding_table() -> str:
    """Gemma 3 27B, one prompt, 16-bit: the prefill of its sliding-window layers."""
    spec = architecture_spec(GEMMA3_SLUG)
    lines = [
        "| Prompt | Weights GiB | KV cache GiB | Margin GiB | Prefill peak GiB | of it: local layers' keys and "
        "values / masks GiB | Prefill item GiB | Estimate GiB | Without the runtime GiB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for context in GEMMA3_CONTEXTS:
        breakdown = estimate_inference(spec, 16, context, 1)
        local = local_prefill(spec, context, 1)
        kv = sum(item.bytes for item in breakdown.items if item.name.startswith("KV cache"))
        runtime = _item(breakdown, "CUDA runtime")
        lines.append(
            f"| {context:,} tokens | {_gib(_item(breakdown, 'Model weights'))} | {_gib(kv)} | "
            f"{_gib(_item(breakdown, 'Safety margin'))} | {_gib(prefill_activation_bytes(spec, context, 1))} | "
            f"{_gib(local.retained_bytes)} / {_gib(local.mask_bytes)} | "
            f"{_gib(_item(breakdown, 'Prefill activations'))} | {_gib(breakdown.total_bytes)} | "
            f"{_gib(breakdown.total_bytes - runtime)} |"
        )
    return "\n".join(lines)


def moe_recomputed_gap_gib(slug: str = "mixtral-8x7b", tokens: int = 4096, batch: int = 4) -> str:
    """What the default (checkpointing `on`) leaves out of a mixture-of-experts model's recomputed layer:
    the layer as routing makes it (each token through its k experts) less the one-MLP-width count."""
    model = architecture_spec(slug)
    routed = recomputed_layer_bytes(model, tokens, batch, "offload")
    counted = recomputed_layer_bytes(model, tokens, batch, "on")
    return _gib(routed - counted)


def render() -> str:
    results = verdicts()
    others = verdicts(load(OTHER_CSV_PATH))
    here = verdicts(load(HERE_CSV_PATH))
    training = verdicts(load(TRAINING_CSV_PATH))
    from tests.accuracy import gguf, mxfp4, not_handed, rotary, sglang, vllm_startup

    served = vllm_startup.verdicts()
    files = gguf.checks()
    sglang_start_ups = sglang.verdicts()
    unhanded = not_handed.verdicts()
    unhanded_gguf = not_handed.gguf_verdicts()
    body = PAGE_TEMPLATE.read_text(encoding="utf-8")
    return (body.replace("{{SUMMARY}}", summary(results))
                .replace("{{HERE_SUMMARY}}", summary(here, "measurements of ours"))
                .replace("{{HERE_TABLE}}", table(here))
                .replace("{{TRAINING_SUMMARY}}", summary(training, "published fine-tunes"))
                .replace("{{TRAINING_TABLE}}", training_table(training))
                .replace("{{MOE_ON_GAP}}", moe_recomputed_gap_gib())
                .replace("{{TABLE}}", table(results))
                .replace("{{OTHER_SUMMARY}}", other_summary(others))
                .replace("{{OTHER_TABLE}}", table(others))
                .replace("{{OUTSIDE}}", outside_notes(others))
                .replace("{{IMAGE_TABLE}}", image_table())
                .replace("{{SLIDING_TABLE}}", sliding_table())
                .replace("{{GEMMA3_REPORTED}}", str(GEMMA3_REPORTED_ALLOCATED_GIB))
                .replace("{{FLUX_BLOG}}", FLUX_BLOG)
                .replace("{{VLLM_SUMMARY}}", vllm_startup.summary(served))
                .replace("{{VLLM_TABLE}}", vllm_startup.table(served))
                .replace("{{MXFP4_TABLE}}", mxfp4.table())
                .replace("{{ROTARY_TABLE}}", rotary.table())
                .replace("{{GGUF_SUMMARY}}", gguf.summary(files))
                .replace("{{GGUF_TABLE}}", gguf.table(files))
                .replace("{{SGLANG_SUMMARY}}", sglang.summary(sglang_start_ups))
                .replace("{{SGLANG_TABLE}}", sglang.table(sglang_start_ups))
                .replace("{{NOT_HANDED_SUMMARY}}", not_handed.summary(unhanded))
                .replace("{{NOT_HANDED_TABLE}}", not_handed.table(unhanded))
                .replace("{{NOT_HANDED_GGUF_SUMMARY}}", not_handed.gguf_summary(unhanded_gguf))
                .replace("{{NOT_HANDED_GGUF_TABLE}}", not_handed.gguf_table(unhanded_gguf))
                .replace("{{COMMAND}}", COMMAND))


PAGE_TEMPLATE = Path(__file__).with_name("ACCURACY.template.md")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if ACCURACY.md is out of date")
    parser.add_argument("--out", default=str(PAGE_PATH), help="where to write the page (default ACCURACY.md)")
    args = parser.parse_args(argv)
    page = render()
    out = Path(args.out)
    if args.check:
        current = out.read_text(encoding="utf-8") if out.exists() else ""
        if current != page:
            print(f"{out} is out of date: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    out.write_text(page, encoding="utf-8")
    results = verdicts()
    print(f"{out}: {sum(v.holds for v in results)} of {len(results)} rows hold", file=sys.stderr)
    training = verdicts(load(TRAINING_CSV_PATH))
    print(f"{out}: {sum(v.holds for v in training)} of {len(training)} fine-tunes hold", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
