"""Reading an architecture's stored form (a dict in the catalog); every refusal names the field at
fault."""
from __future__ import annotations

from dataclasses import MISSING, fields, replace
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar, overload

from ..errors import SizingError
from ..i18n import gettext
from .shapes import (
    CHUNKED,
    FULL,
    LAYER_KINDS,
    LINEAR,
    LINEAR_KINDS,
    MLA,
    PLAIN,
    QUANTIZABLE_ROLES,
    SLIDING,
    VISION_KINDS,
    WEIGHT_FORMATS,
    Architecture,
    LinearAttention,
    MoE,
    NativeWeights,
    VisionTower,
    Yarn,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Part = TypeVar("_Part", bound="DataclassInstance")

# --- reading the stored form ----------------------------------------------------------------------

def _fail(path: str, message: str) -> NoReturn:
    raise SizingError("architecture", f"architecture.{path}: {message}")


@overload
def _int(value: object, path: str, minimum: int = 1, optional: Literal[False] = False) -> int: ...
@overload
def _int(value: object, path: str, minimum: int = 1, optional: bool = False) -> int | None: ...
def _int(value: object, path: str, minimum: int = 1, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _fail(path, gettext("must be a whole number of at least %(minimum)s, not %(value)s.") % {
            "minimum": minimum, "value": repr(value)
        })
    return value


def _bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        _fail(path, gettext("must be true or false, not %(value)s.") % {"value": repr(value)})
    return value


def _part(cls: type[_Part], data: object, path: str, ints: dict[str, int], bools: tuple[str, ...] = (),
          optional: tuple[str, ...] = ()) -> _Part:
    if not isinstance(data, dict):
        _fail(path, gettext("must be an object."))
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        _fail(f"{path}.{unknown[0]}", gettext("is not a figure this architecture knows."))
    defaults = {f.name: f.default for f in fields(cls)}
    values: dict[str, object] = {}
    for name, minimum in ints.items():
        if name in data:
            values[name] = _int(data[name], f"{path}.{name}", minimum, optional=name in optional)
        elif defaults[name] is MISSING:
            _fail(f"{path}.{name}", gettext("is required."))
    for name in bools:
        if name in data:
            values[name] = _bool(data[name], f"{path}.{name}")
    return cls(**values)


def architecture_from_dict(data: dict[str, Any] | None) -> Architecture:
    """The architecture in its stored form (a JSON object); `{}` or None is the plain decoder."""
    if not data:
        return PLAIN
    if not isinstance(data, dict):
        raise SizingError("architecture", gettext("The architecture must be a JSON object."))
    known = {f.name for f in fields(Architecture)}
    unknown = sorted(set(data) - known)
    if unknown:
        _fail(unknown[0], gettext("is not a figure this architecture knows."))
    values: dict[str, Any] = {}
    pattern = data.get("layer_pattern", FULL)
    if not isinstance(pattern, str) or not pattern or set(pattern) - set(LAYER_KINDS):
        letters = ", ".join(f"{k} ({v})" for k, v in LAYER_KINDS.items())
        _fail("layer_pattern", gettext("must be letters %(letters)s, not %(value)s.") % {
            "letters": letters, "value": repr(pattern)
        })
    values["layer_pattern"] = pattern
    for name in ("sliding_window", "attention_chunk"):
        values[name] = _int(data.get(name), name, optional=True)
    if SLIDING in pattern and values["sliding_window"] is None:
        _fail("sliding_window", gettext("is required when some layers slide (S in layer_pattern)."))
    if CHUNKED in pattern and values["attention_chunk"] is None:
        _fail(
            "attention_chunk", gettext("is required when some layers attend to chunks (C in layer_pattern).")
        )
    if "mla" in data:
        values["mla"] = _part(
            MLA, data["mla"], "mla",
            {"kv_lora_rank": 1, "qk_rope_head_dim": 1, "qk_nope_head_dim": 1, "v_head_dim": 1,
             "q_lora_rank": 1},
            optional=("q_lora_rank",),
        )
    if "linear_attention" in data:
        linear = data["linear_attention"]
        kind = linear.get("kind") if isinstance(linear, dict) else None
        if kind is not None and kind not in LINEAR_KINDS:
            _fail("linear_attention.kind", gettext("must be one of %(choices)s.") % {
                "choices": ", ".join(LINEAR_KINDS)})
        read = _part(
            LinearAttention, {key: value for key, value in linear.items() if key != "kind"}
            if isinstance(linear, dict) else linear, "linear_attention",
            {"key_heads": 1, "value_heads": 1, "key_head_dim": 1, "value_head_dim": 1, "conv_kernel": 1},
        )
        values["linear_attention"] = replace(read, kind=kind) if kind is not None else read
    if LINEAR in pattern and "linear_attention" not in values:
        _fail(
            "linear_attention",
            gettext("is required when some layers are linear attention (L in layer_pattern)."),
        )
    if "moe" in data:
        moe = _part(
            MoE, data["moe"], "moe",
            {"experts": 1, "experts_per_token": 1, "expert_intermediate": 1, "shared_intermediate": 0,
             "first_dense_layers": 0, "layer_step": 1, "dense_intermediate": 1},
            bools=("expert_bias", "router_bias", "shared_expert_gate"),
            optional=("dense_intermediate",),
        )
        if moe.experts_per_token > moe.experts:
            _fail("moe.experts_per_token", gettext("cannot exceed the number of experts."))
        values["moe"] = moe
    if "vision" in data:
        vision = data["vision"]
        if not isinstance(vision, dict) or vision.get("kind") not in VISION_KINDS:
            _fail(
                "vision.kind", gettext("must be one of %(choices)s.") % {"choices": ", ".join(VISION_KINDS)}
            )
        values["vision"] = VisionTower(
            kind=vision["kind"],
            **{name: _int(vision.get(name), f"vision.{name}") for name in
               ("layers", "hidden", "intermediate", "patch_size", "image_size")},
            projector_input=_int(vision.get("projector_input", 0), "vision.projector_input", 0),
        )
    if "yarn" in data:
        yarn = _part(Yarn, data["yarn"], "yarn", {"factor": 2, "original_context": 1, "rope_theta": 1})
        values["yarn"] = yarn
    if "native_weights" in data:
        native = data["native_weights"]
        if not isinstance(native, dict) or native.get("format") not in WEIGHT_FORMATS:
            _fail(
                "native_weights.format",
                gettext("must be one of %(choices)s.") % {"choices": ", ".join(WEIGHT_FORMATS)},
            )
        quantized = native.get("quantized")
        if (not isinstance(quantized, list | tuple) or not quantized
                or set(quantized) - set(QUANTIZABLE_ROLES)):
            _fail(
                "native_weights.quantized",
                gettext("must list some of %(choices)s.") % {"choices": ", ".join(QUANTIZABLE_ROLES)},
            )
        values["native_weights"] = NativeWeights(
            format=native["format"], block=_int(native.get("block"), "native_weights.block"),
            quantized=tuple(sorted(set(quantized), key=QUANTIZABLE_ROLES.index)),
        )
    for name in ("qkv_bias", "o_bias", "qk_norm", "attention_output_gate", "sinks",
                 "mtp_own_embeddings", "local_rope", "no_rope"):
        if name in data:
            values[name] = _bool(data[name], name)
    values["norms_per_layer"] = _int(data.get("norms_per_layer", 2), "norms_per_layer", 0)
    values["mtp_layers"] = _int(data.get("mtp_layers", 0), "mtp_layers", 0)
    values["rope_linear_factor"] = _int(data.get("rope_linear_factor", 1), "rope_linear_factor")
    values["rotary_dim"] = _int(data.get("rotary_dim"), "rotary_dim", optional=True)
    return Architecture(**values)

