"""Plain values describing models, as published. `None` means "not published", never zero."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .architectures import Architecture

Precision = Literal[16, 8, 4]
ComponentRole = Literal["denoiser", "text_encoder", "autoencoder"]
PRECISIONS: tuple[int, ...] = (16, 8, 4)
BYTES_PER_PARAMETER = {16: 2.0, 8: 1.0, 4: 0.5}


@dataclass(frozen=True)
class PublishedGguf:
    """One GGUF file published for a model: the Hub repository, the quant type, the file's name and its
    size in bytes as the repository lists it (None: not verified)."""

    repository: str
    quant_type: str
    file: str
    bytes: int | None = None


@dataclass(frozen=True)
class LanguageModelSpec:
    slug: str
    name: str
    parameters: int | None
    layers: int | None
    attention_heads: int | None
    kv_heads: int | None
    head_dim: int | None
    hidden_size: int | None
    intermediate_size: int | None = None
    vocab_size: int | None = None
    max_context: int | None = None
    # The output head shares the embedding matrix. None: not recorded, sized as a separate head.
    tied_embeddings: bool | None = None
    # Layer kinds, MoE, MLA, native weight format... None = the plain decoder of SPEC §3.
    architecture: Architecture | None = None
    active_parameters: int | None = None  # per token, for mixtures of experts
    # The Hugging Face Hub id `vllm serve` loads; None = not recorded. Not a figure: specs compare without it.
    hf_id: str | None = field(default=None, compare=False)
    # Its repository holds code the engines run to load it: vLLM and SGLang start it with --trust-remote-code.
    trust_remote_code: bool = False
    # The GGUF files published for the model (llama.cpp's and Ollama's answers name one); () = none recorded.
    gguf_files: tuple[PublishedGguf, ...] = field(default=(), compare=False)

    def published_gguf(self, quant_type: str) -> PublishedGguf | None:
        """The first published file in `quant_type` (the catalog lists the repositories in its order)."""
        return next((found for found in self.gguf_files if found.quant_type == quant_type), None)

    @property
    def longest_context(self) -> int | None:
        """The longest context the model is sized for: its own maximum, or, where its card documents
        YaRN, the scaled context when that is longer (None: neither recorded)."""
        yarn = self.architecture.yarn if self.architecture is not None else None
        if yarn is None:
            return self.max_context
        return max(self.max_context or 0, yarn.context)

    def scaled_beyond_native(self, tokens: int) -> bool:
        """Whether `tokens` of context need the documented YaRN scaling turned on."""
        return (self.architecture is not None and self.architecture.yarn is not None
                and self.max_context is not None and tokens > self.max_context)


@dataclass(frozen=True)
class ImageComponent:
    name: str
    role: ComponentRole
    parameters: int | None


@dataclass(frozen=True)
class ImagePipelineSpec:
    slug: str
    name: str
    components: tuple[ImageComponent, ...]
    native_resolution: str | None = None  # e.g. "1024x1024"


@dataclass(frozen=True)
class SpeechModelSpec:
    slug: str
    name: str
    parameters: int | None
    decoder_layers: int | None
    d_model: int | None
    attention_heads: int | None
    max_source_positions: int | None  # encoder frames of the 30-second window (1500)
    max_target_positions: int | None  # decoder token positions (448)
    extra: dict[str, Any] = field(default_factory=dict)
