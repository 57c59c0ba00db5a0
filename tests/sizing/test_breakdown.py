"""The need per GPU is exact in bytes at any size: petabyte needs (long contexts × many requests) are
valid input, and a float quotient would lose bytes past 2**53."""
from sizing.breakdown import Breakdown, Item

HUGE = 2**53 + 1  # the first integer a float cannot hold


def huge_breakdown() -> Breakdown:
    return Breakdown(
        workload="inference",
        title="huge",
        items=(Item("KV cache", "", HUGE), Item("CUDA runtime", "", 1, per_gpu=True)),
        assumptions=(),
        splittable_over_heads=4,
        split_items=(Item("buffers", "", 2),),
    )


def test_on_one_gpu_the_need_is_the_total_to_the_byte():
    breakdown = huge_breakdown()
    assert breakdown.bytes_per_gpu(1) == breakdown.total_bytes == HUGE + 1


def test_a_split_rounds_each_gpus_share_up_to_the_byte():
    # (2**53 + 1) / 4 = 2**51 + 1/4: each GPU holds 2**51 + 1 bytes of it, plus its runtime and buffers
    assert huge_breakdown().bytes_per_gpu(4) == 2**51 + 1 + 1 + 2
