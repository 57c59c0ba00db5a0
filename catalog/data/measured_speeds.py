"""Measured speeds the demo and synthetic fleets carry: output tokens per second per GPU, by GPU type,
for the common models, at figures in line with published serving benchmarks.

The console never estimates a speed; on a real fleet these come from providers' feeds or staff. For
the demo, about one machine in five (`MEASURED_ONE_IN`) carries the measurements its GPU type has
below, each scaled by a small per-machine spread (`SPREAD`, as repeated runs differ) and reported for
the GPUs measured together.

Sources the figures are consistent with (rounded; high-concurrency serving, output tokens/s):
- MLCommons, MLPerf Inference v4.1 Datacenter results (Aug 2024), Llama 2 70B, offline, 8-bit:
  8×H100 SXM about 24,500 tokens/s (≈3,000 per GPU), 8×H200 about 34,000 (≈4,200 per GPU),
  8×MI300X about 21,000 (≈2,600 per GPU). https://mlcommons.org/benchmarks/inference-datacenter/
- Lambda, "vLLM benchmark" (Llama 3.1 8B/70B on H100 SXM and A100 SXM, 1–8 GPUs): the H100 serves
  about twice the A100's throughput. https://github.com/LambdaLabsML/vllm-benchmark
- vLLM, "vLLM v0.6.0: 2.7x throughput improvement" (Sept 2024), Llama 3 8B on one H100 and 70B on
  four. https://blog.vllm.ai/2024/09/05/perf-update.html
- Microsoft Azure HPC blog, "Inference performance of Llama 3.1 8B using vLLM across various GPUs and
  CPUs" (Aug 2025), and Ori, "Benchmarking Llama 3.1 8B Instruct on H100 and A100 with vLLM".
GPUs none of these measured (the Ada, Ampere and consumer cards) sit where their memory bandwidth puts
them against the measured ones, which is what decode throughput follows at these batch sizes.
"""

MEASURED_ONE_IN = 5
SPREAD = ("0.97", "1.00", "1.03")
MEASURED_AT = "2025-05-20T08:00:00+00:00"
ENGINE, ENGINE_VERSION = "vLLM", "0.6.3"

# (model slug, precision) -> (concurrency, input tokens, output tokens) of the measurement.
WORKLOADS = {
    ("llama-3-1-8b", 16): (64, 1024, 128),
    ("llama-3-1-8b", 8): (64, 1024, 128),
    ("qwen2-5-7b", 16): (64, 1024, 128),
    ("llama-3-1-70b", 16): (32, 1024, 128),
    ("llama-3-1-70b", 8): (32, 1024, 128),
    ("llama-2-70b", 8): (256, 1024, 256),
}

# GPU type -> {(model slug, precision): (tokens/s per GPU, GPUs measured together)}.
PER_GPU = {
    "H100 SXM 80GB": {
        ("llama-3-1-8b", 16): (5000, 1), ("llama-3-1-8b", 8): (6500, 1), ("qwen2-5-7b", 16): (5200, 1),
        ("llama-3-1-70b", 16): (1100, 4), ("llama-3-1-70b", 8): (1500, 2), ("llama-2-70b", 8): (3000, 8),
    },
    "H200": {
        ("llama-3-1-8b", 16): (6400, 1), ("llama-3-1-8b", 8): (8300, 1), ("qwen2-5-7b", 16): (6600, 1),
        ("llama-3-1-70b", 16): (1600, 2), ("llama-3-1-70b", 8): (2100, 1), ("llama-2-70b", 8): (4200, 8),
    },
    "B200": {
        ("llama-3-1-8b", 16): (10000, 1), ("llama-3-1-8b", 8): (13000, 1),
        ("llama-3-1-70b", 16): (2600, 1), ("llama-3-1-70b", 8): (3400, 1),
    },
    "MI300X": {
        ("llama-3-1-8b", 16): (4400, 1), ("llama-3-1-8b", 8): (5700, 1), ("qwen2-5-7b", 16): (4600, 1),
        ("llama-3-1-70b", 16): (1300, 1), ("llama-3-1-70b", 8): (1700, 1), ("llama-2-70b", 8): (2600, 8),
    },
    "H100 NVL": {
        ("llama-3-1-8b", 16): (5400, 1), ("llama-3-1-8b", 8): (7000, 1), ("llama-3-1-70b", 16): (1200, 2),
    },
    "H100 PCIe 80GB": {
        ("llama-3-1-8b", 16): (3600, 1), ("llama-3-1-8b", 8): (4700, 1), ("qwen2-5-7b", 16): (3700, 1),
        ("llama-3-1-70b", 8): (1000, 2),
    },
    "A100 80GB": {
        ("llama-3-1-8b", 16): (2600, 1), ("llama-3-1-8b", 8): (3000, 1), ("qwen2-5-7b", 16): (2700, 1),
        ("llama-3-1-70b", 16): (560, 4), ("llama-3-1-70b", 8): (700, 2),
    },
    "A100 40GB": {("llama-3-1-8b", 16): (2300, 1), ("qwen2-5-7b", 16): (2400, 1)},
    "L40S": {
        ("llama-3-1-8b", 16): (1600, 1), ("llama-3-1-8b", 8): (2100, 1), ("qwen2-5-7b", 16): (1650, 1),
        ("llama-3-1-70b", 8): (420, 4),
    },
    "RTX 6000 Ada": {("llama-3-1-8b", 16): (1700, 1), ("llama-3-1-8b", 8): (2200, 1)},
    "RTX A6000": {("llama-3-1-8b", 16): (1250, 1), ("qwen2-5-7b", 16): (1300, 1)},
    "RTX 5090": {("llama-3-1-8b", 16): (2700, 1), ("llama-3-1-8b", 8): (3500, 1)},
    "RTX 4090": {
        ("llama-3-1-8b", 16): (1700, 1), ("llama-3-1-8b", 8): (2200, 1), ("qwen2-5-7b", 16): (1750, 1),
    },
    "RTX 3090": {("llama-3-1-8b", 16): (1300, 1), ("qwen2-5-7b", 16): (1350, 1)},
    "A10": {("llama-3-1-8b", 16): (850, 1)},
    "L4": {("llama-3-1-8b", 16): (560, 1), ("llama-3-1-8b", 8): (730, 1)},
}
