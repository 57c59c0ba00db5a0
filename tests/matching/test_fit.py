"""When a workload fits on a machine: one GPU, or the fewest GPUs tensor parallelism allows (SPEC §4)."""

import pytest

from sizing.fit import TIGHT_HEADROOM_FRACTION, fit_on_machine
from sizing.units import GIB, MIB
from tests.factories import (
    CARD_48GB_MIB,
    H200_MIB,
    RTX_4090_MIB,
    T4_MIB,
    fixed_need,
    llama_8b,
    llama_70b,
    offer,
)


def test_llama_8b_at_16_bit_fits_one_24_gib_gpu_but_not_a_16_gib_one():
    breakdown = llama_8b()
    assert round(breakdown.total_gib, 2) == 19.55

    fit = fit_on_machine(breakdown, offer(memory_per_gpu_mib=RTX_4090_MIB, free_gpus=1))
    assert fit is not None
    assert fit.gpus_used == 1
    assert fit.why_gpus == "one GPU holds it"
    assert fit.need_per_gpu_bytes == breakdown.total_bytes
    assert fit.memory_per_gpu_bytes == RTX_4090_MIB * MIB
    assert fit.headroom_bytes == RTX_4090_MIB * MIB - breakdown.total_bytes
    assert fit.headroom_fraction == pytest.approx(fit.headroom_bytes / (RTX_4090_MIB * MIB))
    # An 8B model has 32 heads, but splitting is only for what one GPU cannot hold.
    assert fit_on_machine(breakdown, offer(memory_per_gpu_mib=RTX_4090_MIB, free_gpus=8)).gpus_used == 1


def test_a_16_gib_gpu_gets_the_8b_model_only_by_splitting():
    fit = fit_on_machine(llama_8b(), offer(memory_per_gpu_mib=T4_MIB, free_gpus=4))
    assert fit is not None and fit.gpus_used == 2


def test_llama_70b_at_16_bit_lands_on_two_h200s():
    fit = fit_on_machine(llama_70b(), offer(memory_per_gpu_mib=H200_MIB, free_gpus=8))
    assert fit.gpus_used == 2
    assert fit.why_gpus.startswith("split over 2 GPUs by tensor parallelism: 64 attention heads divide by 2")
    assert "one GPU would need 160.20 GiB, more than 140.40 GiB" in fit.why_gpus


def test_llama_70b_at_16_bit_lands_on_four_48_gb_cards_skipping_three():
    fit = fit_on_machine(llama_70b(), offer(memory_per_gpu_mib=CARD_48GB_MIB, free_gpus=8))
    assert fit.gpus_used == 4
    assert "64 attention heads divide by 4" in fit.why_gpus
    assert "2 GPUs would need 80.60 GiB each" in fit.why_gpus
    assert "more than 47.99 GiB" in fit.why_gpus
    assert "3 GPUs skipped: 64 heads not divisible by 3" in fit.why_gpus
    assert fit.need_per_gpu_bytes == llama_70b().bytes_per_gpu(4)


def test_three_free_48_gb_cards_cannot_hold_llama_70b():
    assert fit_on_machine(llama_70b(), offer(memory_per_gpu_mib=CARD_48GB_MIB, free_gpus=3)) is None


@pytest.mark.parametrize(
    "memory_mib", [T4_MIB, RTX_4090_MIB, 32_607, 40_960, CARD_48GB_MIB, 81_559, H200_MIB]
)
@pytest.mark.parametrize("free_gpus", range(1, 9))
def test_llama_70b_never_lands_on_a_gpu_count_that_does_not_divide_its_heads(memory_mib, free_gpus):
    fit = fit_on_machine(llama_70b(), offer(memory_per_gpu_mib=memory_mib, free_gpus=free_gpus))
    if fit is not None:
        assert fit.gpus_used not in (3, 5, 6, 7)
        assert 64 % fit.gpus_used == 0
        assert fit.gpus_used <= free_gpus
        assert fit.need_per_gpu_bytes <= memory_mib * MIB


def test_free_gpus_limit_the_split():
    breakdown = llama_70b()
    assert fit_on_machine(breakdown, offer(memory_per_gpu_mib=RTX_4090_MIB, free_gpus=8)).gpus_used == 8
    assert fit_on_machine(breakdown, offer(memory_per_gpu_mib=RTX_4090_MIB, free_gpus=7)) is None
    assert fit_on_machine(breakdown, offer(memory_per_gpu_mib=CARD_48GB_MIB, free_gpus=4)).gpus_used == 4


def test_no_free_gpu_means_no_fit_even_for_a_tiny_need():
    assert fit_on_machine(fixed_need(1), offer(free_gpus=0, gpu_count=8)) is None


def test_unknown_memory_means_no_fit():
    assert fit_on_machine(fixed_need(1), offer(memory_per_gpu_mib=None)) is None


def test_workloads_checked_on_one_gpu_only_are_never_split():
    image = fixed_need(30, workload="image", precision=16)
    assert fit_on_machine(image, offer(memory_per_gpu_mib=RTX_4090_MIB, free_gpus=8)) is None
    assert fit_on_machine(image, offer(memory_per_gpu_mib=CARD_48GB_MIB, free_gpus=8)).gpus_used == 1


def test_a_need_equal_to_the_memory_fits_with_zero_headroom():
    fit = fit_on_machine(fixed_need(24), offer(memory_per_gpu_mib=24 * 1024, free_gpus=1))
    assert fit.gpus_used == 1
    assert fit.headroom_bytes == 0
    assert fit.tight


def test_tight_means_under_ten_percent_of_the_gpus_memory_free():
    memory = 40 * GIB
    just_tight = fixed_need(40 * (1 - TIGHT_HEADROOM_FRACTION) + 0.01)
    ample = fixed_need(40 * (1 - TIGHT_HEADROOM_FRACTION) - 0.01)
    assert fit_on_machine(just_tight, offer(memory_per_gpu_mib=memory // MIB)).tight
    assert not fit_on_machine(ample, offer(memory_per_gpu_mib=memory // MIB)).tight
