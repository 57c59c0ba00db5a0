"""GGUF files and llama.cpp's memory held against published figures (ACCURACY.md, "llama.cpp and
Ollama").

Reads `catalog/data/reference/engine_measurements.csv`: llama.cpp's quantize README (the tensor data of
Llama 3.1 8B in each quant type, in GiB to two decimals, with its bits per weight), a llama.cpp run log
(the KV buffer, each GPU's of its split by layers, and the host buffer of Qwen3 30B-A3B) and an Ollama
memory line (Gemma 3 27B's weights). The rule: each file within ±3 % of the published size, the KV cache
within ±2 %. The compute buffers and each GPU's model buffer of a file of another mix are shown beside
their logged figures, not held to a rule (see the section's words).

Pure Python: no torch, no database.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from sizing.calculators.llamacpp import LlamaCppSettings, llamacpp_need
from sizing.gguf import gguf_weights
from sizing.units import GIB, MIB
from tests.accuracy.vllm_startup import language_spec as spec

ROOT = Path(__file__).resolve().parents[2]
CSV_PATH = ROOT / "catalog" / "data" / "reference" / "engine_measurements.csv"
FILE_TOLERANCE = 0.03
KV_TOLERANCE = 0.02


@dataclass(frozen=True)
class Check:
    case: str
    what: str
    published: float  # GiB
    ours: float  # GiB
    tolerance: float | None  # None: shown, not held to a rule

    @property
    def ratio(self) -> float:
        return self.ours / self.published

    @property
    def holds(self) -> bool:
        return self.tolerance is None or abs(self.ratio - 1) <= self.tolerance


def rows() -> list[dict]:
    with CSV_PATH.open(encoding="utf-8") as lines:
        return list(csv.DictReader(lines))


def checks() -> list[Check]:
    found = []
    for row in rows():
        if row["engine"] == "gguf-file":
            weights = gguf_weights(spec(row["model_slug"]), row["quant_type"])
            bits = row["source_quote"].split("|")[-3].strip()
            found.append(Check(f"Llama 3.1 8B {row['quant_type']} (README: {bits} bits per weight; ours "
                               f"{float(weights.bits_per_weight):.4f})", "file", int(row["weights_bytes"]) / GIB,
                               weights.bytes / GIB, FILE_TOLERANCE))
    qwen = llamacpp_need(spec("qwen3-30b-a3b"), LlamaCppSettings("Q4_K_M", 32768, gpu_layers=99))
    found.append(Check("Qwen3 30B-A3B, -c 32768, f16 cache (llama.cpp log: KV self size 3072.00 MiB)", "KV cache",
                       3072 * MIB / GIB, qwen.kv_cache_bytes / GIB, KV_TOLERANCE))
    found.append(Check("the same run: host buffer 166.92 MiB (the token embeddings)", "host weights",
                       166.92 * MIB / GIB, qwen.host_bytes / GIB, FILE_TOLERANCE))
    found.append(Check("the same run: compute buffer 444.77 MiB on the GPU with the output head (ours: its "
                       "buffer, the pipeline's four copies of its inputs counted)",
                       "compute buffer", 444.77 * MIB / GIB, (qwen.gpu_items[2].bytes + qwen.pipeline_bytes) / GIB,
                       None))
    found.append(Check("the same run: compute buffer 368.01 MiB on the other GPU (ours: layers 0–24 of 48 "
                       "without the output rows and logits, the pipeline's four copies counted)",
                       "compute buffer", 368.01 * MIB / GIB, qwen.other_gpus_compute_bytes(2) / GIB, None))
    # Split by layers over the two GPUs: 49 slots (48 layers and the head), layers 0–24 on CUDA0, 25–47 and
    # the head on CUDA1; each GPU's KV buffer is its own layers' cache, its model buffer its own layers'.
    first, second = qwen.gpu_needs(2)
    for need, logged_kv, logged_weights in ((first, 1600.00, 8509.23), (second, 1472.00, 8213.14)):
        held = need.share.layers
        layers = f"layers {held[0]}–{held[-1]}{' and the output head' if need.share.output_head else ''}"
        found.append(Check(f"the same run: KV buffer {logged_kv:.2f} MiB on CUDA{need.index} (ours: {layers})",
                           "KV cache per GPU", logged_kv * MIB / GIB, need.share.kv_cache_bytes / GIB,
                           KV_TOLERANCE))
        found.append(Check(f"the same run: model buffer {logged_weights:.2f} MiB on CUDA{need.index} (ours: "
                           f"{layers} in Q4_K_M; the file is Unsloth's UD-Q4_K_XL, a mix of its own)",
                           "weights per GPU", logged_weights * MIB / GIB, need.share.weights_bytes / GIB, None))
    gemma = gguf_weights(spec("gemma-3-27b"), "Q4_K_M")
    layers = sum(gemma.layer_bytes(layer) for layer in range(62))
    found.append(Check("Gemma 3 27B Q4_K_M (Ollama's estimate: memory.weights.total 14.3 GiB; ours: its 62 "
                       "decoder layers)", "layer weights", 14.3, layers / GIB, FILE_TOLERANCE))
    return found + latent_checks() + linear_checks() + published_file_checks()


def latent_checks() -> list[Check]:
    """Latent attention (the deepseek2 architecture): two files as llama-bench prints their tensor data, and
    ik_llama.cpp's log of the same latent cache mainline keeps from its V-less cache on (576 values a cell
    and layer, no V)."""
    from sizing.calculators.llamacpp import cache_cells, kv_cache_bytes
    from tests.sizing.models import DEEPSEEK_V2_LITE

    r1 = gguf_weights(spec("deepseek-r1"), "Q4_K_M")
    lite = gguf_weights(DEEPSEEK_V2_LITE, "Q4_K_M")
    logged = LlamaCppSettings("Q4_K_M", 32768, cache_type_k="q8_0", cache_type_v="q8_0", latent_values=False)
    cache = kv_cache_bytes(spec("deepseek-r1"), logged, cache_cells(logged), range(61))
    return [
        Check("DeepSeek-R1 Q4_K_M (unsloth's file, llama-bench: 376.65 GiB, 671.03 B; ours "
              f"{float(r1.bits_per_weight):.4f} bits per weight)", "latent-attention file", 376.65, r1.bytes / GIB, FILE_TOLERANCE),
        Check("DeepSeek-V2-Lite Q4_K_M (llama-bench: 9.65 GiB, 15.71 B; ours "
              f"{float(lite.bits_per_weight):.4f} bits per weight)", "latent-attention file", 9.65, lite.bytes / GIB, FILE_TOLERANCE),
        Check("DeepSeek-R1, -c 32768, q8_0 latent cache (ik_llama.cpp log: KV self size 1166.62 MiB, c^KV "
              "(q8_0))", "latent KV cache", 1166.62 * MIB / GIB, cache / GIB, KV_TOLERANCE),
    ]


def linear_checks() -> list[Check]:
    """Linear attention (the qwen3next architecture; kimi-linear's in `kimi_checks`): two published
    Qwen3-Next-80B-A3B-Instruct files as llama.cpp prints their size, both converted before ssm_in was split
    into attn_qkv and attn_gate (the split file, sized here, is a little larger), and a recurrent memory
    llama.cpp logged for Gated DeltaNet layers of Qwen3-Next's widths (Qwen3.5: 16 key and 32 value heads of
    128, a kernel of 4)."""
    from sizing.architectures import LinearAttention
    from sizing.calculators.llamacpp import RECURRENT_STATE_BYTES, recurrent_state_values

    q4 = gguf_weights(spec("qwen3-next-80b-a3b"), "Q4_K_M")
    iq4 = gguf_weights(spec("qwen3-next-80b-a3b"), "IQ4_NL")
    layer = recurrent_state_values(LinearAttention(key_heads=16, value_heads=32, key_head_dim=128,
                                                   value_head_dim=128, conv_kernel=4))
    return [
        Check("Qwen3-Next 80B-A3B Q4_K_M (LM Studio's log, lmstudio-bug-tracker#1266: file size 45.08 GiB, "
              f"4.86 BPW; ours {float(q4.bits_per_weight):.4f} bits per weight)", "linear-attention file", 45.08,
              q4.bytes / GIB, FILE_TOLERANCE),
        Check("Qwen3-Next 80B-A3B IQ4_NL (llama-bench in ggml-org/llama.cpp#16095: 41.98 GiB, 79.67 B; ours "
              f"{float(iq4.bits_per_weight):.4f} bits per weight)", "linear-attention file", 41.98,
              iq4.bytes / GIB, FILE_TOLERANCE),
        Check("24 Gated DeltaNet layers of Qwen3-Next's widths, 1 sequence (llama.cpp log in "
              "JamePeng/llama-cpp-python#78: RS buffer 50.25 MiB, R (f32) 2.25 + S (f32) 48.00)",
              "recurrent state", 50.25 * MIB / GIB, 24 * layer * RECURRENT_STATE_BYTES / GIB, KV_TOLERANCE),
        *kimi_checks(),
    ]


# Kimi-Linear's files as ymcki/Kimi-Linear-48B-A3B-Instruct-GGUF lists them (the author of
# ggml-org/llama.cpp#18755, which added the kimi-linear architecture), in decimal gigabytes as Hugging Face
# shows file sizes: quant type -> GB.
KIMI_LINEAR_FILES = {"Q4_K_M": 29.70, "Q5_K_M": 34.87, "MXFP4_MOE": 27.21}


def kimi_checks() -> list[Check]:
    """Kimi Delta Attention (the kimi-linear architecture): three published Kimi-Linear-48B-A3B-Instruct
    files, converted with the latent layers' kv_b split into attn_k_b and attn_v_b, as sized."""
    found = []
    for quant_type, gigabytes in KIMI_LINEAR_FILES.items():
        weights = gguf_weights(spec("kimi-linear-48b-a3b"), quant_type)
        found.append(Check(
            f"Kimi-Linear 48B-A3B {quant_type} (ymcki/Kimi-Linear-48B-A3B-Instruct-GGUF: {gigabytes:.2f} GB; "
            f"ours {float(weights.bits_per_weight):.4f} bits per weight)", "linear-attention file",
            gigabytes * 1e9 / GIB, weights.bytes / GIB, FILE_TOLERANCE))
    return found + kimi_cache_checks()


# The latent cache of Kimi-Linear at 1,048,576 tokens as the implementer of its MLA KV cache published it
# (u/Ok_Warning2146, "llama.cpp MLA KV cache support for KimiLinear-48B-A3B", r/LocalLLaMA 1q9vtgz,
# January 2026: "KV Size at 1M", in GiB though labelled GB), with that build's V cache: type -> GiB.
KIMI_LINEAR_CACHE_AT_1M = {"f16": 14.875, "q8_0": 7.902}


def kimi_cache_checks() -> list[Check]:
    """The 7 latent layers' K and V at 1,048,576 cells (the KDA layers' recurrent state is a buffer of its
    own, not in that table)."""
    from sizing.calculators.llamacpp import cell_bytes

    model = spec("kimi-linear-48b-a3b")
    found = []
    for cache_type, gib in KIMI_LINEAR_CACHE_AT_1M.items():
        settings = LlamaCppSettings("Q4_K_M", 1_048_576, cache_type_k=cache_type, cache_type_v=cache_type,
                                    latent_values=True)
        ours = 7 * 1_048_576 * cell_bytes(model, settings)
        found.append(Check(
            f"Kimi-Linear 48B-A3B at 1,048,576 tokens, {cache_type} cache (its implementer's table, r/LocalLLaMA: "
            f"{gib} at 1M; ours the 7 latent layers' 576 values in K and the latent's 512 again in V)",
            "KV cache", gib, ours / GIB, KV_TOLERANCE))
    return found


# A checkpoint whose files the sizing engine types differently from llama.cpp's quantizer, shown with why.
NOT_MODELLED = {
    "phi-3-mini-4k": "Phi-3 writes Q, K and V as one fused attn_qkv tensor, which llama.cpp's Q4_K_M types "
                     "Q5_K; the engine types them apart (attn_v alone gets more bits): not yet modelled",
}


def published_file_checks() -> list[Check]:
    """The catalog's published GGUF files (`catalog.data.gguf_files`): each file against its size, exact
    where listed to the byte, else as listed in GiB to one decimal (the rounding, 0.05 GiB, is added to the
    tolerance)."""
    from catalog.data.gguf_files import GGUF_FILES

    found = []
    for slug, repositories in GGUF_FILES.items():
        for repository in repositories:
            for quant_type, published in repository["files"].items():
                weights = gguf_weights(spec(slug), quant_type)
                if published["bytes"] is not None:
                    size, listed, tolerance = published["bytes"] / GIB, "bytes", FILE_TOLERANCE
                else:
                    size = float(published["listed_gib"])
                    listed, tolerance = f"{published['listed_gib']} GiB listed", FILE_TOLERANCE + 0.05 / size
                note = f"; {NOT_MODELLED[slug]}" if slug in NOT_MODELLED else ""
                found.append(Check(
                    f"{repository['repository']}: {published['file']} ({listed}{note})", "published file",
                    size, weights.bytes / GIB, None if slug in NOT_MODELLED else tolerance))
    return found


def summary(found: list[Check]) -> str:
    held = [check for check in found if check.tolerance is not None]
    return (f"{sum(check.holds for check in held)} of {len(held)} published figures hold (files within "
            f"±{FILE_TOLERANCE:.0%}, the KV cache within ±{KV_TOLERANCE:.0%}).")


def table(found: list[Check]) -> str:
    lines = ["| Case | What | Published GiB | Ours GiB | Ours ÷ published | Holds |", "|---|---|---|---|---|---|"]
    for check in found:
        holds = "shown" if check.tolerance is None else ("yes" if check.holds else "**no**")
        lines.append(f"| {check.case} | {check.what} | {check.published:.3f} | {check.ours:.3f} | "
                     f"{check.ratio:.3f} | {holds} |")
    return "\n".join(lines)
