"""vLLM's budget (sizing.calculators.vllm): each item, the KV-cache layout, capacity and the command."""
from fractions import Fraction

import pytest

from sizing.architectures import Architecture, MoE
from sizing.calculators.vllm import (
    BLOCK_SIZE,
    NCCL_BYTES,
    NON_TORCH_BYTES,
    VllmSettings,
    kv_layout,
    model_flags,
    serve_command,
    vllm_budget,
)
from sizing.calculators.vllm_versions import parse_version
from sizing.errors import SizingError
from sizing.units import GIB
from tests.accuracy.vllm_startup import language_spec
from tests.sizing import models
from tests.sizing.models import LLAMA_3_1_8B

H100 = int(Fraction(7919, 100) * GIB)


# The start-up logs these figures are held against are vLLM 0.19's (the 0.9.2 – 0.20 rules: the CUDA
# context and graphs outside the budget); tests/sizing/test_vllm_versions.py holds the other releases.
V0_19 = parse_version("0.19")


def settings(**changes):
    values = {"gpu_memory_bytes": H100, "gpu_memory_utilization": Fraction(95, 100), "max_model_len": 8192,
              "version": V0_19}
    values.update(changes)
    return VllmSettings(**values)


# vLLM's rotary cos/sin cache of Llama 3.1 8B: 131,072 positions × 128 × 2 bytes, whole on every GPU.
LLAMA_ROTARY = 131_072 * 128 * 2


def test_weights_divide_over_the_tensor_parallel_group():
    one = vllm_budget(LLAMA_3_1_8B, 16, 16, settings())
    four = vllm_budget(LLAMA_3_1_8B, 16, 16, settings(tensor_parallel=4))
    assert one.weights.bytes == 8_030_261_248 * 2 + LLAMA_ROTARY
    assert four.weights.bytes == -(-8_030_261_248 * 2 // 4) + LLAMA_ROTARY
    assert "÷ 4 tensor-parallel GPUs" in four.weights.formula


def test_the_busiest_pipeline_stage_holds_its_share_of_layers_and_one_end():
    whole = 8_030_261_248 * 2
    ends = 128_256 * 4096 * 2
    # 32 layers over 2 stages: half the decoder and one vocabulary-sized end each, exactly half
    assert vllm_budget(LLAMA_3_1_8B, 16, 16, settings(pipeline_parallel=2)).weights.bytes == whole // 2 + LLAMA_ROTARY
    # over 3 stages the busiest holds ⌈32 ÷ 3⌉ = 11 layers
    three = vllm_budget(LLAMA_3_1_8B, 16, 16, settings(pipeline_parallel=3)).weights.bytes
    assert three == -(-((whole - 2 * ends) * 11) // 32) + ends + LLAMA_ROTARY
    # a tied head is loaded again on the last stage
    tied = vllm_budget(models.LLAMA_3_2_1B, 16, 16, settings(pipeline_parallel=2)).weights.bytes
    assert tied > 1_235_814_400 * 2 // 2


def test_online_fp8_keeps_embeddings_and_head_in_16_bit():
    fp8 = vllm_budget(LLAMA_3_1_8B, 8, 16, settings())
    embeddings = 128_256 * 4096
    assert fp8.weights.bytes == (8_030_261_248 - 2 * embeddings) + 2 * embeddings * 2 + LLAMA_ROTARY
    assert fp8.quantization == "fp8"


def test_non_torch_memory_adds_nccl_buffers_only_under_tensor_parallelism():
    assert vllm_budget(LLAMA_3_1_8B, 16, 16, settings()).non_torch.bytes == NON_TORCH_BYTES
    split = vllm_budget(LLAMA_3_1_8B, 16, 16, settings(tensor_parallel=2)).non_torch.bytes
    assert split == NON_TORCH_BYTES + NCCL_BYTES


def test_the_activation_peak_follows_the_batched_tokens_not_the_context():
    short = vllm_budget(LLAMA_3_1_8B, 16, 16, settings(max_model_len=8192)).activation.bytes
    long = vllm_budget(LLAMA_3_1_8B, 16, 16, settings(max_model_len=131_072)).activation.bytes
    assert short == long
    more = vllm_budget(LLAMA_3_1_8B, 16, 16, settings(max_num_batched_tokens=65_536)).activation.bytes
    assert more > short


def test_the_pool_is_what_the_budget_leaves_in_blocks_of_16_tokens():
    budget = vllm_budget(LLAMA_3_1_8B, 16, 16, settings())
    per_token = 2 * 32 * 8 * 128 * 2
    assert budget.kv_cache_bytes == budget.budget_bytes - budget.weights.bytes - budget.activation.bytes \
        - budget.non_torch.bytes
    assert budget.kv_cache_tokens % BLOCK_SIZE == 0
    assert budget.kv_cache_tokens == budget.kv_cache_bytes // (per_token * BLOCK_SIZE) * BLOCK_SIZE
    assert budget.max_concurrency() == Fraction(budget.num_blocks, 8192 // BLOCK_SIZE)


def test_fewer_kv_heads_than_gpus_are_copied_so_the_cache_does_not_shrink_further():
    eight = kv_layout(LLAMA_3_1_8B, 16, settings(tensor_parallel=8))
    sixteen = kv_layout(LLAMA_3_1_8B, 16, settings(tensor_parallel=16))
    assert eight.page_bytes == sixteen.page_bytes == BLOCK_SIZE * 2 * 1 * 128 * 2


def test_sliding_window_layers_form_their_own_group_and_take_a_window_plus_a_block():
    spec = LLAMA_3_1_8B.__class__(**{**LLAMA_3_1_8B.__dict__, "architecture": Architecture(
        layer_pattern="SF", sliding_window=4096)})
    layout = kv_layout(spec, 16, settings())
    assert layout.group_size == 16 and dict(layout.groups) == {"S": 1, "F": 1}
    # full group: ⌈32,768 ÷ 16⌉; sliding group: ⌈min(4,095 + 8,192, 32,768) ÷ 16⌉ + 1
    assert layout.blocks_per_request(32_768) == 2048 + (-(-12_287 // 16) + 1)


def test_gemma_2s_alternating_windows_are_two_groups_that_matter_below_8192_batched_tokens():
    """Gemma 2 9B's shipped row declares its sliding layers (every even layer, 4,096 tokens): 21 full and
    21 sliding layers, one group each. At the handed log's 8,192 tokens and 8,192 batched tokens a
    request takes 512 blocks on the full group and ⌈min(4,095 + 8,192, 8,192) ÷ 16⌉ + 1 = 513 on the
    sliding one (the log's 20.60× is 21,110 blocks ÷ 1,025); with 2,048 batched tokens the sliding group
    takes ⌈6,143 ÷ 16⌉ + 1 = 385, so the same pool holds more requests."""
    gemma = language_spec("gemma-2-9b")
    layout = kv_layout(gemma, 16, settings())
    assert layout.group_size == 21 and dict(layout.groups) == {"S": 1, "F": 1}
    assert layout.blocks_per_request(8192) == 512 + 513
    smaller = kv_layout(gemma, 16, settings(max_num_batched_tokens=2048))
    assert smaller.blocks_per_request(8192) == 512 + 385
    assert smaller.blocks_per_request(4096) == layout.blocks_per_request(4096) == 256 + 257
    budget = vllm_budget(gemma, 16, 16, settings())
    assert budget.max_concurrency(8192) == Fraction(budget.num_blocks, 1025)


def test_capacity_answers_both_questions_consistently():
    budget = vllm_budget(LLAMA_3_1_8B, 16, 16, settings(max_model_len=131_072))
    most = budget.max_requests_at_context(8192)
    assert most == budget.num_blocks // 512
    longest = budget.max_context_at_requests(most)
    assert longest >= 8192
    assert budget.max_requests_at_context(longest) >= most
    assert budget.max_requests_at_context(longest + BLOCK_SIZE) < most or longest == 131_072
    assert budget.max_context_at_requests(1) == 131_072  # capped by max_model_len


def test_the_fit_rule_is_the_budget_and_names_what_fails():
    budget = vllm_budget(LLAMA_3_1_8B, 16, 16, settings())
    most = budget.max_requests_at_context(8192)
    assert budget.fit(8192, most) == (True, None)
    fits, reason = budget.fit(8192, most + 1)
    assert not fits and "budget" in reason
    tiny = vllm_budget(LLAMA_3_1_8B, 16, 16, settings(gpu_memory_bytes=16 * GIB))
    fits, reason = tiny.fit(8192, 1)
    assert not fits and "nothing" in reason


def test_a_utilization_near_1_leaves_no_room_for_the_context_and_graphs():
    budget = vllm_budget(LLAMA_3_1_8B, 16, 16, settings(gpu_memory_utilization=Fraction(999, 1000)))
    fits, reason = budget.fit(1024, 1)
    assert not fits and "CUDA graphs" in reason


def test_moe_activation_counts_the_fused_kernel_buffers_of_each_routed_expert():
    moe = LLAMA_3_1_8B.__class__(**{**LLAMA_3_1_8B.__dict__, "architecture": Architecture(
        moe=MoE(experts=8, experts_per_token=2, expert_intermediate=14336))})
    dense = vllm_budget(LLAMA_3_1_8B, 16, 16, settings(max_num_seqs=1)).activation
    routed = vllm_budget(moe, 16, 16, settings(max_num_seqs=1)).activation
    assert routed.bytes > dense.bytes and "2 experts" in routed.formula


def test_the_command_carries_every_flag_that_changes_memory():
    budget = vllm_budget(LLAMA_3_1_8B, 4, 8, settings(tensor_parallel=2, pipeline_parallel=2,
                                                      max_num_batched_tokens=4096))
    assert serve_command("meta-llama/Llama-3.1-8B", budget, max_num_seqs=4) == (
        "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2 --pipeline-parallel-size 2 "
        "--max-model-len 8192 --max-num-seqs 4 --gpu-memory-utilization 0.95 --max-num-batched-tokens 4096 "
        "--kv-cache-dtype fp8 --quantization bitsandbytes"
    )


def test_latent_layers_among_kimi_delta_layers_cache_per_token_and_keep_a_state_per_request():
    """Kimi-Linear over 2 GPUs: its 7 latent layers form one group of 16-token blocks of 576 values, whole
    on every GPU (16 × 576 × 2 = 18,432 bytes per block and layer); its 20 KDA layers keep, per request,
    (3 × 12,288 conv values ÷ 2 × 2 bytes + 32 ÷ 2 heads × 128 × 128 × 4 bytes) × 20 = 21,708,800 bytes.
    Its repository's tokenizer is code: the command carries --trust-remote-code."""
    kimi = language_spec("kimi-linear-48b-a3b")
    budget = vllm_budget(kimi, 16, 16, settings(tensor_parallel=2))
    layout = budget.layout
    assert (layout.page_bytes, layout.group_size, layout.groups) == (18_432, 7, (("F", 1),))
    assert layout.state_bytes_per_request == 21_708_800
    assert layout.request_bytes(32_768) == 2_048 * 7 * 18_432 + 21_708_800
    command = serve_command(kimi.hf_id or "", budget, model_flags=model_flags(kimi))
    assert command.startswith("vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct --trust-remote-code ")
    assert model_flags(LLAMA_3_1_8B) == ()


@pytest.mark.parametrize(("changes", "field"), [
    ({"tensor_parallel": 3}, "tensor_parallel"),
    ({"tensor_parallel": 0}, "tensor_parallel"),
    ({"pipeline_parallel": 33}, "pipeline_parallel"),
    ({"gpu_memory_utilization": Fraction(0)}, "gpu_memory_utilization"),
    ({"gpu_memory_utilization": Fraction(11, 10)}, "gpu_memory_utilization"),
    ({"max_model_len": 200_000}, "max_model_len"),
    ({"max_num_batched_tokens": 0}, "max_num_batched_tokens"),
    ({"max_num_seqs": 0}, "max_num_seqs"),
    ({"gpu_memory_bytes": 0}, "gpu_memory_gib"),
])
def test_what_vllm_refuses_is_refused_naming_the_field(changes, field):
    with pytest.raises(SizingError) as refused:
        vllm_budget(LLAMA_3_1_8B, 16, 16, settings(**changes))
    assert refused.value.field == field
