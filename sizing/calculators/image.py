"""Generating images (SPEC §3): every network of the pipeline, the margin, and the autoencoder's
decoding at native resolution beyond the margin."""
from __future__ import annotations

from ..breakdown import Breakdown, Item
from ..errors import MissingModelValue, SizingError
from ..i18n import TranslatedWords, gettext, gettext_noop
from ..specs import ImagePipelineSpec
from ..units import fmt_int
from .checks import check_precision
from .items import excess_item, margin_item, runtime_item, weights_item

# The autoencoder decoder's last upsampling, per output pixel: a 256-channel map at full resolution in
# fp32 (4 bytes) and its 16-bit cast (2), plus the half-resolution source in both (a quarter as many).
VAE_DECODE_BYTES_PER_PIXEL = 256 * 6 + 256 * 6 // 4


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


def network_items(pipeline: ImagePipelineSpec, precision: int) -> list[Item]:
    """The weights of every network of the pipeline, each at its exact parameter count."""
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
        label = ROLE_LABELS.get(component.role, component.role.replace("_", " ").capitalize())
        items.append(weights_item(f"{label}: {component.name}", component.parameters, precision))
    return items


def decode_item(pipeline: ImagePipelineSpec, margin: Item) -> Item | None:
    """The autoencoder's decoding of one image at native resolution, beyond the margin."""
    pixels = _native_pixels(pipeline.native_resolution)
    if pixels is None:
        return None
    width, height = pixels
    return excess_item(
        gettext("Image decoding at native resolution"),
        width * height * VAE_DECODE_BYTES_PER_PIXEL,
        margin,
        gettext(
            "%(width)s × %(height)s pixels × %(bytes)s bytes "
            "(the autoencoder's last upsampling: 256 channels at full resolution in 32-bit and its "
            "16-bit "
            "copy, 256 × 6, plus its half-resolution source, 256 × 6 ÷ 4)"
        ) % {
            "width": fmt_int(width),
            "height": fmt_int(height),
            "bytes": fmt_int(VAE_DECODE_BYTES_PER_PIXEL),
        },
    )


def image_words(pipeline: ImagePipelineSpec, precision: int) -> tuple[str, ...]:
    if pipeline.native_resolution:
        resolution = gettext("its native resolution of %(resolution)s pixels") % {
            "resolution": pipeline.native_resolution
        }
    else:
        resolution = gettext("its native resolution")
    return (
        gettext(
            "Every network of the pipeline is loaded on the GPU at once, each counted at its exact "
            "parameter count in %(bits)s-bit."
        ) % {"bits": precision},
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
    decode = decode_item(pipeline, margin)
    return Breakdown(
        workload="image",
        title=gettext("%(model)s, image generation, %(bits)s-bit") % {
            "model": pipeline.name, "bits": precision
        },
        items=(*networks, margin, *([decode] if decode else []), runtime_item()),
        assumptions=image_words(pipeline, precision),
        precision=precision,
        splittable_over_heads=None,
        confidence_hint="image",
        inputs={"model": pipeline.slug, "model_name": pipeline.name, "precision": precision},
    )
