"""Kimi-Linear under llama.cpp and Ollama (the kimi-linear architecture): the tensors llama.cpp's converter
writes, latent attention among Kimi Delta Attention layers, typed as its quantizer types them, against the
parameter count and published files; the latent cache of the 7 latent layers beside the recurrent state of
the 20 KDA layers, counted by hand; the KDA layer's walk in the compute buffer; the builds and Ollama
releases that do not load it, refused beside engine_version."""
from dataclasses import replace

import pytest

from catalog.data.modern_models import PUBLISHED_CHECKS
from sizing.architectures import count_parameters
from sizing.calculators import estimate
from sizing.calculators.llamacpp import (
    LlamaCppSettings,
    cache_cells,
    kv_cache_bytes,
    llamacpp_need,
    wizard_settings,
)
from sizing.calculators.llamacpp_builds import KIMI_DELTA_AFTER, NOT_GIVEN, parse_build, parse_ollama_version
from sizing.calculators.llamacpp_graph import DeltaNetShape, delta_net_layer_bytes, kda_layer_bytes
from sizing.errors import SizingError
from sizing.gguf import gguf_weights, model_tensors
from sizing.units import GIB, MIB
from tests.accuracy.vllm_startup import language_spec

KIMI = language_spec("kimi-linear-48b-a3b")
LAYERS, KDA_LAYERS, LATENT_LAYERS = 27, 20, 7
LATENT = (3, 7, 11, 15, 19, 23, 26)  # full_attn_layers 4, 8, …, 24 and 27, 1-based
# One sequence's state in one KDA layer (src/llama-hparams.cpp, its n_embd_head_kda branches): n_embd_r =
# 3 × (ssm_d_conv − 1) × n_head × head_dim (q, k and v each convolved) = 3 × 3 × 32 × 128; n_embd_s =
# head_dim² × n_head = 128 × 128 × 32; both f32.
STATE_BYTES = (3 * 3 * 32 * 128 + 128 * 128 * 32) * 4
# ggml's blocks (ggml.c type_traits), written out here apart from the sizing's own table.
BLOCKS = {"F32": (1, 4), "Q4_K": (256, 144), "Q5_0": (32, 22), "Q6_K": (256, 210)}


def test_the_tensors_hold_every_parameter_the_catalog_counts_and_leave_out_the_routing_biases():
    """The file also carries each MoE layer's ffn_exp_probs_b (256 F32 values, e_score_correction_bias): the
    checkpoint's index counts them, the catalog does not (a buffer), and neither do the tensors sized."""
    elements = sum(tensor.elements for tensor in model_tensors(KIMI))
    assert elements == count_parameters(KIMI).total == KIMI.parameters == 49_122_675_072
    published = PUBLISHED_CHECKS["kimi-linear-48b-a3b"][0]
    assert published - elements == (LAYERS - 1) * 256


def test_three_kda_layers_to_one_latent_layer_the_first_dense():
    roles = {layer: {tensor.role for tensor in model_tensors(KIMI) if tensor.layer == layer}
             for layer in range(LAYERS)}
    kda = {"attn_q", "attn_k", "attn_v", "ssm_conv1d_q", "ssm_conv1d_k", "ssm_conv1d_v", "ssm_f_a", "ssm_f_b",
           "ssm_dt", "ssm_a", "ssm_beta", "ssm_g_a", "ssm_g_b", "ssm_norm", "attn_output"}
    latent = {"attn_q", "attn_kv_a_mqa", "attn_kv_a_norm", "attn_k_b", "attn_v_b", "attn_output"}
    assert [layer for layer in range(LAYERS) if latent <= roles[layer]] == list(LATENT)
    assert all(kda <= roles[layer] and "attn_k_b" not in roles[layer]
               for layer in range(LAYERS) if layer not in LATENT)
    assert {"ffn_gate", "ffn_up", "ffn_down"} <= roles[0] and "ffn_gate_exps" not in roles[0]
    experts = {"ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps", "ffn_gate_shexp", "ffn_up_shexp",
               "ffn_down_shexp"}
    assert all(experts <= roles[layer] for layer in range(1, LAYERS))
    shapes = {tensor.role: tensor.elements for tensor in model_tensors(KIMI) if tensor.layer == 0}
    assert shapes["attn_q"] == shapes["attn_v"] == 2304 * 4096 and shapes["ssm_conv1d_q"] == 4 * 4096
    assert shapes["ssm_f_a"] == shapes["ssm_g_a"] == 2304 * 128 and shapes["ssm_f_b"] == 128 * 4096
    assert shapes["ssm_dt"] == 4096 and shapes["ssm_a"] == 32 and shapes["ssm_beta"] == 2304 * 32
    assert shapes["ffn_down"] == 9216 * 2304
    latent_shapes = {tensor.role: tensor.elements for tensor in model_tensors(KIMI) if tensor.layer == 3}
    assert latent_shapes["attn_q"] == 2304 * 32 * 192 and latent_shapes["attn_kv_a_mqa"] == 2304 * 576
    assert latent_shapes["attn_k_b"] == latent_shapes["attn_v_b"] == 32 * 128 * 512


def test_the_q4_k_m_file_is_typed_and_sized_as_the_quantizer_writes_it_tensor_by_tensor():
    """The convolutions, norms, biases, A and the routers kept F32; the bottlenecks' second halves (rows of
    128) and attn_k_b fall back from Q4_K to Q5_0; the 20 attn_v (the only attention-V tensors: n_gqa() is 0,
    layer 0 being a KDA layer) Q6_K where the more-bits rule picks their index among 20; the down projections
    Q6_K in the layers it picks among 27; the output head Q6_K. Each tensor's bytes counted by hand."""
    weights = gguf_weights(KIMI, "Q4_K_M")
    by_role: dict[str, set[str]] = {}
    for typed in weights.tensors:
        by_role.setdefault(typed.tensor.role, set()).add(typed.ggml_type)
    for kept in ("ssm_conv1d_q", "ssm_conv1d_v", "ssm_dt", "ssm_a", "ssm_norm", "ffn_gate_inp", "attn_kv_a_norm"):
        assert by_role[kept] == {"F32"}, kept
    assert by_role["ssm_f_b"] == by_role["ssm_g_b"] == by_role["attn_k_b"] == {"Q5_0"}
    assert by_role["ssm_f_a"] == by_role["ssm_beta"] == by_role["attn_v_b"] == {"Q4_K"}
    assert by_role["output"] == {"Q6_K"} and by_role["token_embd"] == {"Q4_K"}
    values = [typed for typed in weights.tensors if typed.tensor.role == "attn_v"]
    assert len(values) == KDA_LAYERS
    more_v = [index for index in range(20) if index < 2 or index >= 17 or (index - 2) % 3 == 2]
    assert [index for index, typed in enumerate(values) if typed.ggml_type == "Q6_K"] == more_v
    more_down = [layer for layer in range(LAYERS) if layer < 3 or layer >= 23 or (layer - 3) % 3 == 2]
    for typed in weights.tensors:
        if typed.tensor.role.startswith("ffn_down"):
            assert (typed.ggml_type == "Q6_K") == (typed.tensor.layer in more_down), typed
    by_hand = sum(typed.tensor.elements // BLOCKS[typed.ggml_type][0] * BLOCKS[typed.ggml_type][1]
                  for typed in weights.tensors)
    assert weights.bytes == by_hand == 29_695_783_424


@pytest.mark.parametrize(("quant_type", "published_gb"), [("Q4_K_M", 29.70), ("Q5_K_M", 34.87),
                                                          ("MXFP4_MOE", 27.21)])
def test_the_files_are_within_three_percent_of_the_published_ones(quant_type, published_gb):
    """ymcki/Kimi-Linear-48B-A3B-Instruct-GGUF (the author of ggml-org/llama.cpp#18755) lists its files:
    Q4_K_M 29.70 GB, Q5_K_M 34.87 GB, MXFP4_MOE 27.21 GB (decimal gigabytes, as Hugging Face shows them)."""
    found = gguf_weights(KIMI, quant_type).bytes / 1e9
    assert abs(found / published_gb - 1) < 0.03


def test_the_cache_holds_the_latent_layers_and_the_recurrent_state_the_kda_ones():
    """The 7 latent layers keep 576 values a token in K (and, before the V-less cache, the latent's 512 again
    in V), f16; the 20 KDA layers a state per slot in f32, whatever the cache type."""
    settings = LlamaCppSettings("Q4_K_M", 32768, parallel=2, cache_type_k="q8_0", latent_values=False)
    cells = cache_cells(settings)
    latent = LATENT_LAYERS * cells * 576 // 32 * 34
    assert kv_cache_bytes(KIMI, settings, cells, range(LAYERS)) == latent + KDA_LAYERS * 2 * STATE_BYTES
    # layers 0–13: 3 latent layers and 11 KDA ones
    assert kv_cache_bytes(KIMI, settings, cells, range(14)) == 3 * cells * 576 // 32 * 34 + 11 * 2 * STATE_BYTES
    old = llamacpp_need(KIMI, wizard_settings(4, 8192, 1, 16, build=parse_build("b8000")))
    assert old.kv_cache_bytes == LATENT_LAYERS * 8192 * (576 + 512) * 2 + KDA_LAYERS * STATE_BYTES
    new = llamacpp_need(KIMI, wizard_settings(4, 8192, 1, 16, build=parse_build("b9500")))
    assert new.kv_cache_bytes == LATENT_LAYERS * 8192 * 576 * 2 + KDA_LAYERS * STATE_BYTES
    words = new.gpu_items[1].formula
    assert "the 20 linear-attention layers keep a recurrent state" in words
    assert "1 sequence × (36,864 convolution + 524,288 delta-rule values)" in words
    assert "64 dims sized for a rotary embedding, cached unrotated" in words


def test_a_kda_layers_walk_holds_its_per_channel_decay_mask_and_grows_with_the_micro_batch():
    """The decay mask of 16 × 16 values per key channel, chunk and head is 16 × 512 × 4,096 × 4 bytes at 512
    tokens (128 MiB), several alive at once; a Gated DeltaNet walk of the same widths holds far less."""
    shape = DeltaNetShape(hidden=2304, key_heads=32, value_heads=32, head_dim=128, conv_kernel=4, tokens=512,
                          sequences=1, states=1, per_channel_gate=True)
    one = kda_layer_bytes(shape)
    assert 2 * 128 * MIB <= one < GIB
    assert one > 2 * delta_net_layer_bytes(replace(shape, per_channel_gate=False))
    assert kda_layer_bytes(replace(shape, tokens=1024)) > 1.8 * one
    assert kda_layer_bytes(replace(shape, sequences=4, states=4, tokens=512)) > one


def test_the_compute_buffer_adds_the_kda_walk_to_the_latent_layers_and_says_it_is_a_bound():
    need = llamacpp_need(KIMI, wizard_settings(4, 32768, 1, 16, build=parse_build("b9500")))
    compute = need.gpu_items[2]
    shape = DeltaNetShape(hidden=2304, key_heads=32, value_heads=32, head_dim=128, conv_kernel=4, tokens=512,
                          sequences=1, states=1, per_channel_gate=True)
    assert kda_layer_bytes(shape) < compute.bytes < kda_layer_bytes(shape) + 512 * MIB
    assert "Kimi Delta Attention layer's graph walked on its own" in compute.formula
    assert "upper bound" in compute.formula and "Gated DeltaNet" not in compute.formula
    assert need.holds(1, 40 * GIB) and not need.holds(1, 24 * GIB)


def test_a_llama_cpp_build_without_kimi_linear_is_refused_beside_its_version_a_later_one_sized():
    with pytest.raises(SizingError) as refused:
        estimate("inference", KIMI, 4, 8192, 1, None, 16, engine="llamacpp",
                 llamacpp_build=parse_build(f"b{KIMI_DELTA_AFTER}"))
    assert refused.value.field == "engine_version" and "kimi-linear" in refused.value.message
    assert "#18755" in refused.value.message
    sized = estimate("inference", KIMI, 4, 8192, 1, None, 16, engine="llamacpp",
                     llamacpp_build=parse_build(f"b{KIMI_DELTA_AFTER + 1}"))
    assert sized.items[0].bytes > 27 * GIB
    not_given = estimate("inference", KIMI, 4, 8192, 1, None, 16, engine="llamacpp")
    assert not_given.items[0].bytes == sized.items[0].bytes


def test_ollamas_own_runners_are_refused_its_llama_server_sized():
    """Ollama's Go engine has no Kimi-Linear model: a release before 0.30.0, or none given, is refused beside
    engine_version; from 0.30.0 its llama-server (b9452 on) runs the kimi-linear file."""
    for release in (NOT_GIVEN, parse_ollama_version("0.29.3")):
        with pytest.raises(SizingError) as refused:
            estimate("inference", KIMI, 4, 8192, 1, None, 16, engine="ollama", llamacpp_build=release)
        assert refused.value.field == "engine_version" and "0.30.0" in refused.value.message
    sized = estimate("inference", KIMI, 4, 8192, 2, None, 16, engine="ollama",
                     llamacpp_build=parse_ollama_version("0.31.0"))
    assert sized.items[1].bytes == LATENT_LAYERS * 2 * 8192 * 576 * 2 + KDA_LAYERS * 2 * STATE_BYTES


def test_a_capacity_search_walks_the_kda_layer_at_most_once_per_need_it_sizes(monkeypatch):
    """Each need of a row's two binary searches walks one KDA graph at most (one per micro-batch, slots and
    states), none again for a need already sized, and never a Gated DeltaNet one."""
    import math

    import sizing.calculators.llamacpp as llamacpp_module
    import sizing.capacity as capacity_module
    from sizing.limits import MAX_CONTEXT, MAX_REQUESTS

    walks, needs, gated = [], [], []
    real_walk, real_need = llamacpp_module.kda_layer_bytes, capacity_module.llamacpp_need
    monkeypatch.setattr(llamacpp_module, "kda_layer_bytes", lambda shape: walks.append(shape) or real_walk(shape))
    monkeypatch.setattr(llamacpp_module, "delta_net_layer_bytes", lambda shape: gated.append(shape) or 0)
    monkeypatch.setattr(capacity_module, "llamacpp_need", lambda *args: needs.append(1) or real_need(*args))
    bound = 2 * (math.ceil(math.log2(MAX_REQUESTS)) + math.ceil(math.log2(MAX_CONTEXT))) + 5
    need = estimate("inference", KIMI, 4, 8192, 2, None, 16, engine="llamacpp")
    capacity_module._gguf_need.cache_clear()
    walks.clear()
    held = need.capacity._on_machine(1, 80 * 1024 * MIB, None)
    assert held.max_requests_at_context > 0
    assert 0 < len(needs) <= bound and 0 < len(set(walks)) <= len(needs) and not gated


def test_a_partial_offload_keeps_the_state_and_latent_cache_of_the_layers_left_on_the_host_there():
    """-ngl 8 at b9500 (the head and the last 7 layers, 20–26): latent layers 23 and 26 and five KDA layers on
    the GPU, the other 5 latent and 15 KDA layers' cache and state in host memory."""
    settings = replace(wizard_settings(4, 8192, 1, 16, build=parse_build("b9500")), gpu_layers=8)
    need = llamacpp_need(KIMI, settings)
    latent = 8192 * 576 * 2
    assert need.gpu_items[1].bytes == 2 * latent + 5 * STATE_BYTES
    assert need.host_items[1].bytes == 5 * latent + 15 * STATE_BYTES
