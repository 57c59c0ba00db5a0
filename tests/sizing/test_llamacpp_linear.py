"""Linear attention (Qwen3-Next's Gated DeltaNet) as a GGUF file and llama.cpp's hybrid memory: the tensors
llama.cpp's converter writes for the qwen3next architecture, typed as its quantizer types them, against the
parameter count and a published file; the KV cache of the full-attention layers beside the recurrent state
of the others, counted by hand; the compute buffer's walk of a Gated DeltaNet layer; Ollama's checkpoints.
Kimi-Linear's Kimi Delta Attention: test_llamacpp_kimi."""
from dataclasses import replace

import pytest

from sizing.architectures import count_parameters
from sizing.calculators.llamacpp import (
    OLLAMA_STATE_CHECKPOINTS,
    LlamaCppSettings,
    cache_cells,
    kv_cache_bytes,
    llamacpp_need,
    wizard_settings,
)
from sizing.calculators.llamacpp_builds import parse_build, parse_ollama_version
from sizing.calculators.llamacpp_graph import DeltaNetShape, delta_net_layer_bytes
from sizing.errors import SizingError
from sizing.gguf import GGML_TYPES, gguf_weights, model_tensors
from sizing.units import GIB, MIB
from tests.accuracy.vllm_startup import language_spec

NEXT = language_spec("qwen3-next-80b-a3b")
LAYERS, LINEAR_LAYERS, ATTENTION_LAYERS = 48, 36, 12
# One sequence's state in one Gated DeltaNet layer (src/llama-hparams.cpp): n_embd_r = (ssm_d_conv − 1) ×
# (ssm_d_inner + 2 × ssm_n_group × ssm_d_state) = 3 × (4096 + 2 × 16 × 128); n_embd_s = ssm_d_state ×
# ssm_d_inner = 128 × 4096; both f32.
STATE_BYTES = (3 * (4096 + 2 * 16 * 128) + 128 * 4096) * 4


def test_the_tensors_hold_every_parameter_the_catalog_counts():
    assert sum(tensor.elements for tensor in model_tensors(NEXT)) == count_parameters(NEXT).total
    assert count_parameters(NEXT).total == NEXT.parameters == 79_674_391_296


def test_every_fourth_layer_is_gated_attention_and_the_others_gated_deltanet_with_the_shared_expert():
    roles = {layer: {tensor.role for tensor in model_tensors(NEXT) if tensor.layer == layer} for layer in (0, 3)}
    deltanet = {"attn_qkv", "attn_gate", "ssm_conv1d", "ssm_dt", "ssm_a", "ssm_ba", "ssm_norm", "ssm_out"}
    assert deltanet <= roles[0] and not {"attn_q", "attn_k", "attn_v"} & roles[0]
    assert {"attn_q", "attn_k", "attn_v", "attn_output", "attn_qk_norm"} <= roles[3] and not deltanet & roles[3]
    shared = {"ffn_gate_exps", "ffn_gate_inp", "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp",
              "ffn_gate_inp_shexp"}
    assert shared <= roles[0] and shared <= roles[3]
    shapes = {tensor.role: tensor.elements for tensor in model_tensors(NEXT) if tensor.layer == 0}
    assert shapes["attn_qkv"] == 2048 * (2 * 16 * 128 + 32 * 128)  # q, k and v: what the convolution reads
    assert shapes["attn_gate"] == 2048 * 32 * 128 and shapes["ssm_ba"] == 2048 * 64
    assert shapes["ssm_conv1d"] == 4 * 8192 and shapes["ssm_dt"] == shapes["ssm_a"] == 32
    attention = {tensor.role: tensor.elements for tensor in model_tensors(NEXT) if tensor.layer == 3}
    assert attention["attn_q"] == 2048 * 2 * 16 * 256  # queries and their output gate


def test_the_q4_k_m_file_is_typed_and_sized_as_the_quantizer_writes_it_tensor_by_tensor():
    """Each tensor's bytes counted apart from ggml's block sizes: the kept ones as the converter writes them
    (convolutions, norms, routers in F32; the shared-expert gate, a [2048, 1] matrix, in 16 bits), the
    attention-V-like tensors (12 attn_v and 36 attn_qkv, in layer order) Q6_K where the more-bits rule
    picks them, the expert and shared-expert down projections of those layers Q6_K, the output head Q6_K."""
    weights = gguf_weights(NEXT, "Q4_K_M")
    by_role: dict[str, set[str]] = {}
    for typed in weights.tensors:
        by_role.setdefault(typed.tensor.role, set()).add(typed.ggml_type)
    assert by_role["ssm_conv1d"] == by_role["ssm_a"] == by_role["ffn_gate_inp"] == {"F32"}
    assert by_role["ffn_gate_inp_shexp"] == {"F16"} and by_role["output"] == {"Q6_K"}
    assert by_role["attn_gate"] == by_role["ssm_ba"] == by_role["ssm_out"] == {"Q4_K"}
    more_bits = [layer for layer in range(LAYERS) if layer < 6 or layer >= 42 or (layer - 6) % 3 == 2]
    for typed in weights.tensors:
        if typed.tensor.role in ("attn_v", "attn_qkv", "ffn_down_exps", "ffn_down_shexp"):
            assert (typed.ggml_type == "Q6_K") == (typed.tensor.layer in more_bits), typed
    by_hand = 0
    for typed in weights.tensors:
        per_block, block_bytes = GGML_TYPES[typed.ggml_type]
        by_hand += typed.tensor.elements // per_block * block_bytes
    assert weights.bytes == by_hand


def test_the_q4_k_m_file_is_within_three_percent_of_the_published_one():
    """LM Studio's load of a published Qwen3-Next-80B-A3B-Instruct Q4_K_M (lmstudio-ai/lmstudio-bug-tracker
    #1266): "file size = 45.08 GiB (4.86 BPW)". That file predates the split of ssm_in into attn_qkv and
    attn_gate, whose attn_qkv the quantizer now types as attention V: the split file sized here is larger."""
    weights = gguf_weights(NEXT, "Q4_K_M")
    assert abs(weights.bytes / GIB / 45.08 - 1) < 0.03
    assert weights.bytes / GIB > 45.08 and 4.85 < float(weights.bits_per_weight) < 4.88


def test_the_kv_cache_holds_the_full_attention_layers_and_the_recurrent_state_the_linear_ones():
    settings = LlamaCppSettings("Q4_K_M", 32768, parallel=4, cache_type_k="q8_0", cache_type_v="q8_0")
    cells = cache_cells(settings)
    attention = ATTENTION_LAYERS * cells * 2 * (512 // 32 * 34)  # 2 KV heads × 256 values, K and V in q8_0
    assert kv_cache_bytes(NEXT, settings, cells, range(LAYERS)) == attention + LINEAR_LAYERS * 4 * STATE_BYTES
    # the first GPU of two holds layers 0–23: 6 attention layers and 18 linear ones
    assert kv_cache_bytes(NEXT, settings, cells, range(24)) == attention // 2 + 18 * 4 * STATE_BYTES
    need = llamacpp_need(NEXT, settings)
    assert need.gpu_items[1].bytes == need.kv_cache_bytes == attention + LINEAR_LAYERS * 4 * STATE_BYTES
    assert "the 36 linear-attention layers keep a recurrent state" in need.gpu_items[1].formula
    assert "4 sequences × (24,576 convolution + 524,288 delta-rule values)" in need.gpu_items[1].formula


def test_the_recurrent_state_is_kept_for_each_slot_four_where_llama_server_runs_one_as_four():
    one = llamacpp_need(NEXT, wizard_settings(4, 8192, 1, 16, build=parse_build("b9500")))
    four_slots = llamacpp_need(NEXT, wizard_settings(4, 8192, 1, 16, build=parse_build("b7000")))
    recurrent = LINEAR_LAYERS * STATE_BYTES
    assert four_slots.kv_cache_bytes - one.kv_cache_bytes == 3 * recurrent
    eight = llamacpp_need(NEXT, wizard_settings(4, 8192, 8, 16, build=parse_build("b9500")))
    assert eight.kv_cache_bytes == ATTENTION_LAYERS * 8 * 8192 * 2 * 512 * 2 + 8 * recurrent


def test_ollamas_own_runners_keep_thirty_two_checkpoints_of_every_slots_state_llama_server_none():
    own = llamacpp_need(NEXT, wizard_settings(4, 8192, 2, 16, engine="ollama"))
    release = parse_ollama_version("0.31.0")  # llama-server, from 0.30.0
    server = llamacpp_need(NEXT, wizard_settings(4, 8192, 2, 16, build=release, engine="ollama"))
    recurrent = LINEAR_LAYERS * STATE_BYTES * 2
    assert own.kv_cache_bytes - server.kv_cache_bytes == OLLAMA_STATE_CHECKPOINTS * recurrent
    assert "32 checkpoints" in own.gpu_items[1].formula and "checkpoints" not in server.gpu_items[1].formula


def test_a_gated_deltanet_layers_walk_grows_with_the_micro_batch_and_the_slots_states():
    shape = DeltaNetShape(hidden=2048, key_heads=16, value_heads=32, head_dim=128, conv_kernel=4, tokens=512,
                          sequences=1, states=1)
    one = delta_net_layer_bytes(shape)
    # at least the fused projection's output and the convolution's, f32, alive together
    assert 2 * 512 * 8192 * 4 <= one < 128 * MIB
    assert delta_net_layer_bytes(replace(shape, tokens=2048)) > 3 * one
    assert delta_net_layer_bytes(replace(shape, sequences=16, states=16)) > one + 15 * 128 * 128 * 32 * 4


def test_the_compute_buffer_adds_the_gated_deltanet_walk_to_the_attention_layers():
    need = llamacpp_need(NEXT, LlamaCppSettings("Q4_K_M", 32768))
    compute = need.gpu_items[2]
    # the logits of 512 tokens alone are 151,936 × 512 × 4 bytes
    assert 151_936 * 512 * 4 < compute.bytes < 1024 * MIB
    assert "Gated DeltaNet layer's graph walked on its own" in compute.formula and "upper bound" in compute.formula
    assert need.holds(1, 80 * GIB) and not need.holds(1, 40 * GIB)


def test_a_partial_offload_keeps_the_recurrent_state_of_the_layers_left_on_the_host_there():
    need = llamacpp_need(NEXT, LlamaCppSettings("Q4_K_M", 8192, gpu_layers=8))  # layers 40–47 on the GPU
    on_gpu = 2 * 8192 * 2 * 512 * 2 + 6 * STATE_BYTES  # layers 43 and 47 attend, six are linear
    assert need.gpu_items[1].bytes == on_gpu
    assert need.host_items[1].bytes == 10 * 8192 * 2 * 512 * 2 + 30 * STATE_BYTES


def test_a_capacity_search_walks_the_gated_deltanet_layer_at_most_once_per_need_it_sizes(monkeypatch):
    """Each need of a row's two binary searches walks one Gated DeltaNet graph at most (one per micro-batch,
    slots and states), none again for a need already sized."""
    import math

    import sizing.calculators.llamacpp as llamacpp_module
    import sizing.capacity as capacity_module
    from sizing.calculators import estimate
    from sizing.limits import MAX_CONTEXT, MAX_REQUESTS

    walks, needs = [], []
    real_walk, real_need = llamacpp_module.delta_net_layer_bytes, capacity_module.llamacpp_need
    monkeypatch.setattr(llamacpp_module, "delta_net_layer_bytes", lambda shape: walks.append(shape)
                        or real_walk(shape))
    monkeypatch.setattr(capacity_module, "llamacpp_need", lambda *args: needs.append(1) or real_need(*args))
    bound = 2 * (math.ceil(math.log2(MAX_REQUESTS)) + math.ceil(math.log2(MAX_CONTEXT))) + 5
    need = estimate("inference", NEXT, 4, 8192, 2, None, 16, engine="llamacpp")
    capacity_module._gguf_need.cache_clear()
    walks.clear()
    held = need.capacity._on_machine(1, 80 * 1024 * MIB, None)
    assert held.max_requests_at_context > 0
    assert 0 < len(needs) <= bound and 0 < len(set(walks)) <= len(needs)


def test_a_llama_cpp_build_before_qwen3next_is_refused_beside_its_version_the_first_with_it_sized():
    from sizing.calculators import estimate

    with pytest.raises(SizingError) as refused:
        estimate("inference", NEXT, 4, 8192, 1, None, 16, engine="llamacpp", llamacpp_build=parse_build("b7185"))
    assert refused.value.field == "engine_version" and "from b7186" in refused.value.message
    sized = estimate("inference", NEXT, 4, 8192, 1, None, 16, engine="llamacpp", llamacpp_build=parse_build("b7186"))
    # b7186 runs -np 1 as four slots over one pool: four recurrent states
    assert sized.items[1].bytes == ATTENTION_LAYERS * 8192 * 2 * 512 * 2 + 4 * LINEAR_LAYERS * STATE_BYTES
