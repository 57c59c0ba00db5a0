"""Fit thresholds by kind of GPU (`sizing.fit.fit_thresholds`) sized the short way, each kernel's weights and
each fabric's split once per GPU count (`VllmBreakdown.bytes_per_gpu_by_kind`, `vllm.budget_under`), held
byte for byte to the plain way: every kind's need sized on its own at every GPU count. Every catalog model
under vLLM at every precision it takes, a few contexts, request counts, releases and GPU counts, with and
without a named interconnect. Pure Python."""

from dataclasses import replace

import pytest

from catalog.data.language_models import LANGUAGE_MODELS
from sizing.breakdown import Breakdown
from sizing.calculators.vllm import budget_under, vllm_budget
from sizing.calculators.vllm_inference import estimate_vllm
from sizing.calculators.vllm_interconnect import INTERCONNECTS, NVSWITCH, PCIE, PCIE_P2P
from sizing.calculators.vllm_loading import FLASHINFER_SM100
from sizing.calculators.vllm_versions import VllmRelease, parse_version
from sizing.errors import SizingError
from sizing.fit import by_kind, fit_thresholds, thresholds_alike
from sizing.units import MIB
from tests.accuracy.vllm_startup import language_spec

SLUGS = [row["slug"] for row in LANGUAGE_MODELS]
PRECISIONS = (4, 8, 16)
# (context, requests): the wizard's defaults, a long context, many requests.
SHAPES = ((4096, 1), (131_072, 3), (2048, 64))
# The release as asked: the default (every machine at its own GPU type's interconnect), one whose CUDA
# context is inside the budget (0.8: the context's NCCL share by fabric counts), each interconnect named.
UNNAMED = (VllmRelease(), VllmRelease(parse_version("0.8.5")))
NAMED = tuple(VllmRelease(interconnect=interconnect) for interconnect in INTERCONNECTS)
FEWER_GPUS = (1, 3)  # besides every count a machine may have: a limit below the split's first count, and one
#                      between counts


def plain_thresholds(breakdown: Breakdown, max_gpus: int, space=None) -> tuple[tuple[int, int], ...]:
    """The reference: each kind's need worked out alone (`bytes_per_gpu`) at every GPU count."""

    def alone(kind: Breakdown) -> tuple[tuple[int, int], ...]:
        pairs: list[tuple[int, int]] = []
        for gpus in range(1, max_gpus + 1):
            if kind.can_split_over(gpus):
                need_mib = -(-kind.bytes_per_gpu(gpus) // MIB)
                if not pairs or need_mib < pairs[-1][1]:
                    pairs.append((gpus, need_mib))
        return tuple(pairs)

    own = breakdown.kind_space()
    space = own if space is None else space
    if not space:
        return alone(breakdown)
    kinds = breakdown.gpu_kinds()
    return by_kind(tuple(alone(kinds[own.index(*space.places(kind))]) for kind in range(space.size)))


def needs(slug: str, releases: tuple[VllmRelease, ...], shapes: tuple[tuple[int, int], ...] = SHAPES):
    """Every need of `slug` under vLLM the releases and shapes give, at each precision it takes."""
    spec = language_spec(slug)
    for precision in PRECISIONS:
        for release in releases:
            for context, requests in shapes:
                try:
                    yield estimate_vllm(spec, precision, min(context, spec.longest_context or context), requests,
                                        release=release)
                except SizingError:  # a precision or release the model is not offered in
                    continue


@pytest.mark.parametrize("slug", SLUGS)
def test_thresholds_by_kind_are_the_plain_sizing_of_every_kind(slug):
    sized = 0
    for breakdown in needs(slug, UNNAMED):
        assert fit_thresholds(breakdown) == plain_thresholds(breakdown, 16), (breakdown.title, breakdown.release)
        sized += 1
    for breakdown in needs(slug, UNNAMED[:1], SHAPES[:1]):
        for max_gpus in FEWER_GPUS:
            assert fit_thresholds(breakdown, max_gpus) == plain_thresholds(breakdown, max_gpus), (
                breakdown.title, max_gpus)
        counts = [gpus for gpus in range(1, 17) if breakdown.can_split_over(gpus)]
        assert breakdown.bytes_per_gpu_by_kind(counts) == Breakdown.bytes_per_gpu_by_kind(breakdown, counts)
    for breakdown in needs(slug, NAMED, SHAPES[:2]):
        assert fit_thresholds(breakdown) == plain_thresholds(breakdown, 16), (breakdown.title, breakdown.release)
        sized += 1
    assert sized


@pytest.mark.parametrize("slug", ["gpt-oss-120b", "gpt-oss-20b"])
def test_mxfp4_needs_are_sized_by_kernel_and_fabric_and_read_alike_in_a_wider_space(slug):
    spec = language_spec(slug)
    four = estimate_vllm(spec, 4, 4096, 1)
    sixteen = estimate_vllm(spec, 16, 4096, 1)
    named = estimate_vllm(spec, 4, 4096, 1, release=VllmRelease(interconnect=PCIE_P2P))
    assert (four.kind_space().kernels, four.kind_space().fabrics) == (3, 3)
    assert (sixteen.kind_space().kernels, named.kind_space().fabrics) == (1, 1)
    space = four.kind_space()
    assert thresholds_alike([sixteen, four, named]) == (
        plain_thresholds(sixteen, 16, space), plain_thresholds(four, 16, space), plain_thresholds(named, 16, space))


@pytest.mark.parametrize("version", ["0.8.5", "0.15.0", "0.31.0"])
@pytest.mark.parametrize("gpus", [1, 2, 8])
def test_a_budget_under_another_interconnect_is_the_budget_sized_under_it(version, gpus):
    """Every item, words included: kept from the kernel's budget, or taken from another kernel's."""
    breakdown = estimate_vllm(language_spec("gpt-oss-120b"), 4, 8192, 2,
                              release=VllmRelease(parse_version(version)))
    spec, precision, kv_bits = breakdown.spec, 4, breakdown.kv_bits
    marlin = breakdown.settings(gpus)
    flashinfer = replace(marlin, moe_kernel=FLASHINFER_SM100)
    sized = vllm_budget(spec, precision, kv_bits, marlin)
    other_kernel = vllm_budget(spec, precision, kv_bits, flashinfer)
    for interconnect in (NVSWITCH, PCIE_P2P, PCIE):
        settings = replace(marlin, interconnect=interconnect)
        like = vllm_budget(spec, precision, kv_bits, replace(flashinfer, interconnect=interconnect))
        expected = vllm_budget(spec, precision, kv_bits, settings)
        assert budget_under(sized, settings) == expected
        assert budget_under(sized, settings, like) == expected
    with pytest.raises(ValueError):
        budget_under(sized, flashinfer)  # another kernel: the weights differ
    with pytest.raises(ValueError):
        budget_under(sized, replace(marlin, interconnect=PCIE), other_kernel)  # other_kernel is on NVSwitch
