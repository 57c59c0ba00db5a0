"""Recognising speech (SPEC §3): weights, the decoder's self- and cross-attention caches, margin and
runtime."""
from __future__ import annotations

from fractions import Fraction

from .. import nouns
from ..breakdown import Breakdown, Item
from ..i18n import gettext
from ..kv_cache import check_kv_bits
from ..limits import MAX_BEAMS, MAX_REQUESTS
from ..specs import SpeechModelSpec
from ..units import fmt_int
from .checks import check_count, check_precision, model_value
from .items import bytes_label, margin_item, runtime_item, weights_item

DEFAULT_BEAMS = 5


def decoder_cache_item(model: SpeechModelSpec, streams: int, beams: int, kv_bits: int) -> Item:
    """Every beam keeps its own self-attention cache; the encoder frames' cross-attention cache is
    computed once per stream and shared by its beams."""
    kv_bytes = kv_bits // 8
    decoder_layers = model_value(model, "decoder_layers")
    d_model = model_value(model, "d_model")
    self_positions = model_value(model, "max_target_positions")
    cross_positions = model_value(model, "max_source_positions")
    return Item(
        name=gettext("Decoder KV cache"),
        formula=gettext(
            "2 (K and V) × %(layers)s decoder layers × %(d_model)s d_model × "
            "%(bytes)s × (%(self)s self-attention positions × "
            "%(beams)s + %(cross)s cross-attention positions) × %(streams)s"
        ) % {
            "layers": fmt_int(decoder_layers), "d_model": fmt_int(d_model),
            "bytes": bytes_label(Fraction(kv_bytes)),
            "self": fmt_int(self_positions), "beams": nouns.beams(beams), "cross": fmt_int(cross_positions),
            "streams": nouns.streams(streams),
        },
        bytes=(2 * decoder_layers * d_model * kv_bytes
               * (self_positions * beams + cross_positions) * streams),
    )


def speech_words(model: SpeechModelSpec, beams: int, kv_bits: int) -> tuple[str, ...]:
    self_positions = model_value(model, "max_target_positions")
    cross_positions = model_value(model, "max_source_positions")
    return (
        gettext(
            "Audio is processed in the model's 30-second window: the decoder caches its own "
            "%(self)s token positions and the %(cross)s encoder frames it attends to."
        ) % {"self": fmt_int(self_positions), "cross": fmt_int(cross_positions)},
        gettext("Each stream decodes with beam search of %(beams)s (the default of openai-whisper's command "
         "line and of faster-whisper): every beam keeps its own self-attention cache, while the encoder "
         "frames' cross-attention cache is computed once per stream and shared by its beams, as "
         "openai-whisper and CTranslate2 do. Count concurrent audio streams, not beams, in the streams "
         "field; transformers' "
         "generate() copies the cross-attention cache for every beam and needs more.") % {
             "beams": fmt_int(beams)
         },
        (gettext("The KV cache is kept in 16-bit whatever the weights' precision.") if kv_bits == 16 else
         gettext("The KV cache is kept in 8-bit (vLLM's fp8 KV cache) whatever the weights' precision.")),
        gettext("The 20 %% safety margin covers the encoder's activations, temporary buffers and "
                "fragmentation.") % {},
        gettext("Speech models are sized for one GPU."),
    )


def estimate_speech(
    model: SpeechModelSpec, precision: int, streams: int, beams: int = DEFAULT_BEAMS, kv_bits: int = 16
) -> Breakdown:
    precision = check_precision(precision)
    kv_bits = check_kv_bits(kv_bits)
    streams = check_count(streams, "streams", gettext("The number of concurrent audio streams"), MAX_REQUESTS)
    beams = check_count(beams, "beams", gettext("The beam size"), MAX_BEAMS)
    parameters = model_value(model, "parameters")
    for name in ("decoder_layers", "d_model", "max_target_positions", "max_source_positions"):
        model_value(model, name)
    weights = weights_item(gettext("Model weights"), parameters, precision)
    kv_cache = decoder_cache_item(model, streams, beams, kv_bits)
    margin = margin_item([weights, kv_cache], gettext("model weights + decoder KV cache"))
    return Breakdown(
        workload="speech",
        title=gettext("%(model)s, speech recognition, %(bits)s-bit%(kv)s, %(streams)s") % {
            "model": model.name, "bits": precision, "kv": gettext(", 8-bit KV cache") if kv_bits == 8 else "",
            "streams": nouns.audio_streams(streams),
        },
        items=(weights, kv_cache, margin, runtime_item()),
        assumptions=speech_words(model, beams, kv_bits),
        precision=precision,
        splittable_over_heads=None,
        inputs={"model": model.slug, "model_name": model.name, "precision": precision, "streams": streams,
                "beams": beams, "kv_bits": kv_bits},
    )

