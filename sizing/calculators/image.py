"""Generating images (SPEC §3): every network of the pipeline (at 4- and 8-bit, the ones the common recipe
quantizes), the margin, and beyond the margin the denoiser's activations and the autoencoder's decoding
at native resolution."""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import cast

from ..breakdown import Breakdown, Item
from ..errors import MissingModelValue, SizingError
from ..i18n import TranslatedWords, gettext, gettext_noop
from ..specs import ImageComponent, ImagePipelineSpec
from ..units import fmt_gib, fmt_int, general_number
from .checks import check_precision
from .items import ACTIVATION_BYTES_PER_VALUE, excess_item, margin_item, runtime_item, weights_item

# The autoencoder decoder's last upsampling, per output pixel: a 256-channel map at full resolution in
# fp32 (4 bytes) and its 16-bit cast (2), plus the half-resolution source in both (a quarter as many).
VAE_DECODE_BYTES_PER_PIXEL = 256 * 6 + 256 * 6 // 4


# What "4-bit" and "8-bit" mean for an image pipeline: the common recipe, diffusers' pipeline-level
# bitsandbytes quantization of the transformer and the large text encoder (PipelineQuantizationConfig,
# components_to_quantize=["transformer", "text_encoder_2"]); diffusers' bitsandbytes guide leaves CLIP and
# the autoencoder in 16-bit, both small and the autoencoder nearly free of linear layers. bitsandbytes
# quantizes linear layers only, so a
# UNet (SD 1.5, SDXL: convolutions and their norms beside its attention) is not what the recipe
# quantizes: it stays 16-bit here, on the safe side. Text encoders from 1 B parameters (T5 v1.1 XXL,
# Qwen2.5-VL-7B) are quantized; CLIP-L and OpenCLIP bigG (under 1 B) stay 16-bit.
QUANTIZED_TEXT_ENCODER_FROM = 1_000_000_000
UNET_PREFIX = "unet"
# Bits per quantized parameter. NF4 as BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")
# stores it (no double quantization, its default): 4-bit values and a 32-bit absmax per block of 64.
# LLM.int8(): 8-bit values and a 32-bit scale per output row (rows of at least 1,024 values here).
QUANTIZED_BITS = {4: Fraction(4) + Fraction(32, 64), 8: Fraction(8) + Fraction(32, 1024)}
QUANTIZED_FORMAT = {
    4: gettext_noop("bitsandbytes NF4: 4-bit values + a 32-bit absmax per block of 64"),
    8: gettext_noop("bitsandbytes int8: 8-bit values + a 32-bit scale per row of at least 1,024"),
}
# Parameters a quantized text encoder keeps in 16-bit: its token embeddings (an nn.Embedding, not a linear
# layer) and a language-model head (bitsandbytes skips the output head). By the network's name.
KEPT_16_BIT = {
    "T5 v1.1 XXL": (32_128 * 4_096, gettext_noop("the token embeddings, 32,128 × 4,096")),
    "Qwen2.5-VL-7B": (2 * 152_064 * 3_584,
                      gettext_noop("the token embeddings and the output head, 2 × 152,064 × 3,584")),
}


@dataclass(frozen=True)
class DenoiserShape:
    """What a transformer denoiser runs on at native resolution (from the pipeline's configs)."""

    width: int  # hidden width of its blocks
    mlp_width: int
    text_tokens: int  # the prompt's tokens it attends to beside the image's
    batch: int  # 2 where the pipeline batches classifier-free guidance's unconditional pass
    image_copies: int = 1  # FLUX.1 Kontext attends over the reference image's tokens as well
    latent_factor: int = 8  # the autoencoder's downsampling
    patch: int = 2  # latent pixels per token, per side


# FLUX.1 [dev] and Kontext are guidance-distilled (the guidance scale is an input of the transformer, one
# pass per step), [schnell] takes no guidance: batch 1. T5 prompts of 512 tokens ([schnell]: 256;
# max_sequence_length). SD 3 and 3.5 batch the unconditional pass (torch.cat([latents] * 2)) and attend over
# 77 CLIP + 256 T5 tokens. Qwen-Image's true CFG runs the negative prompt as a second pass, not a batch; its
# prompt is at most 512 tokens by default. FluxTransformer2DModel: 3,072 wide, MLP 4 ×; SD3 Medium and
# SD 3.5 Medium 1,536 (24 heads × 64), SD 3.5 Large 2,432 (38 × 64); Qwen-Image 3,072.
DENOISER_SHAPES = {
    "flux-1-dev": DenoiserShape(3072, 12288, 512, 1),
    "flux-1-schnell": DenoiserShape(3072, 12288, 256, 1),
    "flux-1-kontext-dev": DenoiserShape(3072, 12288, 512, 1, image_copies=2),
    "stable-diffusion-3-medium": DenoiserShape(1536, 6144, 77 + 256, 2),
    "stable-diffusion-3-5-large": DenoiserShape(2432, 9728, 77 + 256, 2),
    "stable-diffusion-3-5-medium": DenoiserShape(1536, 6144, 77 + 256, 2),
    "qwen-image": DenoiserShape(3072, 12288, 512, 1),
}
# A transformer block's peak per token, in 16-bit values of its width: the residual, the normalised input,
# queries, keys and values (5), and the rotary embedding of one of them (diffusers' apply_rotary_emb: the
# rotated copy, 1, and three fp32 temporaries, 2 each: 7); plus one MLP-width tensor (FLUX's single-stream
# blocks compute the MLP beside the attention). Attention itself runs in SDPA's fused kernels without a
# mask: memory linear in tokens.
DENOISER_WIDTH_TENSORS = 12
DENOISER_MLP_TENSORS = 1


def _native_pixels(resolution: str | None) -> tuple[int, int] | None:
    """"1024x1024" -> (1024, 1024); None when not recorded or not of that form."""
    if not resolution:
        return None
    parts = resolution.lower().replace("×", "x").split("x")
    if len(parts) != 2 or not all(part.strip().isdigit() for part in parts):
        return None
    width, height = (int(part) for part in parts)
    return (width, height) if width > 0 and height > 0 else None


ROLE_LABELS = TranslatedWords({
    "denoiser": gettext_noop("Denoiser"),
    "text_encoder": gettext_noop("Text encoder"),
    "autoencoder": gettext_noop("Autoencoder"),
})


def is_quantized(component: ImageComponent, precision: int) -> bool:
    """Whether the common recipe quantizes this network at this precision (QUANTIZED_TEXT_ENCODER_FROM)."""
    if precision == 16:
        return False
    if component.role == "denoiser":
        return not component.name.lower().startswith(UNET_PREFIX)
    if component.role == "text_encoder":
        return (component.parameters or 0) >= QUANTIZED_TEXT_ENCODER_FROM
    return False


def _kept_16_bit(component: ImageComponent) -> tuple[int, str]:
    for marker, (parameters, words) in KEPT_16_BIT.items():
        if marker in component.name:
            return parameters, gettext(words)
    return 0, ""


def quantized_network_item(label: str, component: ImageComponent, precision: int) -> Item:
    """A network the recipe quantizes: its linear layers in the format, what it keeps in 16-bit at 2 bytes."""
    kept, kept_words = _kept_16_bit(component)
    parameters = cast(int, component.parameters)  # estimate_image refuses a network without its count
    quantized = parameters - kept
    bits = QUANTIZED_BITS[precision]
    values = {
        "quantized": fmt_int(quantized), "bits": general_number(bits, 4),
        "format": gettext(QUANTIZED_FORMAT[precision]),
    }
    if kept:
        formula = gettext(
            "(%(parameters)s − %(kept)s kept in 16-bit: %(kept_words)s) × %(bits)s bits ÷ 8 (%(format)s) + "
            "%(kept)s × 2 bytes"
        ) % {**values, "parameters": fmt_int(parameters), "kept": fmt_int(kept),
             "kept_words": kept_words}
    else:
        formula = gettext("%(quantized)s parameters × %(bits)s bits ÷ 8 (%(format)s)") % values
    return Item(name=label, formula=formula, bytes=math.ceil(quantized * bits / 8) + kept * 2)


def network_items(pipeline: ImagePipelineSpec, precision: int) -> list[Item]:
    """The weights of every network of the pipeline, each at its exact parameter count: in 16-bit, or in
    the quantized format where the common recipe quantizes it (is_quantized)."""
    if not pipeline.components:
        raise SizingError("model", gettext("%(model)s lists no networks to load.") % {"model": pipeline.name})
    items = []
    for component in pipeline.components:
        if component.parameters is None:
            raise MissingModelValue(
                pipeline.name,
                f"parameter count of {component.name}",
                gettext("parameter count of %(network)s") % {"network": component.name},
            )
        role = ROLE_LABELS.get(component.role, component.role.replace("_", " ").capitalize())
        label = f"{role}: {component.name}"
        if is_quantized(component, precision):
            items.append(quantized_network_item(label, component, precision))
        else:
            items.append(weights_item(label, component.parameters, 16))
    return items


def denoiser_tokens(pipeline: ImagePipelineSpec, shape: DenoiserShape) -> int | None:
    """Tokens the denoiser attends over at native resolution: the image's and the prompt's."""
    pixels = _native_pixels(pipeline.native_resolution)
    if pixels is None:
        return None
    side = shape.latent_factor * shape.patch
    width, height = pixels
    return shape.image_copies * math.ceil(width / side) * math.ceil(height / side) + shape.text_tokens


def denoiser_item(pipeline: ImagePipelineSpec, margin: Item) -> Item | None:
    """The transformer denoiser's activations at native resolution, beyond the margin; None where the
    margin covers them or the denoiser's shape is not recorded (a UNet: below its decoding)."""
    shape = DENOISER_SHAPES.get(pipeline.slug)
    tokens = denoiser_tokens(pipeline, shape) if shape else None
    if shape is None or tokens is None:
        return None
    per_token = DENOISER_WIDTH_TENSORS * shape.width + DENOISER_MLP_TENSORS * shape.mlp_width
    pixels = cast(tuple[int, int], _native_pixels(pipeline.native_resolution))  # tokens were counted from it
    return excess_item(
        gettext("Denoiser activations at native resolution"),
        shape.batch * tokens * per_token * ACTIVATION_BYTES_PER_VALUE,
        margin,
        gettext(
            "%(batch)s × (%(copies)s%(grid)s image tokens + %(text)s prompt tokens) × (%(width_tensors)s × "
            "%(width)s width + %(mlp_tensors)s × %(mlp)s MLP width) × %(bytes)s bytes"
        ) % {
            "batch": shape.batch,
            "copies": f"{shape.image_copies} × " if shape.image_copies > 1 else "",
            "grid": gettext("%(columns)s × %(rows)s") % {
                "columns": fmt_int(math.ceil(pixels[0] / (shape.latent_factor * shape.patch))),
                "rows": fmt_int(math.ceil(pixels[1] / (shape.latent_factor * shape.patch))),
            },
            "text": fmt_int(shape.text_tokens), "width_tensors": DENOISER_WIDTH_TENSORS,
            "width": fmt_int(shape.width), "mlp_tensors": DENOISER_MLP_TENSORS,
            "mlp": fmt_int(shape.mlp_width),
            "bytes": ACTIVATION_BYTES_PER_VALUE,
        },
    )


def decode_item(pipeline: ImagePipelineSpec, margin: Item, denoiser: Item | None = None) -> Item | None:
    """The autoencoder's decoding of one image at native resolution, beyond the margin and beyond what the
    denoiser's item already adds (the two peaks come one after the other, never together)."""
    pixels = _native_pixels(pipeline.native_resolution)
    if pixels is None:
        return None
    width, height = pixels
    formula = gettext(
        "%(width)s × %(height)s pixels × %(bytes)s bytes "
        "(the autoencoder's last upsampling: 256 channels at full resolution in 32-bit and its "
        "16-bit "
        "copy, 256 × 6, plus its half-resolution source, 256 × 6 ÷ 4)"
    ) % {
        "width": fmt_int(width),
        "height": fmt_int(height),
        "bytes": fmt_int(VAE_DECODE_BYTES_PER_PIXEL),
    }
    need = width * height * VAE_DECODE_BYTES_PER_PIXEL
    if denoiser is None:
        return excess_item(gettext("Image decoding at native resolution"), need, margin, formula)
    covered = margin.bytes + denoiser.bytes
    if need <= covered:
        return None
    return Item(
        name=gettext("Image decoding at native resolution"),
        formula=gettext(
            "%(formula)s = %(need)s, less the %(covered)s the margin and the denoiser's activations cover"
        ) % {"formula": formula, "need": fmt_gib(need), "covered": fmt_gib(covered)},
        bytes=need - covered,
    )


def precision_words(pipeline: ImagePipelineSpec, precision: int) -> str:
    """Which networks are loaded in which precision."""
    if precision == 16:
        return gettext(
            "Every network of the pipeline is loaded on the GPU at once, each counted at its exact "
            "parameter count in %(bits)s-bit."
        ) % {"bits": precision}
    quantized = [c.name for c in pipeline.components if is_quantized(c, precision)]
    kept = [c.name for c in pipeline.components if not is_quantized(c, precision)]
    return gettext(
        "Every network of the pipeline is loaded on the GPU at once, each at its exact parameter count. "
        "%(bits)s-bit means the common recipe (diffusers' bitsandbytes quantization of the transformer "
        "and the large text encoder): %(quantized)s in %(format)s, their token embeddings and output "
        "heads in 16-bit; %(kept)s in 16-bit (CLIP text encoders and the autoencoder are small and "
        "mostly not linear layers; a UNet's convolutions are not quantized by bitsandbytes, so a UNet "
        "is counted in 16-bit). Activations stay 16-bit whatever the weights' precision."
    ) % {
        "bits": precision, "quantized": ", ".join(quantized) or "—", "kept": ", ".join(kept) or "—",
        "format": gettext(QUANTIZED_FORMAT[precision]),
    }


def denoiser_words(pipeline: ImagePipelineSpec) -> list[str]:
    shape = DENOISER_SHAPES.get(pipeline.slug)
    tokens = denoiser_tokens(pipeline, shape) if shape is not None else None
    if shape is None or tokens is None:
        return []
    if shape.batch > 1:
        guidance = gettext(
            "classifier-free guidance runs the unconditional pass in the same batch (2 images)"
        )
    else:
        guidance = gettext("one pass per step (guidance-distilled, or guidance run as a separate pass)")
    return [gettext(
        "The denoiser's activations at native resolution: attention over the image's and the prompt's "
        "%(tokens)s tokens in SDPA's fused kernels (memory linear in tokens); %(guidance)s; its peak per "
        "token is a block's residual, normalised input, queries, keys, values, the rotary embedding's "
        "32-bit temporaries and one MLP-width tensor, in 16-bit. It and the autoencoder's decoding come one "
        "after the other: the larger counts, beyond the margin."
    ) % {"tokens": fmt_int(tokens), "guidance": guidance}]


def image_words(pipeline: ImagePipelineSpec, precision: int) -> tuple[str, ...]:
    if pipeline.native_resolution:
        resolution = gettext("its native resolution of %(resolution)s pixels") % {
            "resolution": pipeline.native_resolution
        }
    else:
        resolution = gettext("its native resolution")
    return (
        precision_words(pipeline, precision),
        gettext(
            "The 20 %% margin is meant for one image at %(resolution)s; larger images and batches of several "
            "images need more."
        ) % {"resolution": resolution},
        gettext("The peak of one image is the autoencoder's decoding at full resolution (the denoiser's "
                "attention "
         "runs in fused kernels at the latent's 1/8 resolution and needs less): in diffusers the "
         "8×-upsampling decoder (128-256-512-512 channels, as in Stable Diffusion 1.5, SDXL, SD 3 and FLUX) "
         "upsamples its 256-channel map to full resolution in 32-bit before casting it back to 16-bit, "
         "%(bytes)s bytes per pixel. Where that exceeds the margin, the excess "
         "is its own item. Tiled VAE decoding needs less.") % {"bytes": fmt_int(VAE_DECODE_BYTES_PER_PIXEL)},
        *denoiser_words(pipeline),
        gettext(
            "Image generation depends strongly on settings (resolution, batch, attention implementation, "
            "offloading), so this estimate has low confidence."
        ),
        gettext("Image pipelines are sized for one GPU."),
    )


def estimate_image(pipeline: ImagePipelineSpec, precision: int) -> Breakdown:
    precision = check_precision(precision)
    networks = network_items(pipeline, precision)
    margin = margin_item(networks, gettext("weights of all networks"))
    denoiser = denoiser_item(pipeline, margin)
    decode = decode_item(pipeline, margin, denoiser)
    return Breakdown(
        workload="image",
        title=gettext("%(model)s, image generation, %(bits)s-bit") % {
            "model": pipeline.name, "bits": precision
        },
        items=(*networks, margin, *(item for item in (denoiser, decode) if item), runtime_item()),
        assumptions=image_words(pipeline, precision),
        precision=precision,
        splittable_over_heads=None,
        confidence_hint="image",
        inputs={"model": pipeline.slug, "model_name": pipeline.name, "precision": precision},
    )
