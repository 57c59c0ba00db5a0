"""Fine-tuning, image, speech and notebook: one hand-computed case each."""
import math

from sizing.calculators import (
    estimate_finetune,
    estimate_image,
    estimate_notebook,
    estimate_speech,
    lora_trainable_parameters,
)
from sizing.specs import ImageComponent
from sizing.units import GIB

from .models import LLAMA_3_1_8B, LLAMA_3_2_1B, SDXL, WHISPER_LARGE_V3


def items_by_name(breakdown):
    return {item.name: item for item in breakdown.items}


def test_llama_3_2_1b_qlora_512_tokens_batch_1_matches_the_hand_computation():
    """Llama 3.2 1B: 1,235,814,400 parameters, 16 layers, 32 heads, 8 KV heads, head dim 64,
    hidden 2,048, MLP width 8,192, vocabulary 128,256, output head tied. QLoRA (4-bit), sequence 512,
    batch 1, rank 16.

    Base weights   1,235,814,400 × 4.127 / 8 = 637,525,753.6 → 637,525,754
    16-bit embed.  128,256 × 2,048 = 262,668,288 (tied: once) × (2 − 4.127 / 8) = 389,832,572.9 → 389,832,573
    LoRA adapters  q 16 × (2048 + 2048) = 65,536; k 16 × (2048 + 512) = 40,960; v 40,960; o 65,536
                   = 212,992 per layer × 16 layers = 3,407,872 parameters × 16 bytes = 54,525,952
    Activations    stored 2 × 512 × 1 × 2048 × 16 = 33,554,432
                   + one layer 512 × 1 × (17 × 2,048 + 8 × 8,192 + 4 × 32 = 100,480) = 51,445,760
                   = 85,000,192
    Logits         512 × 1 × 128,256 × 12 = 788,004,864
    Load           2,048 × 8,192 = 16,777,216 values × 68 = 1,140,850,688, of which the training items
                   (54,525,952 + 85,000,192 + 788,004,864 = 927,531,008) reuse all but 213,319,680
    Sum            2,168,209,015; margin 20 % = 433,641,803; runtime 1,073,741,824
    Total          3,675,592,642 bytes = 3.42 GiB
    """
    breakdown = estimate_finetune(LLAMA_3_2_1B, 4, 512, 1)
    items = items_by_name(breakdown)

    assert items["Base weights"].bytes == 637_525_754
    assert items["16-bit embeddings and output head"].bytes == 389_832_573
    assert lora_trainable_parameters(LLAMA_3_2_1B, 16) == 3_407_872
    assert items["LoRA adapters"].bytes == 54_525_952
    assert items["Activations"].bytes == 85_000_192
    assert items["Logits"].bytes == 788_004_864
    assert items["Quantizing the base at load"].bytes == 213_319_680
    assert items["Safety margin"].bytes == 433_641_803
    assert items["CUDA runtime"].bytes == GIB and items["CUDA runtime"].per_gpu
    assert "Quantization scales" not in items  # 4.127 bits already hold NF4's scales
    assert breakdown.total_bytes == 3_675_592_642
    assert f"{breakdown.total_gib:.2f}" == "3.42"


def test_qlora_load_item_disappears_once_training_needs_more():
    """At 4,096 tokens the logits alone (4,096 × 128,256 × 12 = 6,304,038,912 bytes) exceed the 1.06 GiB load peak."""
    assert "Quantizing the base at load" not in items_by_name(estimate_finetune(LLAMA_3_2_1B, 4, 4096, 1))


def test_lora_on_an_8_bit_base_adds_16_bit_embeddings_and_row_scales():
    """Llama 3.1 8B, 8-bit base (bitsandbytes int8), untied head:
    16-bit: 1,050,673,152 × (2 − 1) = 1,050,673,152; scales: 6,979,588,096 × 32 / 4,096 bits ÷ 8
    = 6,816,004."""
    items = items_by_name(estimate_finetune(LLAMA_3_1_8B, 8, 1024, 2))

    assert items["16-bit embeddings and output head"].bytes == 1_050_673_152
    assert items["Quantization scales"].bytes == 6_816_004
    assert "Quantizing the base at load" not in items


def test_qlora_at_128k_tokens_counts_attention_as_fused():
    """Llama 3.1 8B QLoRA at 131,072 × 1: no s² term. Activations 2 × 131,072 × 4,096 × 32
    + 131,072 × (17 × 4,096 + 8 × 14,336 + 4 × 32 = 184,448) = 34,359,738,368 + 24,175,968,256."""
    breakdown = estimate_finetune(LLAMA_3_1_8B, 4, 131_072, 1)
    assert items_by_name(breakdown)["Activations"].bytes == 58_535_706_624
    # Counted as if unfused, the one recomputed layer's 5 × 32 × 131,072² score term alone was 2,560 GiB.
    assert breakdown.total_gib < 350


def test_finetune_breakdown_is_one_gpu_with_a_finetune_confidence_hint():
    breakdown = estimate_finetune(LLAMA_3_2_1B, 4, 512, 1)

    assert breakdown.workload == "finetune"
    assert breakdown.splittable_over_heads is None
    assert breakdown.confidence_hint == "finetune"
    assert breakdown.precision == 4
    assert breakdown.inputs["sequence_length"] == 512 and breakdown.inputs["batch_size"] == 1
    assert not breakdown.can_split_over(2)


def test_finetune_lora_base_uses_two_or_one_bytes_per_parameter():
    sixteen = items_by_name(estimate_finetune(LLAMA_3_1_8B, 16, 1024, 2))["Base weights"]
    eight = items_by_name(estimate_finetune(LLAMA_3_1_8B, 8, 1024, 2))["Base weights"]

    assert sixteen.bytes == 8_030_261_248 * 2
    assert eight.bytes == 8_030_261_248
    assert "LoRA" in sixteen.formula


def test_finetune_formulas_and_assumptions_name_their_sources():
    breakdown = estimate_finetune(LLAMA_3_2_1B, 4, 512, 1)
    items = items_by_name(breakdown)
    text = " ".join(breakdown.assumptions)

    assert "4.127 bits" in items["Base weights"].formula
    assert "3,407,872 trainable parameters × 16 bytes" in items["LoRA adapters"].formula
    assert "(17 × 2,048 hidden + 8 × 8,192 MLP width + 4 × 32 heads)" in items["Activations"].formula
    assert "Korthikanti et al. 2022" in items["Activations"].formula
    assert "128,256 vocabulary × 12 bytes" in items["Logits"].formula
    assert "torchao" in text and "torchtune" in text and "bitsandbytes" in text
    sources = ("Hu et al. 2021", "Dettmers et al. 2023", "Rajbhandari et al. 2020", "Korthikanti et al. 2022")
    for source in sources:
        assert source in text
    assert "FlashAttention" in text and "linearly with the sequence" in text
    assert "Hugging Face transformers" in text and "fp32" in text
    assert "one GPU" in text
    assert "extra copies" in text


def test_sdxl_at_16_bit_counts_every_network_exactly_and_the_decode_beyond_the_margin():
    """SDXL base 1.0 at 16-bit (component counts from shared/reference/image_pipelines.csv):

    unet 2,567,463,684 × 2 = 5,134,927,368
    CLIP-L 123,060,480 × 2 = 246,120,960
    OpenCLIP bigG 694,659,840 × 2 = 1,389,319,680
    vae 83,653,863 × 2 = 167,307,726
    weights 6,937,675,734; margin 20 % = 1,387,535,146.8 → 1,387,535,147
    decode at 1024×1024: 1,048,576 pixels × (256 × 6 + 256 × 6 ÷ 4 = 1,920) = 2,013,265,920
    beyond the margin 2,013,265,920 − 1,387,535,147 = 625,730,773; runtime 1,073,741,824
    total 10,024,683,478 bytes = 9.34 GiB
    """
    breakdown = estimate_image(SDXL, 16)
    items = items_by_name(breakdown)

    assert items["Denoiser: unet"].bytes == 5_134_927_368
    assert items["Text encoder: text_encoder (CLIP-L)"].bytes == 246_120_960
    assert items["Text encoder: text_encoder_2 (OpenCLIP bigG with projection)"].bytes == 1_389_319_680
    assert items["Autoencoder: vae"].bytes == 167_307_726
    assert items["Safety margin"].bytes == 1_387_535_147
    assert items["Image decoding at native resolution"].bytes == 625_730_773
    assert breakdown.total_bytes == 10_024_683_478
    assert f"{breakdown.total_gib:.2f}" == "9.34"
    assert items["Denoiser: unet"].formula == "2,567,463,684 parameters × 2 bytes (16-bit)"


def test_the_decode_item_follows_the_resolution_not_the_precision():
    """At 4-bit the weights shrink to a quarter but the decode does not: still an item. Without a
    recorded resolution there is nothing to size it by, and the margin is all there is."""
    from dataclasses import replace

    no_resolution = replace(SDXL, native_resolution=None)
    assert "Image decoding at native resolution" not in items_by_name(estimate_image(no_resolution, 16))
    assert "Image decoding at native resolution" in items_by_name(estimate_image(SDXL, 4))


def test_image_breakdown_names_native_resolution_and_that_larger_images_need_more():
    breakdown = estimate_image(SDXL, 8)
    text = " ".join(breakdown.assumptions)

    assert breakdown.workload == "image"
    assert breakdown.confidence_hint == "image"
    assert breakdown.splittable_over_heads is None
    assert "1024x1024" in text and "one image" in text
    assert "larger images and batches" in text


def test_4_bit_image_weights_round_odd_parameter_counts_up_once_per_item():
    """At 4-bit the transformer is NF4 (4.5 bits per parameter); the autoencoder stays 16-bit."""
    from dataclasses import replace

    odd = replace(SDXL, components=(
        ImageComponent("transformer", "denoiser", 83_653_863),
        ImageComponent("vae", "autoencoder", 83_653_863),
    ))
    items = items_by_name(estimate_image(odd, 4))

    assert items["Denoiser: transformer"].bytes == math.ceil(83_653_863 * 9 / 16) == 47_055_298
    assert items["Autoencoder: vae"].bytes == 83_653_863 * 2


def test_whisper_large_v3_with_8_streams_matches_the_hand_computation():
    """Whisper large-v3: 1,543,490,560 parameters, 32 decoder layers, d_model 1,280, 448 decoder
    positions, 1,500 encoder frames. 16-bit, 8 streams, beam search of 5 (the default).

    weights 1,543,490,560 × 2 = 3,086,981,120
    decoder KV cache 2 × 32 × 1,280 × 2 bytes × (448 × 5 beams + 1,500 shared) = 612,761,600 per stream
                     × 8 = 4,902,092,800
    margin 20 % of 7,989,073,920 = 1,597,814,784; runtime 1,073,741,824
    total 10,660,630,528 bytes = 9.93 GiB
    """
    breakdown = estimate_speech(WHISPER_LARGE_V3, 16, 8)
    items = items_by_name(breakdown)

    assert items["Model weights"].bytes == 3_086_981_120
    assert items["Decoder KV cache"].bytes == 4_902_092_800
    assert items["Safety margin"].bytes == 1_597_814_784
    assert breakdown.total_bytes == 10_660_630_528
    assert f"{breakdown.total_gib:.2f}" == "9.93"
    assert "(448 self-attention positions × 5 beams + 1,500 cross-attention positions) × 8 streams" in (
        items["Decoder KV cache"].formula
    )


def test_greedy_whisper_keeps_one_sequence_per_stream():
    """beams=1: 2 × 32 × 1,280 × 2 × (448 + 1,500) = 319,160,320 per stream."""
    breakdown = estimate_speech(WHISPER_LARGE_V3, 16, 2, beams=1)
    assert items_by_name(breakdown)["Decoder KV cache"].bytes == 2 * 319_160_320


def test_speech_breakdown_states_window_decoding_and_one_gpu():
    breakdown = estimate_speech(WHISPER_LARGE_V3, 16, 1)
    text = " ".join(breakdown.assumptions)

    assert breakdown.workload == "speech"
    assert breakdown.splittable_over_heads is None
    assert breakdown.inputs["beams"] == 5
    assert "30-second window" in text and "beam search of 5" in text and "not beams" in text


def test_notebook_need_is_the_entered_memory_without_margin():
    """24.5 GiB × 2^30 = 26,306,674,688 bytes; nothing added."""
    breakdown = estimate_notebook(24.5)

    assert [item.name for item in breakdown.items] == ["Requested GPU memory"]
    assert breakdown.total_bytes == 26_306_674_688
    assert breakdown.workload == "notebook"
    assert breakdown.precision is None
    assert any("no safety margin" in line for line in breakdown.assumptions)


def test_notebook_rounds_fractional_bytes_up():
    # 1e-9 GiB is 1.07… bytes: rounded up to 2 whole bytes
    assert estimate_notebook(1e-9).total_bytes == 2
