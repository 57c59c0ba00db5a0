"""Commands valid for the GPU (issue #43): a start command is offered only for a GPU that runs it, by the one
rule in `sizing.engine_support`; a row whose GPU cannot run the asked weights or KV cache says so and offers
what runs there and fits. Plain functions over the shipped GPU types: no database."""
from dataclasses import replace

import pytest

from catalog.data.gpu_types import ARCHITECTURES, GPU_TYPES
from sizing.calculators import estimate_inference
from sizing.calculators.vllm_inference import estimate_vllm
from sizing.capacity import Capacity
from sizing.cluster import cluster_need, plan_of
from sizing.cluster_sites import ClusterSite
from sizing.engine_support import (
    BITSANDBYTES,
    FP8,
    FP8_KV,
    MXFP4,
    SGLANG,
    UNKNOWN,
    VLLM,
    alternative_words,
    architecture_problem,
    gpu_architecture,
    refusal_words,
    runnable_choices,
    support,
    support_for,
)
from sizing.matching import recommend
from sizing.offers import Preferences
from sizing.units import MIB
from tests.factories import NOW, offer
from tests.sizing.test_capacity import shipped
from tests.sizing.test_cluster_plan import site

LLAMA_8B = replace(shipped("llama-3-1-8b"), hf_id="meta-llama/Llama-3.1-8B")
GPT_OSS_20B = replace(shipped("gpt-oss-20b"), hf_id="openai/gpt-oss-20b")
# Every shipped GPU type: (name, vendor, memory as nvidia-smi reports it, its architecture).
SHIPPED = [(name, vendor, mib, gpu_architecture(*ARCHITECTURES[name]))
           for name, vendor, _marketed, mib, _url, _notes in GPU_TYPES]
BELOW_BF16 = {"V100 16GB", "V100 32GB", "T4"}  # compute capability under 8.0
NO_FP8 = {"V100 16GB", "V100 32GB"}  # Volta
AMD = {"MI300X"}
VOLTA = gpu_architecture("volta", "7.0")


def fleet():
    """One machine of 8 free GPUs of every shipped GPU type, its architecture as the catalog records it."""
    return [offer(id=number, provider_machine_id=f"m-{number}", gpu_type=name, gpu_count=8, free_gpus=8,
                  memory_per_gpu_mib=mib, gpu_architecture=ARCHITECTURES[name][0],
                  gpu_compute_capability=ARCHITECTURES[name][1])
            for number, (name, _vendor, mib, _gpu) in enumerate(SHIPPED, start=1)]


def test_every_shipped_gpu_type_has_an_architecture_the_rule_knows():
    for name, vendor, _mib, gpu in SHIPPED:
        assert gpu is not None, name
        assert gpu.maker == vendor, name
        assert architecture_problem(vendor, *ARCHITECTURES[name]) is None, name


def words_of(row):
    return row.gpu_support_text or ""


@pytest.mark.parametrize("engine", ["transformers", "vllm"])
def test_no_row_offers_a_command_its_gpu_cannot_start(engine):
    """Every shipped GPU type × precision (16, 8, 4) × KV cache (16, 8) × engine: a command only where the
    rule says it starts, --dtype half exactly below compute capability 8.0, and the reason on every row
    whose GPU cannot run what was asked."""
    estimate = estimate_vllm if engine == "vllm" else estimate_inference
    gpus_seen = set()
    for precision in (16, 8, 4):
        for kv_bits in (16, 8):
            answer = recommend(estimate(LLAMA_8B, precision, 8192, 4, kv_bits), fleet(), Preferences(), now=NOW,
                               machines_shown=100)
            for row in answer.machines:
                name = row.offer.gpu_type
                gpus_seen.add(name)
                gpu = gpu_architecture(row.offer.gpu_architecture, row.offer.gpu_compute_capability)
                runs = support_for(engine, LLAMA_8B, precision, kv_bits, gpu).runs
                commands = [command for command in (row.command, row.alternative and row.alternative.command)
                            if command]
                if engine == "transformers":
                    assert commands == [] and row.runs_on_gpu is None and row.gpu_support_text is None
                    continue
                assert row.runs_on_gpu is runs, name
                assert (row.command is not None) is runs, name
                for command in commands:
                    assert ("--dtype half" in command) is (name in BELOW_BF16), (name, command)
                    if name in NO_FP8:
                        assert "fp8" not in command, (name, command)
                    if name in AMD:
                        assert "bitsandbytes" not in command, (name, command)
                if not runs:
                    assert f"on {name} ({gpu.label}): " in words_of(row), (name, words_of(row))
                    assert row.alternative is None or (row.alternative.precision, row.alternative.kv_bits) \
                        != (precision, kv_bits)
                    if row.alternative is not None:
                        flags = support_for(engine, LLAMA_8B, row.alternative.precision, row.alternative.kv_bits,
                                            gpu)
                        assert flags.runs
    assert gpus_seen == {name for name, *_ in SHIPPED}


def test_a_v100_row_at_8_bit_offers_no_fp8_and_the_16_bit_command_that_starts_there():
    answer = recommend(estimate_vllm(LLAMA_8B, 8, 8192, 4, 8), fleet(), Preferences(), now=NOW, machines_shown=100)
    row = next(row for row in answer.machines if row.offer.gpu_type == "V100 32GB")
    assert row.command is None and row.runs_on_gpu is False
    assert row.gpu_support_text == (
        "vLLM cannot run FP8 weights on V100 32GB (Volta, compute capability 7.0): FP8 runs on NVIDIA GPUs from "
        "compute capability 7.5 (weight-only through FP8 Marlin below 8.9) and on AMD MI300X. vLLM cannot run an "
        "FP8 KV cache on V100 32GB (Volta, compute capability 7.0): an FP8 KV cache is offered only where FP8 "
        "runs: NVIDIA from compute capability 7.5, AMD MI300X. What runs there and fits instead: 16-bit weights "
        "with a 16-bit KV cache (--dtype half), started by the command below.")
    assert row.alternative.command == (
        "vllm serve meta-llama/Llama-3.1-8B --dtype half --tensor-parallel-size 1 --max-model-len 8192 "
        "--max-num-seqs 4 --gpu-memory-utilization 0.92")
    t4 = next(row for row in answer.machines if row.offer.gpu_type == "T4")  # FP8 through Marlin, float16
    assert t4.runs_on_gpu is True and "--dtype half" in t4.command and "--quantization fp8" in t4.command


def test_where_only_4_bit_fits_the_row_offers_bitsandbytes():
    """One 16 GB V100 holds Llama 3.1 8B at 8-bit but not its 16-bit weights: the 4-bit command
    (bitsandbytes, which runs on Volta) is offered instead."""
    held = Capacity(LLAMA_8B, 8, 16, 8192, 4, engine=VLLM).on_machine(1, 16_160 * MIB, VOLTA)
    assert held.command is None and held.refused == (FP8,)
    assert (held.alternative.precision, held.alternative.kv_bits) == (4, 16)
    assert "--quantization bitsandbytes" in held.alternative.command and "--dtype half" in held.alternative.command


def test_nothing_that_runs_fits_says_so_and_offers_no_command():
    held = Capacity(LLAMA_8B, 8, 16, 131_072, 64, engine=VLLM).on_machine(1, 16_160 * MIB, VOLTA)
    assert held.command is None and held.alternative is None and held.refused == (FP8,)
    assert alternative_words(None) == "Nothing that runs on this GPU fits here at the asked context and requests."


def test_the_rule_by_architecture():
    volta, turing, ampere, ada = (gpu_architecture(*pair) for pair in
                                  (("volta", "7.0"), ("turing", "7.5"), ("ampere", "8.0"), ("ada", "8.9")))
    rtx_5090, b200, mi300x = (gpu_architecture(*pair) for pair in
                              (("blackwell", "12.0"), ("blackwell", "10.0"), ("cdna3", "")))
    assert support(VLLM, FP8, 16, volta).refused == (FP8,)
    assert support(VLLM, FP8, 8, turing).runs and support(VLLM, FP8, 8, turing).half
    assert support(VLLM, FP8, 8, mi300x).runs and not support(VLLM, FP8, 8, mi300x).half
    assert support(VLLM, BITSANDBYTES, 16, volta).runs and support(VLLM, BITSANDBYTES, 16, rtx_5090).runs
    assert support(VLLM, BITSANDBYTES, 16, mi300x).refused == (BITSANDBYTES,)
    assert support(VLLM, MXFP4, 16, ampere).runs and support(VLLM, MXFP4, 16, b200).runs
    assert support(VLLM, MXFP4, 16, ada).refused == (MXFP4,) and support(VLLM, MXFP4, 16, rtx_5090).refused
    assert support(VLLM, "16-bit", 8, volta).refused == (FP8_KV,)
    assert support(SGLANG, "16-bit", 16, volta).refused == ("engine",)
    assert support(SGLANG, "16-bit", 16, turing).runs and support(SGLANG, "16-bit", 16, turing).half
    assert support(VLLM, "16-bit", 16, None).refused == (UNKNOWN,)
    assert support("transformers", FP8, 8, volta).runs and support("transformers", FP8, 8, None).runs


def test_a_published_mxfp4_checkpoint_on_ada_falls_back_to_16_bit():
    ada = gpu_architecture("ada", "8.9")
    assert support_for(VLLM, GPT_OSS_20B, 4, 16, ada).refused == (MXFP4,)
    assert runnable_choices(VLLM, GPT_OSS_20B, 4, 16, ada) == ((16, 16),)  # no 8-bit of gpt-oss


def test_runnable_choices_go_nearest_first_the_higher_of_two_as_near():
    volta = gpu_architecture("volta", "7.0")
    assert runnable_choices(VLLM, LLAMA_8B, 8, 8, volta) == ((16, 16), (4, 16))
    assert runnable_choices(VLLM, LLAMA_8B, 16, 8, volta) == ((16, 16), (4, 16))
    mi300x = gpu_architecture("cdna3", "")
    assert runnable_choices(VLLM, LLAMA_8B, 4, 16, mi300x) == ((8, 16), (16, 16))


def test_an_architecture_the_catalog_does_not_record_gets_no_command_and_says_why():
    rows = [replace(machine, gpu_architecture="", gpu_compute_capability="") for machine in fleet()[:1]]
    row = recommend(estimate_vllm(LLAMA_8B, 16, 8192, 4, 16), rows, Preferences(), now=NOW).machines[0]
    assert row.command is None and row.alternative is None
    assert "does not record the architecture of H100 SXM 80GB" in row.gpu_support_text
    assert refusal_words(VLLM, "Card", None, (UNKNOWN,)).startswith("The catalog does not record")


@pytest.mark.parametrize(("vendor", "family", "capability", "field"), [
    ("NVIDIA", "volta", "8.0", "compute_capability"),
    ("NVIDIA", "hopper", "", "compute_capability"),
    ("NVIDIA", "hopper", "nine", "compute_capability"),
    ("AMD", "cdna3", "9.4", "compute_capability"),
    ("AMD", "hopper", "9.0", "architecture"),
    ("NVIDIA", "", "9.0", "architecture"),
    ("NVIDIA", "pascal", "6.0", "architecture"),
])
def test_the_admin_is_told_where_vendor_architecture_and_compute_capability_disagree(
        vendor, family, capability, field):
    problem = architecture_problem(vendor, family, capability)
    assert problem is not None and problem[0] == field


def test_an_architecture_that_contradicts_its_compute_capability_counts_as_unknown():
    assert gpu_architecture("volta", "9.0") is None and gpu_architecture("hopper", "") is None
    assert gpu_architecture("", "") is None and gpu_architecture("cdna3", "9.4") is None


def volta_site() -> ClusterSite:
    return site("v100-site", "V100 32GB", 32_510, ["8.00", "8.00", "8.00"])


def test_a_v100_cluster_offers_no_fp8_and_no_sglang_and_the_commands_that_run_there():
    """Llama 3.1 8B at 8-bit with an 8-bit KV cache over two 8 × V100 machines: vLLM cannot run FP8 on
    Volta, so the cluster offers the 16-bit commands with --dtype half, and SGLang (sm75 and up) none."""
    two = volta_site()._replace(machine_ids=volta_site().machine_ids[:2],
                                prices_per_gpu_hour=volta_site().prices_per_gpu_hour[:2])
    plan = plan_of(LLAMA_8B, 8, 8, 8192, 4, two)
    commands = plan.commands
    assert commands.vllm == () and commands.sglang == () and commands.runs_on_gpu is False
    assert "FP8 weights on V100 32GB (Volta, compute capability 7.0)" in commands.gpu_support_text
    assert "started by the commands below" in commands.gpu_support_text
    alternative = commands.alternative
    assert (alternative.precision, alternative.kv_bits) == (16, 16)
    assert alternative.vllm[2].startswith("vllm serve meta-llama/Llama-3.1-8B --dtype half --tensor-parallel-size 8 "
                                          "--pipeline-parallel-size 2")
    assert all("fp8" not in command for command in alternative.vllm)
    assert alternative.sglang == () and "SGLang itself on V100 32GB" in alternative.sglang_note


def test_an_h100_cluster_keeps_its_fp8_commands_and_sglang():
    h100 = site("h100-site", "H100 SXM 80GB", 81_559, ["20.00", "21.00"])
    commands = plan_of(LLAMA_8B, 8, 8, 8192, 4, h100).commands
    assert commands.runs_on_gpu is True and commands.alternative is None
    assert commands.vllm[2].endswith("--kv-cache-dtype fp8 --quantization fp8 --distributed-executor-backend ray")
    assert commands.sglang[0].endswith("--kv-cache-dtype fp8_e5m2")


def test_a_cluster_need_is_the_same_whatever_the_gpu_runs():
    """The rule changes what is offered, never what a split needs."""
    need = cluster_need(LLAMA_8B, 8, 8, 8192, 4, gpus_per_machine=8, machines=2, usable_bytes=32_041 * MIB)
    assert need.fits
