"""How a fine-tune is run (checkpointing, loss, LoRA rank and targets, DoRA, 8-bit AdamW): each choice
changes its own item, by a hand-computed formula; the defaults change nothing."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sizing.calculators import estimate, estimate_finetune, lora_trainable_parameters
from sizing.errors import SizingError
from sizing.specs import LanguageModelSpec
from sizing.training import CHOICES, DEFAULT_TRAINING, PRESETS, Training

from .models import LLAMA_3_1_8B, LLAMA_3_2_1B

# Llama 3.2 1B: 16 layers, hidden 2,048, MLP width 8,192, 32 heads, 8 KV heads of 64, vocabulary 128,256.
TOKENS = 512
PER_LAYER = 17 * 2048 + 8 * 8192 + 4 * 32  # 100,480 bytes per token: Korthikanti, fused attention


def items(breakdown):
    return {item.name: item for item in breakdown.items}


def sized(training=None, precision=16, model=LLAMA_3_2_1B, length=TOKENS, batch=1):
    return estimate_finetune(model, precision, length, batch, training=training)


def test_the_defaults_size_exactly_what_the_documentations_trainer_did():
    for precision in (16, 8, 4):
        plain = estimate_finetune(LLAMA_3_2_1B, precision, TOKENS, 1)
        assert sized(DEFAULT_TRAINING, precision).items == plain.items
        assert sized(PRESETS["hf-trainer"], precision).total_bytes == plain.total_bytes
    assert estimate("finetune", LLAMA_3_2_1B, 4, TOKENS, 1, None).total_bytes == 3_675_592_642
    assert estimate("finetune", LLAMA_3_2_1B, 4, TOKENS, 1, None, training=Training()).total_bytes == 3_675_592_642


def test_without_checkpointing_every_layer_keeps_what_the_recomputed_layer_keeps():
    """512 tokens × 16 layers × 100,480 bytes = 823,132,160."""
    activations = items(sized(Training(gradient_checkpointing="off")))["Activations"]
    assert activations.bytes == 512 * 16 * PER_LAYER == 823_132_160
    assert "no gradient checkpointing" in activations.formula and "× 16 layers" in activations.formula


def test_offloading_keeps_two_layer_inputs_and_one_recomputed_layer_on_the_gpu():
    """2 bytes × 512 × 2,048 × 2 in transit + 512 × 100,480 = 4,194,304 + 51,445,760."""
    activations = items(sized(Training(gradient_checkpointing="offload")))["Activations"]
    assert activations.bytes == 55_640_064
    assert "CPU memory" in activations.formula


def test_a_fused_loss_holds_16_bit_logits_and_their_fp32_upcast():
    """512 × 128,256 × 6 = 394,002,432 (the full loss: × 12)."""
    logits = items(sized(Training(loss="fused")))["Logits"]
    assert logits.bytes == 394_002_432
    assert "× 6 bytes" in logits.formula


def test_a_chunked_loss_holds_one_liger_chunk_and_the_hidden_states_gradient():
    """⌈128,256 ÷ 2,048⌉ = 63; ⌈512 ÷ 63⌉ = 9 → next power of two 16 tokens per chunk:
    16 × 128,256 × 12 = 24,625,152 + 2 × 512 × 2,048 = 2,097,152."""
    logits = items(sized(Training(loss="chunked")))["Logits"]
    assert logits.bytes == 26_722_304
    assert "one chunk of 16 tokens" in logits.formula


def test_a_chunk_is_never_more_than_the_batch():
    logits = items(estimate_finetune(LLAMA_3_2_1B, 16, 1, 1, training=Training(loss="chunked")))["Logits"]
    assert logits.bytes == 1 * 128_256 * 12 + 2 * 2048


@pytest.mark.parametrize(("targets", "rank", "trainable"), [
    ("attention", 16, 3_407_872),
    ("qv", 8, 8 * ((2048 + 2048) + (2048 + 512)) * 16),  # 851,968
    ("mlp", 16, 16 * ((2048 + 8192) * 2 + (8192 + 2048)) * 16),  # 7,864,320
    ("all", 16, 3_407_872 + 7_864_320),
])
def test_targets_and_rank_set_the_trainable_parameters(targets, rank, trainable):
    assert lora_trainable_parameters(LLAMA_3_2_1B, rank, targets) == trainable
    adapters = items(sized(Training(lora_rank=rank, lora_targets=targets)))["LoRA adapters"]
    assert adapters.bytes == trainable * 16
    assert f"{trainable:,} trainable parameters" in adapters.formula


def test_mlp_targets_of_a_mixture_of_experts_adapt_every_expert():
    from sizing.architectures import Architecture, MoE

    moe = LanguageModelSpec(
        slug="moe", name="MoE", parameters=46_702_792_704, layers=32, attention_heads=32, kv_heads=8,
        head_dim=128, hidden_size=4096, intermediate_size=14336, vocab_size=32000, max_context=None,
        architecture=Architecture(moe=MoE(experts=8, experts_per_token=2, expert_intermediate=14336)),
    )
    assert lora_trainable_parameters(moe, 16, "mlp") == 16 * 3 * (4096 + 14336) * 8 * 32


def test_dora_adds_a_magnitude_per_output_and_its_kept_outputs_and_norm():
    """Magnitudes q 2,048 + k 512 + v 512 + o 2,048 = 5,120 per layer × 16 = 81,920 more trainable.
    Kept: 512 tokens × 5,120 outputs × 6 bytes × 1 recomputed layer = 15,728,640; norm of the largest
    adapted matrix 2,048 × 2,048 × 12 = 50,331,648 (× 14 with a 4-bit base dequantized)."""
    breakdown = sized(Training(adapter="dora"))
    found = items(breakdown)
    assert found["DoRA adapters"].bytes == (3_407_872 + 81_920) * 16
    assert found["DoRA outputs and weight norm"].bytes == 15_728_640 + 50_331_648
    assert "DoRA" in breakdown.title
    quantized = items(sized(Training(adapter="dora"), precision=4))["DoRA outputs and weight norm"]
    assert quantized.bytes == 15_728_640 + 2048 * 2048 * 14
    off = items(sized(Training(adapter="dora", gradient_checkpointing="off")))["DoRA outputs and weight norm"]
    assert off.bytes == 15_728_640 * 16 + 50_331_648
    assert "DoRA outputs and weight norm" not in items(sized())


def test_8_bit_adamw_keeps_one_byte_per_moment_and_a_scale_per_256():
    """3,407,872 × (8 + 2 × (1 + 4/256)) = 3,407,872 × 10.03125 = 34,185,216 (every tensor ≥ 4,096)."""
    adapters = items(sized(Training(optimizer="adamw8bit")))["LoRA adapters"]
    assert adapters.bytes == 34_185_216
    assert "bitsandbytes" in adapters.formula


def test_8_bit_adamw_keeps_small_tensors_in_fp32():
    """DoRA's magnitudes (2,048 and 512 values) stay under min_8bit_size (4,096): fp32 moments, 8 bytes."""
    training = Training(optimizer="adamw8bit", adapter="dora")
    adapters = items(sized(training))["DoRA adapters"]
    small = 81_920  # the magnitudes of 16 layers
    large = 3_407_872  # the A and B matrices
    assert adapters.bytes == (large + small) * 8 + large * 2 + large * 2 // 64 + small * 8
    assert "fp32 moments" in adapters.formula


@pytest.mark.parametrize(("training", "field"), [
    (Training(lora_rank=0), "lora_rank"),
    (Training(lora_rank=1025), "lora_rank"),
    (Training(lora_rank=True), "lora_rank"),
    (Training(loss="sampled"), "loss"),
    (Training(gradient_checkpointing="yes"), "gradient_checkpointing"),
    (Training(lora_targets="embeddings"), "lora_targets"),
    (Training(adapter="ia3"), "adapter"),
    (Training(optimizer="sgd"), "optimizer"),
])
def test_bad_choices_name_their_field(training, field):
    with pytest.raises(SizingError) as error:
        sized(training)
    assert error.value.field == field


def test_a_rank_above_the_hidden_size_is_refused_on_its_field():
    small = LanguageModelSpec(
        slug="small", name="Small", parameters=200_000_000, layers=4, attention_heads=8, kv_heads=8,
        head_dim=64, hidden_size=512, intermediate_size=2048, vocab_size=32000, max_context=None,
    )
    assert sized(Training(lora_rank=512), model=small).total_bytes > 0
    with pytest.raises(SizingError) as error:
        sized(Training(lora_rank=513), model=small)
    assert error.value.field == "lora_rank" and "hidden size of 512" in error.value.message


def test_the_dispatcher_reports_training_errors_under_their_own_names():
    with pytest.raises(SizingError) as error:
        estimate("finetune", LLAMA_3_2_1B, 16, 512, 1, None, training=Training(loss="nope"))
    assert error.value.field == "loss"


def test_other_workloads_ignore_the_training_choices():
    plain = estimate("inference", LLAMA_3_1_8B, 16, 4096, 1, None)
    assert estimate("inference", LLAMA_3_1_8B, 16, 4096, 1, None,
                    training=Training(loss="chunked")).total_bytes == plain.total_bytes


def test_the_assumptions_name_the_trainers_each_choice_stands_for():
    words = {
        Training(gradient_checkpointing="off"): ("PEFT", "HF Trainer"),
        Training(gradient_checkpointing="offload"): ("Unsloth", "torchtune"),
        Training(loss="fused"): ("Unsloth", "FOAK", "torchtune"),
        Training(loss="chunked"): ("Liger",),
        Training(lora_targets="all"): ("all-linear",),
        Training(adapter="dora"): ("Liu et al. 2024",),
        Training(optimizer="adamw8bit"): ("bitsandbytes", "Dettmers et al. 2022"),
    }
    for training, names in words.items():
        text = " ".join(sized(training).assumptions)
        for name in names:
            assert name in text, (training, name)


def test_the_breakdown_carries_the_choices_as_inputs():
    inputs = sized(Training(loss="chunked", lora_rank=64)).inputs
    assert inputs["loss"] == "chunked" and inputs["lora_rank"] == 64 and inputs["adapter"] == "lora"


def test_presets_only_fill_the_inputs():
    for preset in PRESETS.values():
        assert isinstance(preset, Training)
        for field, codes in CHOICES.items():
            assert getattr(preset, field) in codes


trainings = st.builds(
    Training,
    gradient_checkpointing=st.sampled_from(list(CHOICES["gradient_checkpointing"])),
    loss=st.sampled_from(list(CHOICES["loss"])),
    lora_rank=st.integers(1, 1024),
    lora_targets=st.sampled_from(list(CHOICES["lora_targets"])),
    adapter=st.sampled_from(list(CHOICES["adapter"])),
    optimizer=st.sampled_from(list(CHOICES["optimizer"])),
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, database=None)
@given(trainings, st.sampled_from([16, 8, 4]), st.integers(1, 32_768), st.integers(1, 16))
def test_each_choice_moves_its_own_item_the_way_its_physics_says(training, precision, length, batch):
    def with_(**change):
        values = training.as_dict() | change
        return items(estimate_finetune(LLAMA_3_1_8B, precision, length, batch, training=Training(**values)))

    found = items(estimate_finetune(LLAMA_3_1_8B, precision, length, batch, training=training))
    assert sum(item.bytes for item in found.values()) == estimate_finetune(
        LLAMA_3_1_8B, precision, length, batch, training=training).total_bytes
    # Keeping every layer never needs less than checkpointing; offloading never more.
    assert with_(gradient_checkpointing="off")["Activations"].bytes >= with_(gradient_checkpointing="on")[
        "Activations"].bytes >= with_(gradient_checkpointing="offload")["Activations"].bytes
    # The full loss holds the most; a chunked one the least once the batch is more than a chunk (below,
    # the one chunk is the whole batch and the hidden states' gradient comes on top).
    assert with_(loss="full")["Logits"].bytes > with_(loss="fused")["Logits"].bytes
    if length * batch >= 64:
        assert with_(loss="fused")["Logits"].bytes > with_(loss="chunked")["Logits"].bytes
    adapters = "DoRA adapters" if training.adapter == "dora" else "LoRA adapters"
    assert with_(optimizer="adamw")[adapters].bytes > with_(optimizer="adamw8bit")[adapters].bytes
    assert with_(lora_targets="all")[adapters].bytes > with_(lora_targets="attention")[adapters].bytes > with_(
        lora_targets="qv")[adapters].bytes
    if training.lora_rank < 1024:
        assert with_(lora_rank=training.lora_rank + 1)[adapters].bytes > found[adapters].bytes
    # The choices touch only their own items: the frozen base is the same whatever the trainer.
    assert found["Base weights"].bytes == with_(**DEFAULT_TRAINING.as_dict())["Base weights"].bytes
