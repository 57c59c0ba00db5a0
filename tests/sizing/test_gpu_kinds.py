"""MXFP4 experts fitted at the kernel of each machine's GPU (`sizing.fit`, `Breakdown.gpu_kinds`): the
wizard's vLLM need of gpt-oss differs by kind of GPU (Marlin on Hopper and Ampere, FlashInfer on a B200,
Triton on an MI300X), each machine is fitted at its own kind's need and says which, and the thresholds
the database counts by give each kind a range of memory of its own. Its split is fitted by what each
machine's GPUs are connected by too (`sizing.kinds`): kernel k on NVSwitch is kind 3k. Pure Python."""

from fractions import Fraction

import pytest

from sizing.calculators.vllm_inference import estimate_vllm
from sizing.calculators.vllm_interconnect import INTERCONNECTS, NVSWITCH
from sizing.calculators.vllm_loading import FLASHINFER_SM100, MARLIN, MOE_KERNELS, ROCM_TRITON
from sizing.calculators.vllm_versions import VllmRelease
from sizing.engine_support import gpu_architecture
from sizing.fit import (
    KIND_MEMORY_STEP,
    NO_FIT_GPUS,
    FitPlanner,
    band_of,
    fit_thresholds,
    gpus_used_by_thresholds,
    is_by_kind,
    kind_memory,
    lowest_memory,
    thresholds_alike,
)
from sizing.kinds import KindSpace
from sizing.units import MIB
from tests.accuracy.vllm_startup import language_spec
from tests.factories import offer

GPT_OSS_120B = language_spec("gpt-oss-120b")
# gpt-oss-120b at 131,072 tokens × 19 requests within gpu_memory_utilization 0.9: one GPU needs 181,253 MiB
# through Marlin, 184,315 MiB through FlashInfer and 178,319 MiB through Triton on ROCm; two GPUs 95,553 MiB
# through Marlin or FlashInfer (an expert width of 1,440 pads to 1,536 alike) and 94,022 MiB through Triton.
UTILIZATION = Fraction(9, 10)
NINETEEN = estimate_vllm(GPT_OSS_120B, 4, 131_072, 19, utilization=UTILIZATION)
B200_MIB, MI300X_MIB = 183_359, 196_288
KINDS = {"hopper": ("hopper", "9.0"), "b200": ("blackwell", "10.0"), "mi300x": ("cdna3", "")}
NAMES = {"hopper": "H100 SXM 80GB", "b200": "B200", "mi300x": "MI300X"}
# Every kernel and every interconnect: nine kinds, the kernel's place times three plus the interconnect's.
EVERY_KIND = KindSpace(len(MOE_KERNELS), len(INTERCONNECTS))


def on_nvswitch(breakdown):
    """The kinds of `breakdown` on NVSwitch, one per kernel (Marlin's, FlashInfer's, Triton's)."""
    kinds = breakdown.gpu_kinds()
    return tuple(kinds[EVERY_KIND.index(kernel, 0)] for kernel in range(len(MOE_KERNELS)))


def need_mib(breakdown, gpus):
    return -(-breakdown.bytes_per_gpu(gpus) // MIB)


def machine(kind, memory_mib, free_gpus=8):
    family, capability = KINDS[kind]
    return offer(
        memory_per_gpu_mib=memory_mib,
        free_gpus=free_gpus,
        gpu_architecture=family,
        gpu_compute_capability=capability,
        gpu_type=NAMES[kind],
    )


def test_the_need_of_mxfp4_experts_differs_by_the_kernel_of_the_gpu():
    assert NINETEEN.kind_space() == EVERY_KIND and len(NINETEEN.gpu_kinds()) == 9
    marlin, flashinfer, rocm = on_nvswitch(NINETEEN)
    assert marlin is NINETEEN and (flashinfer.moe_kernel, rocm.moe_kernel) == (FLASHINFER_SM100, ROCM_TRITON)
    assert [need_mib(kind, 1) for kind in (marlin, flashinfer, rocm)] == [181_253, 184_315, 178_319]
    assert [need_mib(kind, 2) for kind in (marlin, flashinfer, rocm)] == [95_553, 95_553, 94_022]
    assert [NINETEEN.gpu_kind(gpu_architecture(*KINDS[kind]), NVSWITCH) for kind in KINDS] == [0, 3, 6]
    assert NINETEEN.gpu_kind(None, NVSWITCH) == MOE_KERNELS.index(MARLIN) == 0


def test_a_b200_whose_memory_holds_the_marlin_need_but_not_its_own_uses_two_gpus():
    """183,359 MiB holds Marlin's 181,253 on one GPU but not FlashInfer's 184,315: a B200 takes two."""
    planner = FitPlanner(NINETEEN)
    hopper_sized = machine("hopper", B200_MIB)
    b200 = machine("b200", B200_MIB)
    assert planner.fit_offer(hopper_sized).gpus_used == 1
    fit = planner.fit_offer(b200)
    assert fit.gpus_used == 2 and fit.need_per_gpu_bytes == on_nvswitch(NINETEEN)[1].bytes_per_gpu(2)
    assert "MXFP4 experts through FlashInfer MXFP4 (compute capability 10)" in fit.why_gpus
    assert planner.fit_offer(machine("b200", B200_MIB, free_gpus=1)) is None


def test_an_mi300x_holds_on_one_gpu_what_marlin_needs_two_for():
    """At 22 requests Marlin needs 197,590 MiB on one GPU, more than an MI300X's 196,288; Triton on ROCm
    needs 194,656, which it holds."""
    twenty_two = estimate_vllm(GPT_OSS_120B, 4, 131_072, 22, utilization=UTILIZATION)
    marlin, _, rocm = on_nvswitch(twenty_two)
    assert need_mib(rocm, 1) <= MI300X_MIB < need_mib(marlin, 1)
    planner = FitPlanner(twenty_two)
    assert planner.fit_offer(machine("mi300x", MI300X_MIB)).gpus_used == 1
    assert planner.fit_offer(machine("hopper", MI300X_MIB)).gpus_used == 2
    assert "Triton on ROCm" in planner.fit_offer(machine("mi300x", MI300X_MIB)).why_gpus


@pytest.mark.parametrize("kind", range(9))
def test_the_thresholds_by_kind_decide_what_the_planner_of_each_kind_decides(kind):
    """Every memory at and around every kind's thresholds, every free-GPU count: the database's rule (the
    first pair a machine's memory, raised by its kind, reaches) and the planner agree."""
    thresholds = fit_thresholds(NINETEEN)
    assert is_by_kind(thresholds)
    planner = FitPlanner(NINETEEN).of_kind(kind)
    memories = {need % KIND_MEMORY_STEP + step for _, need in thresholds for step in (-1, 0, 1)}
    for memory in sorted(m for m in memories if 0 < m < 2**31):
        for free in (1, 2, 3, 4, 8, 16):
            fit = planner.fit(memory, free)
            expected = None if fit is None else fit.gpus_used
            assert gpus_used_by_thresholds(thresholds, kind_memory(memory, kind), free) == expected, (
                memory,
                free,
            )


def test_each_kinds_range_is_closed_by_a_pair_no_machine_uses():
    thresholds = fit_thresholds(NINETEEN)
    closers = [index for index, (gpus, _) in enumerate(thresholds) if gpus == NO_FIT_GPUS]
    assert [thresholds[index][1] for index in closers] == [k * KIND_MEMORY_STEP for k in range(8, 0, -1)]
    assert (
        band_of(thresholds, kind_memory(1, 2), 16) is None
    )  # below every kind-2 pair: no fit, never kind 1's
    assert lowest_memory(thresholds) == min(need_mib(kind, 16) for kind in NINETEEN.gpu_kinds())


def test_a_need_that_holds_on_every_gpu_keeps_its_plain_thresholds_and_is_written_alike_beside_one_by_kind():
    sixteen = estimate_vllm(GPT_OSS_120B, 16, 8192, 1, release=VllmRelease(interconnect=NVSWITCH))
    plain = fit_thresholds(sixteen)
    assert sixteen.gpu_kinds() == (sixteen,) and not is_by_kind(plain)
    assert all(need < KIND_MEMORY_STEP for _, need in plain)
    same, by_kind = thresholds_alike([sixteen_plain := estimate_vllm(
        GPT_OSS_120B, 16, 8192, 1, release=VllmRelease(interconnect=NVSWITCH)), NINETEEN])
    assert fit_thresholds(sixteen_plain) == plain
    assert is_by_kind(same) and by_kind == fit_thresholds(NINETEEN)
    for kind in range(9):
        for _, need in plain:
            assert gpus_used_by_thresholds(same, kind_memory(need, kind), 16) == gpus_used_by_thresholds(
                plain, need, 16
            )
    assert thresholds_alike([sixteen_plain]) == (plain,)


def test_the_breakdown_names_the_kernel_it_assumes_and_what_the_others_hold():
    words = next(line for line in NINETEEN.assumptions if "MXFP4 experts" in line)
    assert "through the Marlin kernel" in words and "a B200 (FlashInfer" in words and "an MI300X" in words
    assert "Marlin" in NINETEEN.items[0].formula
    assert Fraction(on_nvswitch(NINETEEN)[1].budget(1).weights.bytes, NINETEEN.budget(1).weights.bytes) > 1
