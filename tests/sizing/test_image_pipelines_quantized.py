"""Image pipelines at 4- and 8-bit as the common recipe runs them (the transformer and T5 quantized with
bitsandbytes, CLIP and the autoencoder in 16-bit), and the denoiser's activations at native resolution
beside the autoencoder's decoding, beyond the margin."""
import math
from dataclasses import replace

from sizing.calculators import estimate_image
from sizing.calculators.image import DENOISER_SHAPES, denoiser_tokens
from sizing.specs import ImageComponent

from .models import FLUX_1_DEV, SDXL


def items(breakdown):
    return {item.name: item for item in breakdown.items}


def test_flux_dev_at_4_bit_quantizes_the_transformer_and_t5_and_keeps_clip_and_the_vae_16_bit():
    """FLUX.1 [dev], 4-bit, 1,024²: NF4 at 4 + 32/64 = 4.5 bits per quantized parameter.

    transformer  11,901,408,320 × 4.5 ÷ 8                                    = 6,694,542,180
    CLIP-L       123,060,480 × 2                                             = 246,120,960
    T5 XXL       (4,762,310,656 − 131,596,288 embeddings) × 4.5 ÷ 8 + 131,596,288 × 2 = 2,867,969,408
    VAE          83,819,683 × 2                                              = 167,639,366
    weights 9,976,271,914; margin 1,995,254,383
    denoiser     1 × (64 × 64 + 512) × (12 × 3,072 + 12,288) × 2 = 452,984,832 (inside the margin)
    decoding     1,024 × 1,024 × 1,920 = 2,013,265,920: 18,011,537 beyond the margin
    total 13,063,279,658 B = 12.17 GiB (before: every network at half a byte, 11,522,307,314 B = 10.73 GiB)
    """
    breakdown = estimate_image(FLUX_1_DEV, 4)
    by_name = items(breakdown)

    assert by_name["Denoiser: transformer"].bytes == 6_694_542_180
    assert by_name["Denoiser: transformer"].formula == (
        "11,901,408,320 parameters × 4.5 bits ÷ 8 (bitsandbytes NF4: 4-bit values + a 32-bit absmax per block of 64)"
    )
    assert by_name["Text encoder: text_encoder (CLIP-L)"].bytes == 246_120_960
    assert by_name["Text encoder: text_encoder_2 (T5 v1.1 XXL encoder)"].bytes == 2_867_969_408
    assert "131,596,288 kept in 16-bit: the token embeddings" in by_name[
        "Text encoder: text_encoder_2 (T5 v1.1 XXL encoder)"].formula
    assert by_name["Autoencoder: vae (16 channels)"].bytes == 167_639_366
    assert by_name["Safety margin"].bytes == 1_995_254_383
    assert "Denoiser activations at native resolution" not in by_name
    assert by_name["Image decoding at native resolution"].bytes == 18_011_537
    assert breakdown.total_bytes == 13_063_279_658
    text = " ".join(breakdown.assumptions)
    assert "transformer, text_encoder_2 (T5 v1.1 XXL encoder) in bitsandbytes NF4" in text
    assert "text_encoder (CLIP-L), vae (16 channels) in 16-bit" in text
    assert "guidance-distilled" in text and "4,608 tokens" in text


def test_8_bit_is_llm_int8_on_the_same_networks():
    by_name = items(estimate_image(FLUX_1_DEV, 8))
    assert by_name["Denoiser: transformer"].bytes == math.ceil(11_901_408_320 * (8 + 32 / 1024) / 8)
    assert by_name["Autoencoder: vae (16 channels)"].bytes == 83_819_683 * 2


def test_16_bit_answers_are_unchanged():
    """FLUX.1 [dev] at 16-bit: 33,740,598,278 B of weights, margin 6,748,119,656 covers both peaks."""
    breakdown = estimate_image(FLUX_1_DEV, 16)
    by_name = items(breakdown)
    assert sum(by_name[name].bytes for name in by_name if ":" in name) == 2 * (
        11_901_408_320 + 123_060_480 + 4_762_310_656 + 83_819_683)
    assert "Denoiser activations at native resolution" not in by_name
    assert "Image decoding at native resolution" not in by_name
    assert breakdown.assumptions[0] == (
        "Every network of the pipeline is loaded on the GPU at once, each counted at its exact parameter "
        "count in 16-bit."
    )


def test_a_unet_pipeline_stays_16_bit_at_4_bit():
    """bitsandbytes quantizes linear layers only: SDXL's UNet and its two CLIP encoders stay 16-bit."""
    four = items(estimate_image(SDXL, 4))
    sixteen = items(estimate_image(SDXL, 16))
    assert four["Denoiser: unet"].bytes == sixteen["Denoiser: unet"].bytes == 5_134_927_368
    assert four["Autoencoder: vae"].bytes == 167_307_726


def test_classifier_free_guidance_doubles_the_batch_where_the_pipeline_batches_it():
    """SD 3 Medium batches the unconditional pass: 2 × (64 × 64 + 77 + 256) tokens; FLUX.1 Kontext attends
    over the reference image's tokens too: 2 × 64 × 64 + 512."""
    sd3 = replace(FLUX_1_DEV, slug="stable-diffusion-3-medium")
    assert DENOISER_SHAPES["stable-diffusion-3-medium"].batch == 2
    assert denoiser_tokens(sd3, DENOISER_SHAPES["stable-diffusion-3-medium"]) == 4096 + 333
    kontext = replace(FLUX_1_DEV, slug="flux-1-kontext-dev")
    assert denoiser_tokens(kontext, DENOISER_SHAPES["flux-1-kontext-dev"]) == 2 * 4096 + 512


def test_the_denoiser_item_shows_beyond_a_small_margin_and_the_decoding_counts_only_what_exceeds_it():
    """A 2,048² FLUX image at 4-bit with a tiny pipeline: the denoiser needs
    1 × (128 × 128 + 512) × 49,152 × 2 = 1,660,944,384 B, the decoding 2,048² × 1,920 = 8,053,063,680 B;
    the two come one after the other, so together the items add the larger less the margin."""
    tiny = replace(FLUX_1_DEV, native_resolution="2048x2048", components=(
        ImageComponent("transformer", "denoiser", 1_000_001),
        ImageComponent("vae (16 channels)", "autoencoder", 83_819_683),
    ))
    breakdown = estimate_image(tiny, 4)
    by_name = items(breakdown)
    margin = by_name["Safety margin"].bytes
    assert by_name["Denoiser: transformer"].bytes == math.ceil(1_000_001 * 9 / 16)
    assert by_name["Denoiser activations at native resolution"].bytes == 1_660_944_384 - margin
    assert by_name["Image decoding at native resolution"].bytes == 8_053_063_680 - 1_660_944_384
    assert "the margin and the denoiser's activations cover" in by_name["Image decoding at native resolution"].formula
    assert "1 × (128 × 128 image tokens + 512 prompt tokens)" in by_name[
        "Denoiser activations at native resolution"].formula


def test_the_quantized_pipeline_and_its_activations_read_in_german():
    from django.utils import translation

    large = replace(FLUX_1_DEV, native_resolution="2048x2048", components=(
        ImageComponent("transformer", "denoiser", 1_000_001),
        ImageComponent("vae (16 channels)", "autoencoder", 83_819_683),
    ))
    with translation.override("de"):
        breakdown = estimate_image(large, 4)
        by_name = items(breakdown)
        text = " ".join(breakdown.assumptions)
    assert by_name["Denoiser-Aktivierungen in nativer Auflösung"].formula.startswith(
        "1 × (128 × 128 Bild-Token + 512 Prompt-Token)")
    assert "4,5 Bit ÷ 8 (bitsandbytes NF4: 4-Bit-Werte" in by_name["Denoiser: transformer"].formula
    assert "das übliche Rezept" in text and "Guidance-destilliert" in text
