"""A fine-tune's 4-bit base as a GPTQ checkpoint (`base_format=gptq`): weights as stored, 16-bit
activations, the loss counted only beyond the recomputed layer; and a mixture of experts without
checkpointing (or offloading it), where each token passes through its k experts. Hand-computed figures;
the defaults change nothing."""
import math

import pytest

from sizing.architectures import Architecture, MoE
from sizing.calculators import estimate_finetune
from sizing.errors import SizingError
from sizing.specs import LanguageModelSpec
from sizing.training import DEFAULT_TRAINING, Training

from .models import LLAMA_3_2_1B

# Llama 3.2 1B: 16 layers, hidden 2,048, MLP width 8,192, 32 heads, vocabulary 128,256, tied embeddings.
TOKENS = 512
PER_LAYER = 17 * 2048 + 8 * 8192 + 4 * 32  # 100,480 bytes per token: Korthikanti, fused attention
FULL_LOSS = 512 * 128_256 * 12  # 788,004,864
GPTQ = Training(base_format="gptq")

# Mixtral 8x7B's shape: 32 layers of 8 experts of width 14,336, 2 per token.
MIXTRAL_LIKE = LanguageModelSpec(
    slug="moe", name="MoE", parameters=46_702_792_704, layers=32, attention_heads=32, kv_heads=8,
    head_dim=128, hidden_size=4096, intermediate_size=14336, vocab_size=32000, max_context=None,
    architecture=Architecture(moe=MoE(experts=8, experts_per_token=2, expert_intermediate=14336)),
)
ONE_EXPERT_LAYER = 17 * 4096 + 8 * 14336 + 4 * 32  # 184,448: the count at one MLP width
ROUTED_LAYER = 17 * 4096 + 4 * 32 + 4 * 8 + 2 * (4 * 4096 + 8 * 14336)  # 331,936


def items(breakdown):
    return {item.name: item for item in breakdown.items}


def sized(training=DEFAULT_TRAINING, precision=4, model=LLAMA_3_2_1B, length=TOKENS, batch=1):
    return estimate_finetune(model, precision, length, batch, training=training)


def test_a_gptq_base_is_stored_as_its_checkpoint_with_scales_zeros_and_one_dequantized_matrix():
    found = items(sized(GPTQ))
    parameters = 1_235_814_400
    quantized = parameters - 128_256 * 2048  # the tied embeddings stay 16-bit
    assert found["Base weights"].bytes == parameters // 2
    assert "GPTQ checkpoint" in found["Base weights"].formula
    assert found["16-bit embeddings and output head"].bytes == math.ceil(128_256 * 2048 * 1.5)
    # a 16-bit scale and a 4-bit zero per group of 128: 20 ÷ 128 bits per quantized parameter
    assert found["Quantization scales"].bytes == math.ceil(quantized * 20 / 128 / 8)
    assert found["Dequantized matrix"].bytes == 2048 * 8192 * 2
    assert "Quantizing the base at load" not in found  # the checkpoint is loaded quantized


def test_on_a_gptq_base_the_loss_counts_only_beyond_the_recomputed_layer():
    """788,004,864 − 512 × 100,480 = 736,559,104; the activations are the NF4 estimate's."""
    found = items(sized(GPTQ))
    assert found["Logits"].bytes == FULL_LOSS - TOKENS * PER_LAYER == 736_559_104
    assert "max(0," in found["Logits"].formula
    assert found["Activations"].bytes == items(sized())["Activations"].bytes
    # without checkpointing every layer is alive at the loss: the whole loss counts
    off = items(sized(Training(gradient_checkpointing="off", base_format="gptq")))
    assert off["Logits"].bytes == FULL_LOSS
    # a chunk smaller than the layer adds nothing; the hidden states' gradient (2 × 512 × 2,048) stays
    chunked = items(sized(Training(loss="chunked", base_format="gptq")))
    assert chunked["Logits"].bytes == 2 * 512 * 2048


def test_a_gptq_base_is_named_in_the_title_inputs_and_assumptions():
    breakdown = sized(GPTQ)
    assert "GPTQ-LoRA" in breakdown.title and breakdown.inputs["base_format"] == "gptq"
    text = " ".join(breakdown.assumptions)
    for name in ("prepare_model_for_kbit_training", "accelerated-peft-autogptq", "triton_v2", "group of 128"):
        assert name in text, name
    assert "torchao" not in text  # nothing is quantized at load


def test_the_nf4_default_is_unchanged_and_the_format_is_ignored_at_other_precisions():
    assert sized(Training(base_format="nf4")).items == estimate_finetune(LLAMA_3_2_1B, 4, TOKENS, 1).items
    for precision in (16, 8):
        plain = estimate_finetune(LLAMA_3_2_1B, precision, TOKENS, 1)
        ignored = sized(GPTQ, precision)
        assert ignored.items == plain.items and "base_format" not in ignored.inputs


def test_dora_on_a_gptq_base_is_refused_on_the_adapter():
    with pytest.raises(SizingError) as error:
        sized(Training(adapter="dora", base_format="gptq"))
    assert error.value.field == "adapter" and "GPTQ" in error.value.message
    with pytest.raises(SizingError) as error:
        sized(Training(base_format="awq"))
    assert error.value.field == "base_format"


def test_without_checkpointing_each_token_passes_through_its_experts():
    """512 tokens × 32 layers × 331,936 bytes: each of the 2 experts keeps its gathered input, four
    14,336-wide tensors and its output; the router's 8 fp32 probabilities."""
    activations = items(sized(Training(gradient_checkpointing="off"), 16, MIXTRAL_LIKE))["Activations"]
    assert activations.bytes == 512 * 32 * ROUTED_LAYER == 5_438_439_424
    assert "2 experts per token" in activations.formula and "× 32 layers" in activations.formula


def test_offloading_recomputes_a_routed_layer_and_the_default_stays_as_it_was():
    offload = items(sized(Training(gradient_checkpointing="offload"), 16, MIXTRAL_LIKE))["Activations"]
    assert offload.bytes == 2 * 512 * 4096 * 2 + 512 * ROUTED_LAYER
    on = items(sized(DEFAULT_TRAINING, 16, MIXTRAL_LIKE))["Activations"]
    assert on.bytes == 2 * 512 * 4096 * 32 + 512 * ONE_EXPERT_LAYER  # byte for byte the documentation's


def test_dense_layers_and_a_shared_expert_are_counted_as_each_layer_runs():
    """One dense layer (MLP width 8,192) and 3 MoE layers of 1 routed expert of 2,048 plus a shared one."""
    model = LanguageModelSpec(
        slug="mixed", name="Mixed", parameters=2_000_000_000, layers=4, attention_heads=16, kv_heads=4,
        head_dim=64, hidden_size=1024, intermediate_size=2048, vocab_size=32000, max_context=None,
        architecture=Architecture(moe=MoE(experts=16, experts_per_token=1, expert_intermediate=2048,
                                          shared_intermediate=2048, first_dense_layers=1,
                                          dense_intermediate=8192)),
    )
    dense = 17 * 1024 + 8 * 8192 + 4 * 16
    routed = 17 * 1024 + 4 * 16 + 4 * 16 + 1 * (4 * 1024 + 8 * 2048) + 8 * 2048
    activations = items(sized(Training(gradient_checkpointing="off"), 16, model, 256))["Activations"]
    assert activations.bytes == 256 * (dense + 3 * routed)
    assert "shared expert" in activations.formula
