"""llama.cpp (`llama-server`) and Ollama: what a GGUF model takes on the GPU and beside it.

- Weights: the GGUF file's tensors as `sizing.gguf` types them. `-ngl N` puts the last N decoder
  layers on the GPUs (and, past the layer count, the output head) up to b7108, and from b7847 the output
  head and the last N − 1 layers (ggml-org/llama.cpp#18148; a build between or not given: the placement
  needing more, `offload_placement`); the token embeddings always stay in host memory (the row lookup
  runs on the CPU), as do the layers left behind. Split by layers over
  several GPUs (--split-mode layer, the default), each GPU holds the layers llama.cpp gives it
  (`split_layers`: the -ngl layers and the head are slots, slot i on GPU ⌊i × GPUs / slots⌋), not an even
  share: where the GPUs do not divide the slots some hold one more, and the head is the last GPU's slot.
- KV cache: `-c` tokens in all, shared by the `-np` parallel slots, for every layer, K and V each in
  its cache type: f16 (2 bytes a value), q8_0 (34 bytes per 32), q4_0 (18 per 32)…; a quantized V
  cache needs flash attention. Laid out as the build does (`llamacpp_builds.kv_layout`): in one pool a
  sliding-window layer keeps its window per slot plus one micro-batch; where the cache keeps one stream
  per slot (llama-server from b5913 with -np and no --kv-unified, Ollama from 0.30), each slot's share is
  rounded up on its own and a sliding-window layer keeps its window plus one micro-batch in every stream.
  A layer's cache lives where the layer does, so a GPU of a split holds its own layers' (a sliding-window
  layer's smaller).
- Compute buffer: the peak of ggml's graph allocator over the graph llama.cpp reserves for one
  micro-batch (`-ub`, 512 tokens; `llamacpp_graph`): tensors reuse the memory of those already read, so
  the buffer is the largest set alive at once, not a sum: the MLP step, without flash attention the
  attention scores of the cache a token attends to (heads × cells × tokens × 4 bytes: one stream's cells
  where the cache keeps a stream per slot, every cell of a pool; latent attention's V-less cache adds the
  latent of every cell copied transposed, V being a view of K), and on the GPU holding the
  output head the logits the build reserves (vocabulary × rows × 4 bytes): every token of the
  micro-batch, as the library's default, Ollama's own runners and llama-server before build b9460
  reserve them, or one row per slot, as llama-server does from b9460 (`llamacpp_builds`; a build not
  given is sized on the whole micro-batch, the larger need). Where the cache keeps a stream per slot the
  micro-batch is reserved rounded up to a multiple of -np (`reserved_tokens`). Split by layers over several
  GPUs only the last holds the output head and its logits; each other reserves its own layers' graph
  without them (`split_layers`). Each GPU's need is its own layers' weights and cache, the head's weights
  where it holds the head, its compute buffer and CUDA context (`gpu_needs`); the need per GPU is the
  largest GPU's.
- Ollama runs the same engine: its context (`num_ctx`, `OLLAMA_CONTEXT_LENGTH`) is per request and is
  allocated `OLLAMA_NUM_PARALLEL` times; `OLLAMA_KV_CACHE_TYPE` and `OLLAMA_FLASH_ATTENTION` set the
  cache type and flash attention for every model.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import cast

from ..architectures import KIMI_DELTA, LINEAR, PLAIN, SLIDING, LinearAttention
from ..breakdown import Item
from ..errors import SizingError
from ..gguf import GgufWeights, check_quant_type, gguf_weights
from ..i18n import gettext, ngettext
from ..limits import MAX_CONTEXT
from ..specs import LanguageModelSpec
from ..units import MIB, fmt_gib, fmt_int
from .checks import check_context_limit, check_count, model_value
from .llamacpp_builds import (
    AUTO_SLOTS,
    AUTO_SLOTS_FROM,
    AUTO_SLOTS_UNTIL,
    HEAD_FIRST,
    HEAD_FIRST_FROM,
    KV_AUTO_SLOTS,
    KV_LARGER,
    KV_POOL,
    KV_STREAMS,
    LAYERS_FIRST,
    LAYERS_FIRST_UNTIL,
    LLAMACPP,
    NOT_GIVEN,
    OFFLOAD_LARGER,
    OLLAMA,
    ONE_ROW_PER_SLOT,
    PER_SLOT_FROM,
    WHOLE_MICRO_BATCH,
    LlamaCppBuild,
    kv_layout,
)
from .llamacpp_graph import (
    DeltaNetShape,
    GraphShape,
    compute_buffer_bytes,
    delta_net_layer_bytes,
    kda_layer_bytes,
)

# Cache types llama.cpp takes for K and V (--cache-type-k/-v): (values per block, bytes per block).
KV_CACHE_TYPES: dict[str, tuple[int, int]] = {
    "f16": (1, 2), "bf16": (1, 2), "f32": (1, 4), "q8_0": (32, 34), "q5_1": (32, 24), "q5_0": (32, 22),
    "q4_1": (32, 20), "q4_0": (32, 18), "iq4_nl": (32, 18),
}
KV_PADDING = 256  # the cache's length is a multiple of this many tokens
DEFAULT_UBATCH = 512  # -ub: the tokens of one micro-batch, what the compute buffer is reserved for
MAX_SLOTS = 256  # -np: llama-server's parallel slots
MAX_GPU_LAYERS = 999  # -ngl 999: everything, whatever the model (what the commands write)
MAX_UBATCH = 8192
CUDA_CONTEXT_BYTES = 300 * MIB  # the CUDA runtime and cuBLAS per GPU, outside llama.cpp's buffers
PIPELINE_COPIES = 4  # GGML_SCHED_MAX_COPIES: copies of each split's inputs under pipeline parallelism
RECURRENT_STATE_BYTES = 4  # llama_memory_recurrent's R and S: GGML_TYPE_F32 (create_memory), any cache type
# Ollama's qwen3next keeps this many checkpoints of each slot's recurrent state beside it, every one reserved
# at load for every slot and layer (model/models/qwen3next: checkpointCountDefault, reserveCheckpoint*).
OLLAMA_STATE_CHECKPOINTS = 32
ENGINES = ("llamacpp", "ollama")


@dataclass(frozen=True)
class LlamaCppSettings:
    quant_type: str
    context: int  # -c: every slot's tokens together (Ollama: num_ctx × OLLAMA_NUM_PARALLEL)
    parallel: int = 1  # -np
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    flash_attention: bool = True
    gpu_layers: int | None = None  # -ngl; None: every layer and the output head
    ubatch: int = DEFAULT_UBATCH
    # The rows of logits the compute buffer is reserved for: the whole micro-batch, or one per slot
    # (llama-server from b9460, `llamacpp_builds.LlamaCppBuild.reservation`).
    reservation: str = WHOLE_MICRO_BATCH
    # How the KV cache is laid out (`llamacpp_builds.kv_layout`): one pool shared by the slots, one stream
    # per slot (llama-server started with -np and without --kv-unified, from b5913; Ollama from 0.30), -np 1
    # run as four slots over one pool (b6823–b7432), or, the build not known, the larger of pool and streams.
    kv_layout: str = KV_POOL
    # llama-server's --kv-unified (from b5913): one pool the slots share, whatever the build's default, and
    # each slot may take up to -c of it (llama_context: n_ctx_seq = n_ctx), not -c ÷ -np.
    kv_unified: bool = False
    # Latent attention's cache (`kv_cache_bytes`): the latent kept again as V (builds before the V-less
    # cache, or the build not known: `LlamaCppBuild.caches_latent_values`), or K alone.
    latent_values: bool = True
    # How -ngl places the layers and the output head (`offload_placement`): the last N layers, the head and
    # the last N − 1 (ggml-org/llama.cpp#18148, b7847 on), or, the build not known, the larger need.
    offload: str = LAYERS_FIRST
    # Copies of each slot's recurrent state kept beside it (linear attention): none in llama.cpp, Ollama's
    # checkpoints (OLLAMA_STATE_CHECKPOINTS) under Ollama.
    state_checkpoints: int = 0

    @property
    def layout(self) -> str:
        """The layout sized: with one slot a stream is the pool; --kv-unified, one pool (as the builds that
        run -np 1 as four slots already keep them)."""
        if self.kv_unified and self.kv_layout != KV_AUTO_SLOTS:
            return KV_POOL
        if self.parallel == 1 and self.kv_layout in (KV_STREAMS, KV_LARGER):
            return KV_POOL
        return self.kv_layout


@dataclass(frozen=True)
class LlamaCppNeed:
    """Where each part of the model and its cache lives, in bytes."""

    model: LanguageModelSpec
    settings: LlamaCppSettings
    weights: GgufWeights
    gpu_layers: int  # the decoder layers on the GPUs
    output_on_gpu: bool
    kv_size: int  # the cache's cells in all (-c rounded up to KV_PADDING, each stream's too; `cache_cells`)
    gpu_items: tuple[Item, ...]
    host_items: tuple[Item, ...]
    # What each GPU's compute buffer adds when several split the layers with every layer and the head on
    # them: llama.cpp then runs them as a pipeline and keeps PIPELINE_COPIES of each split's inputs, never
    # freed.
    pipeline_bytes: int = 0

    @property
    def gpu_bytes(self) -> int:
        return sum(item.bytes for item in self.gpu_items)

    @property
    def host_bytes(self) -> int:
        return sum(item.bytes for item in self.host_items)

    @property
    def kv_cache_bytes(self) -> int:
        layers = range(model_value(self.model, "layers"))
        return kv_cache_bytes(self.model, self.settings, self.kv_size, layers)

    @property
    def pipelined(self) -> bool:
        """Every decoder layer and the output head on the GPUs: split over several, llama.cpp runs them as a
        pipeline (llama_context: n_gpu_layers > n_layer). From ggml-org/llama.cpp#18148 a partial offload
        holds the head too, and is no pipeline."""
        return self.output_on_gpu and self.gpu_layers == model_value(self.model, "layers")

    @property
    def pipeline_item(self) -> Item | None:
        """What each GPU adds to its compute buffer when several run the layers as a pipeline (None: no
        pipeline: one GPU, or a layer or the head left in host memory)."""
        if not self.pipeline_bytes:
            return None
        return Item(gettext("Pipeline copies of the compute buffer's inputs"), gettext(
            "on each GPU when several hold every layer and the head: llama.cpp runs them as a pipeline and "
            "keeps %(copies)s copies of the inputs of each GPU's part of the graph (the hidden states, "
            "positions, cache indices and attention mask), never freed"
        ) % {"copies": PIPELINE_COPIES}, self.pipeline_bytes, per_gpu=True)

    @property
    def context_per_slot(self) -> int:
        """The most tokens one request may hold: -c ÷ -np, or with --kv-unified all of -c (the slots share
        one pool's cells as they need them)."""
        if self.settings.kv_unified:
            return self.settings.context
        return self.settings.context // self.settings.parallel

    def other_gpus_compute_bytes(self, gpus: int) -> int:
        """The largest compute buffer of the GPUs without the output head when the layers are split over
        `gpus` GPUs with the head on them (0 where none is: one GPU, or the head left in host memory): each
        is reserved over its own layers (`split_layers`), with no output rows and no logits, and the
        pipeline's copies of its inputs."""
        if gpus < 2 or not self.pipelined:
            return 0
        return other_gpus_compute(self.model, self.settings, gpus)

    def other_gpus_item(self, gpus: int) -> Item | None:
        """The compute buffer of the GPUs without the output head, split by layers over `gpus` (None: no
        such GPU, `other_gpus_compute_bytes`)."""
        other = self.other_gpus_compute_bytes(gpus)
        if not other:
            return None
        return Item(gettext("Compute buffer on each other GPU"), ngettext(
            "the %(others)s GPU without the output head (llama.cpp puts it on the last): the graph of its "
            "own layers, without the output rows and logits, with the pipeline's %(copies)s copies of its "
            "inputs",
            "the largest of the %(others)s GPUs without the output head (llama.cpp puts it on the last): "
            "the graph of its own layers, without the output rows and logits, with the pipeline's "
            "%(copies)s copies of its inputs", gpus - 1,
        ) % {"others": fmt_int(gpus - 1), "copies": PIPELINE_COPIES}, other, per_gpu=True)

    def gpu_needs(self, gpus: int, others: bool = True) -> tuple[GpuNeed, ...]:
        """Each GPU's need split by layers over `gpus` (--split-mode layer, `gpu_needs`): its own layers'
        weights and KV cache, the output head's weights on the GPU holding it, its compute buffer and CUDA
        context (`others` false: the other GPUs' buffers of a pipeline left at 0, no allocator run)."""
        return gpu_needs(self.model, self.settings, gpus, self.gpu_items[2].bytes, self.pipeline_bytes,
                         others)

    def per_gpu_bytes(self, gpus: int) -> int:
        """The largest GPU's need when the layers are split over `gpus` GPUs (`gpu_needs`): what each of
        them must hold."""
        return largest_need(self.gpu_needs(gpus)).bytes

    def holds(self, gpus: int, memory_bytes: int) -> bool:
        """Whether every GPU's need fits `gpus` GPUs of `memory_bytes` each (`per_gpu_bytes`), in bytes alone
        (what a capacity search asks at every probe). The other GPUs of a pipeline are sized one at a time,
        the most weights and cache first, and none once one does not fit (each buffer an allocator run
        spared where a GPU is already known not to fit)."""
        needs = self.gpu_needs(gpus, others=False)  # the other GPUs' of a pipeline without their buffers
        if any(need.bytes > memory_bytes for need in needs):
            return False
        if not (gpus > 1 and self.pipelined):
            return True
        others = sorted((need for need in needs if need.share.layers and not need.share.output_head),
                        key=lambda need: need.bytes, reverse=True)
        return all(need.bytes + buffer_without_head(self.model, self.settings, need.share.layers)
                   <= memory_bytes for need in others)

    def fits(self, gpus: int, memory_bytes: int) -> tuple[bool, str | None]:
        """`holds`, and where it does not, why: the GPU needing the most, by what it holds."""
        if self.holds(gpus, memory_bytes):
            return True, None
        need = largest_need(self.gpu_needs(gpus))
        values = {"gpu": fmt_int(need.index + 1), "gpus": fmt_int(gpus), "need": fmt_gib(need.bytes),
                  "have": fmt_gib(memory_bytes), "held": held_words(need.share)}
        return False, ngettext(
            "The GPU needs %(need)s (the weights and KV cache of %(held)s, its compute buffer and CUDA "
            "context), more than its %(have)s.",
            "GPU %(gpu)s of %(gpus)s needs %(need)s (the weights and KV cache of %(held)s, its compute "
            "buffer and CUDA context), more than its %(have)s.", gpus,
        ) % values

    def layers_that_fit(
        self, gpus: int, memory_bytes: int, needs: dict[int, LlamaCppNeed] | None = None
    ) -> int:
        """The largest -ngl whose layers (and head), as the build places them (`offload_placement`), fit the
        GPUs with their cache and the compute buffer (0 if not even the first does): what a partial offload
        can keep on them. `needs`: the need at each -ngl sized already, kept across searches of one need."""
        layers = model_value(self.model, "layers")
        needs = {} if needs is None else needs
        low, high = 0, layers + 1
        while low < high:
            middle = (low + high + 1) // 2
            if middle not in needs:
                needs[middle] = llamacpp_need(self.model, _with_layers(self.settings, middle))
            need = needs[middle]
            if need.holds(gpus, memory_bytes):
                low = middle
            else:
                high = middle - 1
        return low

    def server_command(self, file_name: str) -> str:
        """`llama-server` with the settings this need was sized for."""
        settings = self.settings
        parts = ["llama-server", "-m", file_name, "-c", str(settings.context), "-np", str(settings.parallel),
                 "-ngl", str(settings.gpu_layers if settings.gpu_layers is not None else MAX_GPU_LAYERS),
                 "-fa", "on" if settings.flash_attention else "off"]
        if settings.cache_type_k != "f16":
            parts += ["--cache-type-k", settings.cache_type_k]
        if settings.cache_type_v != "f16":
            parts += ["--cache-type-v", settings.cache_type_v]
        if settings.ubatch != DEFAULT_UBATCH:
            parts += ["-ub", str(settings.ubatch)]
        if settings.kv_unified:
            parts.append("--kv-unified")
        return " ".join(parts)

    def ollama_settings(self) -> dict[str, str]:
        """Ollama's server settings for the same need: the context per request and the slots, the cache
        type (one for K and V) and flash attention; num_gpu is the layers offloaded."""
        settings = self.settings
        values = {
            "OLLAMA_CONTEXT_LENGTH": str(self.context_per_slot),
            "OLLAMA_NUM_PARALLEL": str(settings.parallel),
            "OLLAMA_FLASH_ATTENTION": "1" if settings.flash_attention else "0",
            "OLLAMA_KV_CACHE_TYPE": settings.cache_type_k,
        }
        if settings.gpu_layers is not None:
            values["num_gpu"] = str(settings.gpu_layers)
        return values


def _slot_gpu(slot: int, active: int, gpus: int) -> int:
    """The GPU of `gpus` identical ones that holds slot `slot` of `active` under --split-mode layer, as
    llama.cpp's `llama_model::load_tensors` assigns it: upper_bound(splits, slot / active), the split points
    being each GPU's share of the free memory, cumulative (equal here: 1/gpus, 2/gpus, …), so
    ⌊slot × gpus / active⌋. The one rule of which GPU holds what (`split_layers`, `head_gpu`)."""
    return slot * gpus // active


@functools.lru_cache(maxsize=4096)
def split_layers(first_gpu_layer: int, layers: int, output_on_gpu: bool, gpus: int) -> tuple[range, ...]:
    """The decoder layers each of `gpus` identical GPUs holds under --split-mode layer: the GPU layers
    (`first_gpu_layer` on, llama.cpp's i_gpu_start, `offload_placement`) and, where it is on them, the
    output head (slot `layers`) are `act` slots (min(-ngl, layers + 1)), slot i on GPU `_slot_gpu`: the head
    is the last slot under either placement (from ggml-org/llama.cpp#18148 -ngl N counts it among the N)."""
    active = layers - first_gpu_layer + (1 if output_on_gpu else 0)
    found: list[list[int]] = [[] for _ in range(gpus)]
    for layer in range(first_gpu_layer, layers):
        found[_slot_gpu(layer - first_gpu_layer, active, gpus)].append(layer)
    return tuple(range(held[0], held[-1] + 1) if held else range(0) for held in found)


def head_gpu(first_gpu_layer: int, layers: int, gpus: int) -> int:
    """The GPU holding the output head where every layer and the head are offloaded: the last slot's, the
    last GPU wherever there are no more GPUs than slots (`_slot_gpu`)."""
    active = layers - first_gpu_layer + 1
    return _slot_gpu(active - 1, active, gpus)


@dataclass(frozen=True)
class GpuShare:
    """What one GPU holds of the model split by layers (--split-mode layer): its own decoder layers, their
    weights and their KV cache (a sliding-window layer's smaller), and on the GPU holding it the output
    head's weights."""

    layers: range
    output_head: bool
    weights_bytes: int
    kv_cache_bytes: int


@functools.lru_cache(maxsize=4096)
def gpu_shares(model: LanguageModelSpec, settings: LlamaCppSettings, gpus: int) -> tuple[GpuShare, ...]:
    """Each of `gpus` identical GPUs' share under the settings' -ngl, in llama.cpp's device order: the
    layers `split_layers` gives it, the head on `head_gpu` (`_weights_split`), and their cache. Kept per
    model, settings and GPU count as the other GPUs' buffers are: a fit's thresholds ask every GPU count, a
    capacity search every probe."""
    kv_size = cache_cells(settings)
    split = _weights_split(model, settings.quant_type, *offload_placement(model, settings), gpus)
    return tuple(GpuShare(held, head, weights, kv_cache_bytes(model, settings, kv_size, held))
                 for held, head, weights in split)


@functools.lru_cache(maxsize=4096)
def _weights_split(model: LanguageModelSpec, quant_type: str, first_gpu_layer: int, output_on_gpu: bool,
                   gpus: int) -> tuple[tuple[range, bool, int], ...]:
    """Each GPU's layers, whether it holds the head, and their weights (the head's with them): the file's
    and the placement (`offload_placement`) alone decide them, so a capacity search, whose probes change
    the context and the slots, adds them up once per GPU count."""
    layers = model_value(model, "layers")
    weights = _typed_file(model, check_quant_type(quant_type))
    holder = head_gpu(first_gpu_layer, layers, gpus) if output_on_gpu else None
    head = _head_bytes(model, weights)
    return tuple((held, index == holder,
                  sum(weights.layer_bytes(layer) for layer in held) + (head if index == holder else 0))
                 for index, held in enumerate(split_layers(first_gpu_layer, layers, output_on_gpu, gpus)))


@dataclass(frozen=True)
class GpuNeed:
    """One GPU's need split by layers: its share (`GpuShare`), its compute buffer, the pipeline's copies of
    its inputs where they are counted apart (the GPU with the head's; each other GPU's buffer holds its
    own) and the CUDA context."""

    index: int  # llama.cpp's device order: CUDA0, CUDA1, …
    share: GpuShare
    compute_bytes: int
    pipeline_bytes: int

    @property
    def bytes(self) -> int:
        share = self.share
        return (share.weights_bytes + share.kv_cache_bytes + self.compute_bytes + self.pipeline_bytes
                + CUDA_CONTEXT_BYTES)


def gpu_needs(model: LanguageModelSpec, settings: LlamaCppSettings, gpus: int, compute: int, pipeline: int,
              others: bool = True) -> tuple[GpuNeed, ...]:
    """Each GPU's need over `gpus` GPUs, `compute` being the compute buffer `llamacpp_need` sizes (the
    GPU holding the head's, or with the head on the host each GPU's) and `pipeline` its copies of the
    inputs where several GPUs hold every layer and the head. Those GPUs run as a pipeline: each other GPU
    reserves its own layers' graph (`other_gpus_buffers`; left at 0 where `others` is false, a floor that
    runs no allocator). Short of that (a partial offload, the head on the GPUs or not) each GPU holding a
    part is sized for `compute`, the buffer over every offloaded layer. A GPU holding nothing keeps its
    CUDA context alone."""
    shares = gpu_shares(model, settings, gpus)
    piped = gpus > 1 and offload_placement(model, settings) == (0, True)  # every layer and the head
    buffers = other_gpus_buffers(model, settings, gpus) if piped and others else (0,) * gpus
    found = []
    for index, share in enumerate(shares):
        if piped and not share.output_head:
            found.append(GpuNeed(index, share, buffers[index], 0))
        else:
            held = bool(share.layers) or share.output_head or gpus == 1
            found.append(GpuNeed(index, share, compute if held else 0, pipeline if piped else 0))
    return tuple(found)


def held_words(share: GpuShare) -> str:
    """What a GPU holds, in words: its layers (llama.cpp's numbering, from 0) and the output head."""
    held = share.layers
    if not held:
        layers = gettext("no layer")
    elif len(held) == 1:
        layers = gettext("layer %(first)s") % {"first": fmt_int(held[0])}
    else:
        layers = gettext("layers %(first)s–%(last)s") % {"first": fmt_int(held[0]), "last": fmt_int(held[-1])}
    if share.output_head:
        return gettext("%(layers)s, with the output head's weights") % {"layers": layers}
    return layers


def largest_need(needs: tuple[GpuNeed, ...]) -> GpuNeed:
    """The GPU needing the most (the first of those that need as much): what each GPU must hold."""
    return max(needs, key=lambda need: need.bytes)


def other_gpus_buffers(model: LanguageModelSpec, settings: LlamaCppSettings, gpus: int) -> tuple[int, ...]:
    """Each GPU's compute buffer where the settings put every layer and the output head on `gpus` GPUs, 0
    for the GPU holding the head (its buffer is the need's own) and for one holding no layer: its graph
    without the head over its own layers (`buffer_without_head`)."""
    return tuple(buffer_without_head(model, settings, share.layers) if share.layers and not share.output_head
                 else 0 for share in gpu_shares(model, settings, gpus))


def buffer_without_head(model: LanguageModelSpec, settings: LlamaCppSettings, layers: range) -> int:
    """The compute buffer of a GPU of a pipeline holding `layers` and not the head: the graph of its own
    layers without the output rows and logits, with the pipeline's copies of its inputs. The graph depends on
    its layers only through each one's kind (its cache cells), and the kinds repeat with the architecture's
    layer pattern, so GPUs holding as many layers from the same place in the pattern share one buffer."""
    period = len((model.architecture or PLAIN).layer_pattern)
    start = layers.start % period
    return _buffer_over(model, settings, range(start, start + len(layers)))


@functools.lru_cache(maxsize=16384)
def _buffer_over(model: LanguageModelSpec, settings: LlamaCppSettings, layers: range) -> int:
    """`buffer_without_head`, kept per model, settings and layers, as the bytes of figures alone (the
    allocator's peaks are kept by `compute_buffer_bytes`): a fit's thresholds ask it at every GPU count for
    each kind of GPU, and a capacity search again per probe."""
    return _compute_bytes(model, settings, layers, False, PIPELINE_COPIES)


def other_gpus_compute(model: LanguageModelSpec, settings: LlamaCppSettings, gpus: int) -> int:
    """`LlamaCppNeed.other_gpus_compute_bytes` where the settings put the output head on the GPUs: the
    largest of `other_gpus_buffers`."""
    return max(other_gpus_buffers(model, settings, gpus), default=0)


def _head_bytes(model: LanguageModelSpec, weights: GgufWeights) -> int:
    """The output head on the GPU: the output matrix and norm; where it is tied to the embeddings, llama.cpp
    loads that matrix a second time on the GPU holding the output (the embeddings' own copy stays in host
    memory)."""
    roles = ("output", "output_norm", *(("token_embd",) if model.tied_embeddings else ()))
    return sum(weights.role_bytes(role) for role in roles)


def _with_layers(settings: LlamaCppSettings, layers: int) -> LlamaCppSettings:
    return replace(settings, gpu_layers=layers)


def _placement(layers: int, gpu_layers: int | None, offload: str) -> tuple[int, bool]:
    """The first decoder layer on the GPUs and whether the output head is, for -ngl `gpu_layers` (None:
    everything) placed by `offload`: the last N layers, the head once N passes them (i_gpu_start =
    max(layers − N, 0)); or from ggml-org/llama.cpp#18148 the head and the last N − 1 layers (i_gpu_start =
    layers + 1 − min(N, layers + 1))."""
    asked = layers + 1 if gpu_layers is None else min(gpu_layers, layers + 1)
    if offload == HEAD_FIRST:
        return min(layers + 1 - asked, layers), asked > 0
    return layers - min(asked, layers), asked > layers


@functools.lru_cache(maxsize=4096)
def offload_placement(model: LanguageModelSpec, settings: LlamaCppSettings) -> tuple[int, bool]:
    """Where the settings' -ngl puts the model: the first decoder layer on the GPUs and whether the output
    head is there, as the build places them (`LlamaCppSettings.offload`). The one rule the need, the split
    over GPUs, the layers that fit and the commands read. Where the build is not known and the placements
    differ (-ngl 1 to the layer count), the one whose GPUs need more: their weights, KV cache and compute
    buffer (the head's logits among them), the layers first where they need as much."""
    layers = model_value(model, "layers")
    if settings.offload != OFFLOAD_LARGER:
        return _placement(layers, settings.gpu_layers, settings.offload)
    placements = [_placement(layers, settings.gpu_layers, rule) for rule in (LAYERS_FIRST, HEAD_FIRST)]
    if placements[0] == placements[1]:
        return placements[0]
    return max(placements, key=lambda placed: _gpu_side_bytes(model, settings, *placed))


def _gpu_side_bytes(model: LanguageModelSpec, settings: LlamaCppSettings, first_gpu_layer: int,
                    output_on_gpu: bool) -> int:
    """What the GPUs hold with the layers from `first_gpu_layer` (and the head where `output_on_gpu`): the
    weights, their KV cache and the compute buffer."""
    weights = _typed_file(model, check_quant_type(settings.quant_type))
    held = range(first_gpu_layer, model_value(model, "layers"))
    return (sum(weights.layer_bytes(layer) for layer in held)
            + (_head_bytes(model, weights) if output_on_gpu else 0)
            + kv_cache_bytes(model, settings, cache_cells(settings), held)
            + (_compute_bytes(model, settings, _graph_layers(held), output_on_gpu) if held or output_on_gpu
               else 0))


def _graph_layers(held: range) -> range:
    """The layers whose graph the GPUs' compute buffer is reserved over: their own, or where they hold the
    output head alone (-ngl 1 from ggml-org/llama.cpp#18148) the last layer's graph with the head, which
    holds more than the output rows alone (the graph is built over one layer at least)."""
    return held if held else range(held.start - 1, held.start)


def check_settings(model: LanguageModelSpec, settings: LlamaCppSettings) -> None:
    check_count(settings.context, "max_model_len", gettext("The context"), MAX_CONTEXT)
    check_count(settings.parallel, "parallel", gettext("The parallel slots"), MAX_SLOTS)
    if settings.context < settings.parallel:
        raise SizingError("parallel", gettext(
            "The context (%(context)s tokens) is shared by the parallel slots: each needs one token at least."
        ) % {"context": fmt_int(settings.context)})
    check_context_limit(model, settings.context // settings.parallel, "max_model_len")
    for field_name, cache_type in (("kv_cache", settings.cache_type_k), ("kv_cache", settings.cache_type_v)):
        if cache_type not in KV_CACHE_TYPES:
            raise SizingError(field_name, gettext("Choose a KV cache type: %(types)s.") % {
                "types": ", ".join(KV_CACHE_TYPES)})
    if settings.cache_type_v not in ("f16", "bf16", "f32") and not settings.flash_attention:
        raise SizingError("flash_attention", gettext(
            "A quantized V cache (%(type)s) needs flash attention in llama.cpp: turn it on or keep V in f16."
        ) % {"type": settings.cache_type_v})
    if (model.architecture or PLAIN).mla is not None and not settings.latent_values \
            and settings.cache_type_k not in ("f16", "bf16", "f32") and not settings.flash_attention:
        # The V-less latent cache's V is a view of K: without flash attention it is copied transposed
        # (build_attn_mha), which a quantized type's blocks do not allow.
        raise SizingError("flash_attention", gettext(
            "%(model)s: llama.cpp reads latent attention's V from the K cache, so a quantized K cache "
            "(%(type)s) is a quantized V cache, which needs flash attention: turn it on or keep K in f16."
        ) % {"model": model.name, "type": settings.cache_type_k})
    if settings.gpu_layers is not None and not 0 <= settings.gpu_layers <= MAX_GPU_LAYERS:
        raise SizingError("gpu_layers", gettext("The GPU layers (-ngl) are 0 to %(most)s.") % {
            "most": MAX_GPU_LAYERS})
    check_count(settings.ubatch, "ubatch", gettext("The micro-batch"), MAX_UBATCH)


def _row_bytes(cache_type: str, values: int) -> int:
    per_block, size = KV_CACHE_TYPES[cache_type]
    return -(-values // per_block) * size


def _padded(tokens: int) -> int:
    return -(-tokens // KV_PADDING) * KV_PADDING


def kv_streams(settings: LlamaCppSettings, layout: str | None = None) -> int:
    """The cache's streams in `layout` (the settings' own where None): one per slot where the cache keeps a
    stream per slot (the larger layout's cache among them), else one pool."""
    return settings.parallel if (layout or settings.layout) in (KV_STREAMS, KV_LARGER) else 1


def cache_cells(settings: LlamaCppSettings, layout: str | None = None) -> int:
    """A full-attention layer's cache cells in all: -c rounded up to KV_PADDING; with a stream per slot,
    each slot's share of that rounded up again (llama_context: n_ctx_seq = n_ctx / n_seq_max, padded)."""
    cells = _padded(settings.context)
    streams = kv_streams(settings, layout)
    return streams * _padded(cells // streams)


def _layer_cells(model: LanguageModelSpec, settings: LlamaCppSettings, kv_size: int,
                 layers: range, layout: str | None = None) -> tuple[int, ...]:
    """Each of `layers`' cache cells in all: the cache's, or a sliding-window layer's window per sequence of
    the pool plus one micro-batch (within the cache; `-np 1` run as four slots keeps four windows); with a
    stream per slot, the window plus one micro-batch in each slot's stream (llama_kv_cache_iswa); none for
    a linear-attention layer, which keeps a recurrent state instead (`recurrent_layer_bytes`). Worked out
    once per need, not once per layer."""
    arch = model.architecture or PLAIN
    sliding_layers = bool(arch.sliding_window) and SLIDING in arch.layer_pattern
    linear_layers = arch.linear_attention is not None and LINEAR in arch.layer_pattern
    if not sliding_layers and not linear_layers:
        return (kv_size,) * len(layers)
    sliding = kv_size
    if sliding_layers:
        window = cast(int, arch.sliding_window)
        layout = layout or settings.layout
        streams = kv_streams(settings, layout)
        if streams > 1:
            sliding = streams * min(kv_size // streams, _padded(window + settings.ubatch))
        else:
            sequences = AUTO_SLOTS if layout == KV_AUTO_SLOTS else settings.parallel
            sliding = min(kv_size, _padded(window * sequences + settings.ubatch))
    cells = {SLIDING: sliding, LINEAR: 0 if linear_layers else kv_size}
    pattern = arch.layer_pattern  # read per place in the pattern (`kind_of_layer`), without a call per layer
    return tuple(cells.get(pattern[layer % len(pattern)], kv_size) for layer in layers)


def kv_cache_bytes(model: LanguageModelSpec, settings: LlamaCppSettings, kv_size: int, layers: range) -> int:
    """K and V of `layers` for the cache's cells, each in its type (a row per cell), and the recurrent state
    of those that are linear attention (`recurrent_layer_bytes`): llama.cpp's hybrid memory, the KV cache
    of the attention layers beside the recurrent memory of the others, each layer's where the layer is.
    The larger layout's cache is the streams': never fewer cells than one pool, in any layer."""
    found = cell_bytes(model, settings) * sum(_layer_cells(model, settings, kv_size, layers))
    linear = linear_layers(model, layers)
    return found + recurrent_layer_bytes(model, settings) * linear if linear else found


def linear_layers(model: LanguageModelSpec, layers: range) -> int:
    """How many of `layers` are linear attention."""
    arch = model.architecture or PLAIN
    if arch.linear_attention is None or LINEAR not in arch.layer_pattern:
        return 0
    return sum(1 for layer in layers if arch.kind_of_layer(layer) == LINEAR)


def recurrent_sequences(settings: LlamaCppSettings) -> int:
    """The sequences the recurrent memory keeps a state for: max(1, n_seq_max) (create_memory's
    recurrent_rs_size), the -np slots, four where llama-server runs -np 1 as four slots."""
    return AUTO_SLOTS if settings.layout == KV_AUTO_SLOTS else settings.parallel


def recurrent_state_values(linear: LinearAttention) -> int:
    """One sequence's state in one linear-attention layer (src/llama-hparams.cpp): n_embd_r, the
    convolution's last kernel − 1 inputs ((ssm_d_conv − 1) × (ssm_d_inner + 2 × ssm_n_group × ssm_d_state)),
    and n_embd_s, the delta rule's state (ssm_d_state × ssm_d_inner)."""
    return linear.conv_values + linear.recurrent_values


def recurrent_layer_bytes(model: LanguageModelSpec, settings: LlamaCppSettings) -> int:
    """One linear-attention layer's recurrent memory (src/llama-memory-recurrent.cpp): a row of R and a row
    of S, F32, for each sequence (`recurrent_sequences`); under Ollama each slot's state again for each
    checkpoint it keeps (`LlamaCppSettings.state_checkpoints`)."""
    linear = cast(LinearAttention, (model.architecture or PLAIN).linear_attention)  # linear layers only
    per_sequence = recurrent_state_values(linear) * RECURRENT_STATE_BYTES
    return per_sequence * recurrent_sequences(settings) * (1 + settings.state_checkpoints)


def cell_bytes(model: LanguageModelSpec, settings: LlamaCppSettings) -> int:
    """One layer's cache per cell: K and V rows of kv_heads × head_dim values, each in its type. Latent
    attention (llama.cpp's deepseek2 graph, src/models/deepseek2.cpp: one key "head" of MQA after the
    absorption) stores per cell the normalised latent and the rotated key part, kv_lora_rank +
    qk_rope_head_dim values, in the K type (src/llama-kv-cache.cpp, `llama_kv_cache::llama_kv_cache`:
    n_embd_k_gqa = key_length, which the converter writes as that sum), and no V of its own: V is a view
    of K's first kv_lora_rank values (`has_v = !is_mla`, ggml-org/llama.cpp#19067). Builds before it kept
    those kv_lora_rank values again as V, in the V type (`LlamaCppBuild.caches_latent_values`)."""
    mla = (model.architecture or PLAIN).mla
    if mla is not None:
        values = _row_bytes(settings.cache_type_v, mla.kv_lora_rank) if settings.latent_values else 0
        return _row_bytes(settings.cache_type_k, mla.latent_width) + values
    width = model_value(model, "kv_heads") * model_value(model, "head_dim")
    return _row_bytes(settings.cache_type_k, width) + _row_bytes(settings.cache_type_v, width)


def reserved_tokens(settings: LlamaCppSettings, kv_size: int, streams: int) -> int:
    """The tokens of the micro-batch the worst-case graph is built for: min(-ub, the cache's cells)
    (`sched_reserve`: n_tokens = min(n_ctx, n_ubatch)), rounded up to a multiple of the sequences it is
    split into, the cache's `streams` (`graph_reserve`: "round to next multiple of n_seqs",
    ggml-org/llama.cpp#14140; n_seqs is n_seq_max, -np, wherever the cache keeps a stream per slot)."""
    tokens = min(settings.ubatch, kv_size)
    return -(-tokens // streams) * streams


def reserved_rows(settings: LlamaCppSettings, tokens: int, padded: int | None = None) -> int:
    """The rows of logits the worst-case graph of a micro-batch of `tokens` (`padded`: as rounded up to the
    streams, `reserved_tokens`) is reserved for: one row per slot, min(n_ubatch, -np), the tokens before
    the rounding (`sched_reserve`: min(n_tokens, n_outputs_max)); else every token of the micro-batch as
    rounded, the outputs padded with the tokens (ggml-org/llama.cpp#18536: the larger rows)."""
    if settings.reservation == ONE_ROW_PER_SLOT:
        return min(tokens, settings.parallel)
    return tokens if padded is None else padded


def _compute_bytes(model: LanguageModelSpec, settings: LlamaCppSettings, layers: range, output: bool,
                   copies: int = 1) -> int:
    """The GPU's compute buffer: ggml's allocator run over the worst-case graph of one micro-batch through
    `layers` (`llamacpp_graph`), the logits of the rows reserved (`reserved_rows`) where the GPU holds the
    output head, with `copies` of each input from the host. Where the build is not known, the larger of
    the pool's graph and the streams'."""
    if settings.layout == KV_LARGER:
        return max(_graph_bytes(model, settings, layout, layers, output, copies)
                   for layout in (KV_POOL, KV_STREAMS))
    return _graph_bytes(model, settings, settings.layout, layers, output, copies)


def _graph_bytes(model: LanguageModelSpec, settings: LlamaCppSettings, layout: str, layers: range,
                 output: bool, copies: int) -> int:
    """The compute buffer of the cache in `layout`: the micro-batch of min(-ub, the cache's cells) tokens
    attends to one stream's cells where the cache keeps a stream per slot (llama_kv_cache_context: n_kv is
    a stream's size, the mask n_kv × the micro-batch's tokens split over the streams), to every cell of a
    pool. A build that reserves a row per slot builds the mask in f16 (b9410 on): only that graph is sized."""
    arch = model.architecture or PLAIN
    moe = arch.moe
    kv_size = cache_cells(settings, layout)
    streams = kv_streams(settings, layout)
    tokens = min(settings.ubatch, kv_size)
    padded = reserved_tokens(settings, kv_size, streams)
    mla = arch.mla
    shape = GraphShape(
        hidden=model_value(model, "hidden_size"), heads=model_value(model, "attention_heads"),
        # latent attention's cache is one head of the latent and the rotary key (MQA after the absorption)
        kv_heads=1 if mla else model_value(model, "kv_heads"),
        head_dim=mla.latent_width if mla else model_value(model, "head_dim"),
        vocab=model_value(model, "vocab_size"),
        layers=_attention_cells(model, settings, kv_size, layers, layout, streams),
        # a mixture of experts' dense layers (if any) are counted in every layer: never under
        intermediate=model_value(model, "intermediate_size") if moe is None
        else (moe.dense_intermediate or model_value(model, "intermediate_size"))
        if moe.first_dense_layers or moe.layer_step > 1 else 0,
        experts=moe.experts if moe else 0, experts_per_token=moe.experts_per_token if moe else 0,
        expert_intermediate=moe.expert_intermediate if moe else 0,
        shared_intermediate=moe.shared_intermediate if moe else 0,
        qk_norm=arch.qk_norm, post_norms=arch.norms_per_layer >= 4,
        tokens=padded, outputs=reserved_rows(settings, tokens, padded),
        flash_attention=settings.flash_attention,
        output_layer=output, copies=copies, f16_mask_only=settings.reservation == ONE_ROW_PER_SLOT)
    if mla is not None:
        shape = replace(shape, kv_lora_rank=mla.kv_lora_rank, rope_dim=mla.qk_rope_head_dim,
                        nope_dim=mla.qk_nope_head_dim, v_head_dim=mla.v_head_dim,
                        q_lora_rank=mla.q_lora_rank or 0, latent_values=settings.latent_values)
        if shape.copies_latent:  # V a view of K, copied transposed: every stream's cells in K's type
            shape = replace(shape, streams=streams, key_value_bytes=KV_CACHE_TYPES[settings.cache_type_k][1])
    found = compute_buffer_bytes(shape)
    if linear_layers(model, layers):
        found += delta_net_bytes(model, settings, padded, streams)
    return found


def _attention_cells(model: LanguageModelSpec, settings: LlamaCppSettings, kv_size: int, layers: range,
                     layout: str, streams: int) -> tuple[int, ...]:
    """The cells of one stream of each of `layers` that attends over a cache (the attention graph's layers):
    the linear-attention layers left out, and where none of `layers` attends, one full-attention layer in
    their place (the graph is walked over one layer at least: more than the linear layers' MLP alone)."""
    cells = _layer_cells(model, settings, kv_size, layers, layout)
    found = tuple(count // streams for count in cells if count)
    return found or (kv_size // streams,)


def delta_net_bytes(model: LanguageModelSpec, settings: LlamaCppSettings, tokens: int, streams: int) -> int:
    """What one linear-attention layer's graph of the micro-batch holds at once (`llamacpp_graph`'s walk of
    a Gated DeltaNet layer, or of a Kimi Delta Attention one): the compute buffer adds it to the walk of the
    attention layers' graph, an upper bound (the two peaks come at different layers), with the chunked delta
    rule (builds and backends without the fused gated-delta-net kernel, which holds less)."""
    linear = cast(LinearAttention, (model.architecture or PLAIN).linear_attention)  # linear layers only
    kda = linear.kind == KIMI_DELTA
    shape = DeltaNetShape(
        hidden=model_value(model, "hidden_size"), key_heads=linear.key_heads, value_heads=linear.value_heads,
        head_dim=linear.value_head_dim, conv_kernel=linear.conv_kernel, tokens=tokens, sequences=streams,
        states=recurrent_sequences(settings), per_channel_gate=kda)
    return kda_layer_bytes(shape) if kda else delta_net_layer_bytes(shape)


@functools.lru_cache(maxsize=256)
def _typed_file(model: LanguageModelSpec, quant_type: str) -> GgufWeights:
    """The model's file, typed once per process (a capacity search asks for it dozens of times; the
    model's figures are its key, so a model staff correct is typed again)."""
    return gguf_weights(model, quant_type)


def llamacpp_need(model: LanguageModelSpec, settings: LlamaCppSettings) -> LlamaCppNeed:
    check_settings(model, settings)
    weights = _typed_file(model, check_quant_type(settings.quant_type))
    layers = model_value(model, "layers")
    first_gpu_layer, output_on_gpu = offload_placement(model, settings)
    on_gpu = layers - first_gpu_layer
    kv_size = cache_cells(settings)
    gpu_weights = sum(weights.layer_bytes(layer) for layer in range(first_gpu_layer, layers))
    head = _head_bytes(model, weights)
    duplicated = head - weights.role_bytes("output") - weights.role_bytes("output_norm")
    host_weights = weights.bytes - gpu_weights - (head - duplicated if output_on_gpu else 0)
    if output_on_gpu:
        gpu_weights += head
    gpu_kv = kv_cache_bytes(model, settings, kv_size, range(first_gpu_layer, layers))
    host_kv = kv_cache_bytes(model, settings, kv_size, range(first_gpu_layer))
    gpu_layers = range(first_gpu_layer, layers)
    # the head alone on the GPUs (-ngl 1 from #18148) computes the output there too
    compute = (_compute_bytes(model, settings, _graph_layers(gpu_layers), output_on_gpu)
               if on_gpu or output_on_gpu else 0)
    # Several GPUs holding every layer and the head run as a pipeline (llama_context: pipeline_parallel);
    # the GPU with the head, whose buffer is the largest, is what each is sized for.
    pipeline = (_compute_bytes(model, settings, gpu_layers, True, PIPELINE_COPIES) - compute
                if output_on_gpu and on_gpu == layers else 0)
    cache_words = (_cache_words(model, settings, kv_size) + _latent_cache_words(model, settings)
                   + _recurrent_words(model, settings))
    gpu_items = (
        Item(gettext("Model weights on the GPUs (GGUF %(type)s)") % {"type": weights.quant_type},
             gettext("%(layers)s of %(all)s layers%(head)s: %(bytes)s") % {
                 "layers": fmt_int(on_gpu), "all": fmt_int(layers),
                 "head": gettext(" and the output head") if output_on_gpu else "",
                 "bytes": fmt_gib(gpu_weights)} + _offload_words(settings, layers, output_on_gpu),
             gpu_weights),
        Item(gettext("KV cache on the GPUs"), cache_words, gpu_kv),
        Item(gettext("Compute buffer (one micro-batch)"),
             gettext("%(tokens)s tokens (-ub%(rounded)s): the most that ggml's allocator holds at once over "
                     "one micro-batch's graph, freed tensors' memory reused: the MLP "
                     "step%(scores)s%(logits)s%(split)s") % {
                 **_tokens_words(settings),
                 "scores": "" if settings.flash_attention else gettext(
                     " or the attention scores of the whole context (no flash attention)")
                 + _latent_copy_words(model, settings, kv_size),
                 "logits": _logits_words(settings, kv_size) if output_on_gpu else "",
                 "split": gettext(
                     ". Split by layers over several GPUs (--split-mode layer), this is the buffer of the "
                     "last, which holds the output head; each other GPU reserves its own layers' graph "
                     "without the output rows and logits") if output_on_gpu and on_gpu == layers else ""}
             + _delta_net_words(model, settings, gpu_layers),
             compute),
    )
    host_items = (
        Item(gettext("Model weights in host memory"),
             gettext("the token embeddings (looked up on the CPU)%(rest)s") % {
                 "rest": (gettext(" and %(n)s layers not offloaded") % {"n": fmt_int(first_gpu_layer)}
                          if first_gpu_layer else "")
                 + ("" if output_on_gpu else gettext(" and the output head"))},
             host_weights),
        Item(gettext("KV cache in host memory"), cache_words, host_kv),
    )
    return LlamaCppNeed(model, settings, weights, on_gpu, output_on_gpu, kv_size, gpu_items, host_items,
                        pipeline)


def _offload_words(settings: LlamaCppSettings, layers: int, output_on_gpu: bool) -> str:
    """How -ngl N placed the layers where it offloads some of them (`offload_placement`), naming the rule;
    nothing where every layer and the head are on the GPUs."""
    asked = settings.gpu_layers
    if asked is None or asked > layers:
        return ""
    values = {"n": fmt_int(asked), "until": LAYERS_FIRST_UNTIL, "from": HEAD_FIRST_FROM}
    if settings.offload == HEAD_FIRST:
        return gettext(" (-ngl %(n)s: the output head first, then the last layers, as llama.cpp places them "
                       "from b%(from)s, ggml-org/llama.cpp#18148)") % values
    if settings.offload == LAYERS_FIRST:
        return gettext(" (-ngl %(n)s: the last %(n)s layers, the output head only past them, as llama.cpp "
                       "places them up to b%(until)s and Ollama's own runners)") % values
    if output_on_gpu:
        return gettext(" (-ngl %(n)s, the build not known: placed as from b%(from)s, the output head first, "
                       "which needs more here than the layers first)") % values
    return gettext(" (-ngl %(n)s, the build not known: placed as up to b%(until)s, the layers first, which "
                   "needs more here than the output head first)") % values


def _cache_words(model: LanguageModelSpec, settings: LlamaCppSettings, kv_size: int) -> str:
    """The KV cache's formula: a pool's cells, or the streams × each stream's cells (and a sliding-window
    layer's), naming the layout (`llamacpp_builds.kv_layout`)."""
    layout = settings.layout
    values = {"context": fmt_int(settings.context), "n": settings.parallel, "k": settings.cache_type_k,
              "v": settings.cache_type_v}
    if layout == KV_AUTO_SLOTS:
        return gettext(
            "%(tokens)s tokens (-c %(context)s; llama-server b%(from)s to b%(until)s runs -np 1 as %(slots)s "
            "slots over one pool) × K %(k)s + V %(v)s"
        ) % {**values, "tokens": fmt_int(kv_size), "from": AUTO_SLOTS_FROM, "until": AUTO_SLOTS_UNTIL - 1,
             "slots": AUTO_SLOTS}
    if layout == KV_POOL:
        slots = ngettext("%(n)s parallel slot", "%(n)s parallel slots", settings.parallel) % values
        if settings.kv_unified:
            slots = gettext("one pool the %(slots)s share: --kv-unified") % {"slots": slots}
        return gettext("%(tokens)s tokens (-c %(context)s, %(slots)s) × K %(k)s + V %(v)s") % {
            **values, "tokens": fmt_int(kv_size), "slots": slots}
    streams = kv_streams(settings)
    values.update(streams=fmt_int(streams), cells=fmt_int(kv_size // streams))
    sliding = set(_layer_cells(model, settings, kv_size, range(model_value(model, "layers")))) - {kv_size, 0}
    values["sliding"] = gettext(", a sliding-window layer's stream %(cells)s") % {
        "cells": fmt_int(min(sliding) // streams)} if sliding else ""
    if layout == KV_LARGER:
        return gettext(
            "%(streams)s streams × %(cells)s cells (-c %(context)s, -np %(n)s: a stream per slot, each "
            "slot's share rounded up to 256%(sliding)s; the build not given, the larger of one pool and a "
            "stream per slot) × K %(k)s + V %(v)s") % values
    return gettext(
        "%(streams)s streams × %(cells)s cells (-c %(context)s, -np %(n)s: a stream per slot, each slot's "
        "share rounded up to 256%(sliding)s) × K %(k)s + V %(v)s") % values


def _latent_copy_words(model: LanguageModelSpec, settings: LlamaCppSettings, kv_size: int) -> str:
    """What latent attention's graph adds beside the scores without flash attention where V is a view of K
    (the V-less cache, `GraphShape.copies_latent`): the latent of every cell copied transposed, per layer
    ("" for any other model or build)."""
    mla = (model.architecture or PLAIN).mla
    if mla is None or settings.flash_attention or settings.latent_values:
        return ""
    copy = kv_size * mla.kv_lora_rank * KV_CACHE_TYPES[settings.cache_type_k][1]
    return gettext(
        ", with the latent of every cell copied transposed as V (a view of the K cache): %(cells)s cells × "
        "%(rank)s values in %(type)s, %(bytes)s a layer") % {
        "cells": fmt_int(kv_size), "rank": fmt_int(mla.kv_lora_rank), "type": settings.cache_type_k,
        "bytes": fmt_gib(copy)}


def _latent_cache_words(model: LanguageModelSpec, settings: LlamaCppSettings) -> str:
    """What latent attention keeps per cell and layer (`cell_bytes`), after the cache's formula ("" for any
    other attention)."""
    mla = (model.architecture or PLAIN).mla
    if mla is None:
        return ""
    values = {"width": fmt_int(mla.latent_width), "rank": fmt_int(mla.kv_lora_rank),
              "rope": fmt_int(mla.qk_rope_head_dim)}
    stored = gettext(
        ", and the latent's %(rank)s again in V (llama.cpp before its V-less cache, or the build not given)"
    ) % values if settings.latent_values else gettext(", V a view of K")
    if (model.architecture or PLAIN).no_rope:  # Kimi-Linear: the rotary-sized part is cached, never rotated
        return gettext(
            "; latent attention: K holds %(width)s values a layer (the %(rank)s-value latent and %(rope)s "
            "dims sized for a rotary embedding, cached unrotated: no position embedding)%(stored)s") % {
            **values, "stored": stored}
    return gettext(
        "; latent attention: K holds %(width)s values a layer (the %(rank)s-value latent and %(rope)s rotary "
        "dims)%(stored)s") % {**values, "stored": stored}


def _recurrent_words(model: LanguageModelSpec, settings: LlamaCppSettings) -> str:
    """What the linear-attention layers keep instead of K and V (`recurrent_layer_bytes`), after the cache's
    formula ("" for a model without them)."""
    layers = model_value(model, "layers")
    linear_count = linear_layers(model, range(layers))
    if not linear_count:
        return ""
    linear = cast(LinearAttention, (model.architecture or PLAIN).linear_attention)  # linear layers only
    sequences = recurrent_sequences(settings)
    values = {"attention": fmt_int(layers - linear_count), "linear": fmt_int(linear_count),
              "conv": fmt_int(linear.conv_values), "delta": fmt_int(linear.recurrent_values),
              "sequences": ngettext("%(n)s sequence", "%(n)s sequences", sequences) % {
                  "n": fmt_int(sequences)},
              "bytes": fmt_gib(recurrent_layer_bytes(model, settings) * linear_count)}
    words = gettext(
        "; K and V in the %(attention)s full-attention layers only; the %(linear)s linear-attention layers "
        "keep a recurrent state instead: %(sequences)s × (%(conv)s convolution + %(delta)s delta-rule "
        "values) × 4 bytes (f32, whatever the cache type) a layer") % values
    if settings.state_checkpoints:
        words += gettext(
            ", and again for each of the %(checkpoints)s checkpoints of every slot's state Ollama's own "
            "runners keep"
        ) % {"checkpoints": fmt_int(settings.state_checkpoints)}
    return words + gettext(", %(bytes)s over the %(linear)s layers") % values


def _delta_net_words(model: LanguageModelSpec, settings: LlamaCppSettings, held: range) -> str:
    """The compute buffer's part for the linear-attention layers among `held` (`delta_net_bytes`), after its
    formula ("" where the GPUs hold none)."""
    if not linear_layers(model, held):
        return ""
    kv_size = cache_cells(settings)
    streams = kv_streams(settings)
    tokens = reserved_tokens(settings, kv_size, streams)
    values = {"bytes": fmt_gib(delta_net_bytes(model, settings, tokens, streams)), "tokens": fmt_int(tokens)}
    linear = cast(LinearAttention, (model.architecture or PLAIN).linear_attention)  # linear layers only
    if linear.kind == KIMI_DELTA:
        return gettext(
            "; plus one Kimi Delta Attention layer's graph walked on its own (%(bytes)s: the chunked delta "
            "rule with a decay per channel, in chunks of 16, over %(tokens)s tokens, as builds and backends "
            "without the fused kernel run it), an upper bound: its peak and the attention layers' come at "
            "different layers; no logged Kimi-Linear compute buffer was found to hold it against") % values
    return gettext(
        "; plus one Gated DeltaNet layer's graph walked on its own (%(bytes)s: the chunked delta rule over "
        "%(tokens)s tokens, as builds and backends without the fused kernel run it), an upper bound: its "
        "peak and the attention layers' come at different layers") % values


def _tokens_words(settings: LlamaCppSettings) -> dict[str, str]:
    """The micro-batch the compute buffer is reserved for (`reserved_tokens`) and, where the cache's streams
    round it up, by how much: the rounded count where the cache keeps a stream per slot, the micro-batch and
    the streams' count where the build is not given (the larger of a pool's graph and the streams')."""
    kv_size = cache_cells(settings)
    tokens = min(settings.ubatch, kv_size)
    streams = kv_streams(settings)
    padded = reserved_tokens(settings, kv_size, streams)
    if padded == tokens:
        return {"tokens": fmt_int(tokens), "rounded": ""}
    values = {"padded": fmt_int(padded), "streams": fmt_int(streams)}
    if settings.layout == KV_LARGER:
        return {"tokens": fmt_int(tokens), "rounded": gettext(
            "; %(padded)s in a stream per slot, a multiple of the %(streams)s streams") % values}
    return {"tokens": fmt_int(padded), "rounded": gettext(
        " rounded up to a multiple of the %(streams)s streams") % values}


def _logits_words(settings: LlamaCppSettings, kv_size: int) -> str:
    """The logits the compute buffer is reserved for, naming the rule (`llamacpp_builds`)."""
    if settings.reservation == ONE_ROW_PER_SLOT:
        return gettext(
            " or the logits of one row per slot, %(rows)s rows (llama-server from build b%(from)s)"
        ) % {"rows": fmt_int(reserved_rows(settings, min(settings.ubatch, kv_size))), "from": PER_SLOT_FROM}
    return gettext(
        " or the logits of every token of the micro-batch (reserved so before llama-server build b%(from)s, "
        "and wherever the build is not given)") % {"from": PER_SLOT_FROM}


# --- the wizard's inference under llama.cpp and Ollama ----------------------------------------------------

# The wizard's precision as the GGUF file it assumes, and its KV cache bits as llama.cpp's cache type.
PRECISION_QUANT = {16: "F16", 8: "Q8_0", 4: "Q4_K_M"}
KV_BITS_TYPE = {16: "f16", 8: "q8_0"}
ENGINE_NAMES = {"llamacpp": "llama.cpp", "ollama": "Ollama"}


def wizard_quant_type(precision: int, quantization: str | None) -> str:
    """The GGUF type the wizard sizes: the one asked (`quantization`, any type `sizing.gguf` sizes), or
    else the precision's short form (16: F16, 8: Q8_0, 4: Q4_K_M)."""
    return check_quant_type(quantization) if quantization else PRECISION_QUANT[precision]


def wizard_settings(precision: int, context: int, requests: int, kv_bits: int,
                    quantization: str | None = None, build: LlamaCppBuild = NOT_GIVEN,
                    engine: str = LLAMACPP, flash_attention: bool = True,
                    kv_unified: bool = False, gpu_layers: int | None = None) -> LlamaCppSettings:
    """`requests` requests of `context` tokens: -np requests, -c their tokens together, -ngl `gpu_layers`
    (None: every layer and the output head on the GPUs), flash attention as asked (-fa,
    OLLAMA_FLASH_ATTENTION; on unless asked off, as a quantized V cache needs it) and, under llama.cpp,
    --kv-unified as asked; the file in `wizard_quant_type`; the logits reserved, the cache laid out and
    -ngl's layers placed as `build` does under `engine` (`llamacpp_builds`)."""
    return LlamaCppSettings(quant_type=wizard_quant_type(precision, quantization), context=context * requests,
                            parallel=requests, cache_type_k=KV_BITS_TYPE[kv_bits],
                            cache_type_v=KV_BITS_TYPE[kv_bits], flash_attention=flash_attention,
                            reservation=build.reservation, kv_layout=kv_layout(engine, build, requests),
                            kv_unified=kv_unified, gpu_layers=gpu_layers,
                            latent_values=build.caches_latent_values, offload=build.offload,
                            state_checkpoints=state_checkpoints(engine, build))


def state_checkpoints(engine: str, build: LlamaCppBuild) -> int:
    """The copies of each slot's recurrent state kept beside it (read only where the model has linear
    attention): Ollama's own runners (before 0.30.0, or the release not given: `llamacpp_builds`) run
    Qwen3-Next in its Go engine, which keeps OLLAMA_STATE_CHECKPOINTS; llama-server, Ollama's from 0.30.0
    included, none."""
    return OLLAMA_STATE_CHECKPOINTS if engine == OLLAMA and build.number is None else 0


def engine_command(engine: str, need: LlamaCppNeed, file_name: str) -> str:
    """llama-server's command, or Ollama's server with the settings that give the same memory. -ngl N
    is Ollama's num_gpu, a model's option rather than the server's (a Modelfile's PARAMETER num_gpu N, a
    request's "options"): written after the server's settings as the what-if writes it, num_gpu=N, in a
    comment that leaves the command as it starts."""
    if engine == "ollama":
        values = need.ollama_settings()
        settings = " ".join(f"{name}={value}" for name, value in values.items() if name.startswith("OLLAMA_"))
        layers = f" # num_gpu={values['num_gpu']}" if "num_gpu" in values else ""
        return f"{settings} ollama serve{layers}"
    return need.server_command(file_name)


def gguf_file_name(model: LanguageModelSpec, quant_type: str) -> str:
    """The GGUF file an answer assumes: the one published for the model in that type, or else named as
    the model's converters name theirs (sized by llama.cpp's own rules all the same)."""
    published = model.published_gguf(quant_type)
    if published is not None:
        return published.file
    base = (model.hf_id or model.name).rsplit("/", 1)[-1].replace(" ", "-")
    return f"{base}-{quant_type}.gguf"
