"""Which rows of logits llama.cpp reserves its compute buffer for, and how it lays out the KV cache, by the
build that serves the model: a llama.cpp build, or the one an Ollama release runs.

llama.cpp reserves its compute buffer once, at start-up, over the graph of one micro-batch with
min(n_ubatch, n_outputs_max) rows of logits (`llamacpp_graph`). Until build b9460 there was no
`n_outputs_max`: every caller reserved the logits of every token of the micro-batch. From b9460 the
context takes `n_outputs_max` (0, the library's default, still means n_batch) and llama-server sets it to
its slots:

- ggml-org/llama.cpp#23861, "llama: limit max outputs of `llama_context`" (commit de6f727, merged
  2026-06-01, first in release b9460): `llama_context_params.n_outputs_max`, and llama-server's
  `server_n_outputs_max` giving min(n_batch, slots × (1 + the draft's length)): one row per slot
  (`-np`) without speculative decoding, the case sized here; n_batch for embeddings and reranking.
  ggml-org/llama.cpp#23988 (commit 5dcb711) then sized the draft context alike. Every llama-server build
  since reserves so (`server_output_limits` in tools/server/server-context.cpp).
- ggml-org/llama.cpp#23764, "llama: use f16 mask for FA to save VRAM" (release b9410) builds the attention
  mask in f16 under flash attention, without the f32 copy the device cast before: every build that
  reserves one row per slot has it, so that rule sizes the f16 mask's graph alone.

The library's own default, llama-cpp-python and Ollama's own runners keep the whole micro-batch. A llama.cpp
build that is not given is sized as a build before b9460 (the whole micro-batch, either generation of the
mask): the larger need, the safe side. The build is given as llama-server prints it (`--version`:
"version: 6500 (…)"; release tags "b6500").

Ollama's version (`ollama --version`: "0.30.1"; tags "v0.30.1") is read as the llama.cpp build it runs
(ollama/ollama as stored at v0.32.15, b7871fc):

- before 0.30.0 its own runners (the Go engine and a vendored llama.cpp): no llama-server, the whole
  micro-batch's logits, and one KV pool of num_ctx × OLLAMA_NUM_PARALLEL cells shared by the slots, a
  sliding-window layer keeping its window per slot plus one micro-batch (`kvcache.Causal`);
- ollama/ollama#16031, "runner: Remove CGO engines, use llama-server exclusively for GGML models" (commit
  9db4bdb, 2026-05-29, first released in 0.30.0): `llm/llama_server.go` starts llama-server with
  `-c num_ctx×np -np np` (np: OLLAMA_NUM_PARALLEL; `-b`/`-ub` num_batch, 512 by default), built from the
  llama.cpp tag pinned in `LLAMA_CPP_VERSION` (`llama/server/CMakeLists.txt` fetches it). 0.30.0 pins b9452,
  before b9460: the whole micro-batch's logits. 0.30.1 pins b9479 (commit c34a79a, ollama/ollama#16426),
  and every release since a later build (0.32.15: b10488): one row per slot.
- With `-np` given and no `--kv-unified`, llama-server keeps one KV stream per slot (llama_context:
  n_ctx_seq = n_ctx / n_seq_max, each rounded up to 256 cells; llama_kv_cache_iswa: a sliding-window
  layer's stream holds its window plus one micro-batch, rounded up to 256): from 0.30.0 Ollama's cache is
  laid out so (`kv_layout`). The cells of a model without sliding-window layers are the runners' where
  num_ctx is a multiple of 256; a sliding-window model with several slots keeps more.

An Ollama version not given, or later than the newest minor release read here, is sized as the own runners
(the whole micro-batch's logits, one KV pool): the answer says so and how to give the version.

How llama-server lays out the KV cache of the `llama-server -c … -np N` command the answer prints (no
`--kv-unified`), by build (ggml-org/llama.cpp as stored: `common/common.h`, `tools/server/server.cpp`,
`src/llama-context.cpp`, `src/llama-kv-cache.cpp`):

- before b5913 one pool shared by the slots, the only layout llama.cpp had;
- ggml-org/llama.cpp#14363, "llama : add high-throughput mode" (commit 225e7a14, first in b5913): the
  cache splits into one stream per sequence unless `kv_unified` (`-kvu`, `--kv-unified`), whose default is
  false, so `-np N` keeps N streams (`KV_STREAMS`);
- ggml-org/llama.cpp#16736, "server : support unified cache across slots" (opened 2025-10-23; b7079 logs
  it, ggml-org/llama.cpp#17300, and b7342): llama-server reads `n_parallel == 1` without `-kvu` as its
  default and sets four slots over one unified pool ("setting n_parallel = 4 and kv_unified = true"), an
  explicit `-np 1` included (`KV_AUTO_SLOTS`); sized so from b6823, the first release of the day it opened
  (the safe side: its merge is no earlier);
- ggml-org/llama.cpp#17997, "arg: clarify auto kvu/np being set on server" (b7433): `-np` defaults to -1
  (auto), and only that auto value turns on four slots and the unified pool; an explicit `-np N`, 1 included,
  keeps N streams again.

A llama.cpp build not given is sized as the larger of the two layouts (`KV_LARGER`): the cache in a stream
per slot (never fewer cells than one pool), the compute buffer as the larger graph of the two; the four
slots of `-np 1` in b6823–b7432 only where that build is asked.

Which layers `-ngl N` (Ollama's num_gpu) puts on the GPUs below a full offload, by build
(`llamacpp.offload_placement`; `src/llama-model.cpp`, `llama_model::load_tensors`):

- before ggml-org/llama.cpp#18148 the last N decoder layers, the output head only once N passes the layer
  count (i_gpu_start = max(n_layer − N, 0), the head being slot n_layer of min(N, n_layer + 1)):
  `LAYERS_FIRST`. Ollama's own runners (before 0.30.0) place them so too ("only offload output layer if
  all repeating layers are offloaded").
- ggml-org/llama.cpp#18148, "llama: offload output layer to GPU first" (merged 2025-12-18): i_gpu_start =
  max(n_layer + 1 − N, 0), so N is the output head and the last N − 1 layers (`HEAD_FIRST`); every
  llama-server Ollama starts (0.30.0 on, b9452 and later; `llm/llama_server.go` passes num_gpu N as
  `-ngl N`) places them so. The release of the merge is not
  read here. What is: ollama/ollama vendored `src/llama-model.cpp` at b7108 (7f8ef50c, its commit 0cf7794b1)
  and at ec98e2002 (2025-12-16, its commit 49a9c9ba6, what its own runners kept until 0.30.0) with the
  layers first, and at b7847 (a5bb8ba4, its commit 9f62f63c6, reverted in b1fccabb3) with the head first.
  So b7108 and before place the layers first, b7847 and after the head first, and a build between them,
  like a build not given (or an Ollama release not read), is sized as the larger of the two placements'
  GPU needs (`OFFLOAD_LARGER`): the head and its logits where they weigh more than the one layer and its
  cache the other rule keeps instead, else that layer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..architectures import GATED_DELTANET, KIMI_DELTA, PLAIN
from ..errors import SizingError
from ..i18n import gettext
from ..specs import LanguageModelSpec

PER_SLOT_FROM = 9460  # the first release with ggml-org/llama.cpp#23861: llama-server reserves a row per slot
WHOLE_MICRO_BATCH, ONE_ROW_PER_SLOT = "micro-batch", "slot"  # the rows of logits reserved
RESERVATIONS = (WHOLE_MICRO_BATCH, ONE_ROW_PER_SLOT)
# A build as llama.cpp numbers its releases: b6500 or 6500 (ASCII digits only, no leading zero).
BUILD_PATTERN = r"[bB]?[1-9][0-9]{0,5}"
_BUILD = re.compile(BUILD_PATTERN)

LLAMACPP, OLLAMA = "llamacpp", "ollama"  # the engines whose engine_version is read here
# An Ollama release as `ollama --version` prints it (0.30.1) or tagged (v0.30.1): three numbers, ASCII digits.
OLLAMA_PATTERN = r"v?([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})"
_OLLAMA = re.compile(OLLAMA_PATTERN)
OllamaVersion = tuple[int, int, int]
# The Ollama releases that start llama-server, each with the least llama.cpp build it and the releases after
# it pin (`LLAMA_CPP_VERSION`); the releases before the first run Ollama's own runners.
OLLAMA_LLAMA_SERVER: tuple[tuple[OllamaVersion, int], ...] = (((0, 30, 0), 9452), ((0, 30, 1), 9479))
OLLAMA_PER_SLOT_FROM = "0.30.1"  # the first Ollama release whose llama-server reserves a row per slot (b9479)
# The newest minor release read (0.32.15 pins b10488); any patch of it taken. ollama/ollama as stored
# (fb3076099, 2026-08-21) releases nothing later: v0.33.0-rc0 to rc2 only, 0.33.0 not yet.
OLLAMA_NEWEST_MINOR = (0, 32)

# How the KV cache is laid out (`llamacpp.cache_cells`): one pool shared by the slots; one stream per slot;
# -np 1 read as llama-server's default, four slots over one pool; not known, the larger of pool and streams.
KV_POOL, KV_STREAMS, KV_AUTO_SLOTS, KV_LARGER = "pool", "streams", "auto-slots", "larger"
STREAMS_FROM = 5913  # ggml-org/llama.cpp#14363: a KV stream per sequence unless --kv-unified
AUTO_SLOTS_FROM, AUTO_SLOTS_UNTIL = 6823, 7433  # #16736 to #17997: -np 1 runs four slots over one pool
AUTO_SLOTS = 4  # the slots llama-server's default sets

# How -ngl N places the decoder layers and the output head (`llamacpp.offload_placement`): the last N layers
# (the head once N passes them), the head and the last N − 1 layers (ggml-org/llama.cpp#18148), or, not
# known, the placement whose GPUs need more.
LAYERS_FIRST, HEAD_FIRST, OFFLOAD_LARGER = "layers-first", "head-first", "larger"
LAYERS_FIRST_UNTIL = 7108  # the last build read that places the layers first (7f8ef50c, before #18148)
HEAD_FIRST_FROM = 7847  # the first build read that offloads the output head first (a5bb8ba4, after #18148)


def _text(version: OllamaVersion) -> str:
    return ".".join(str(number) for number in version)


@dataclass(frozen=True)
class LlamaCppBuild:
    """The llama.cpp build an answer assumes (None: not known) and, under Ollama, the release asked (None:
    not given, or under llama.cpp), read as the least build that release runs."""

    number: int | None = None
    ollama: OllamaVersion | None = None

    @property
    def given(self) -> bool:
        return self.number is not None or self.ollama is not None

    @property
    def text(self) -> str:
        """As the engine names it: Ollama's release, 0.30.1; llama.cpp's release tag, b6500 (empty: not
        given)."""
        if self.ollama is not None:
            return _text(self.ollama)
        return f"b{self.number}" if self.number is not None else ""

    @property
    def reservation(self) -> str:
        """The rows of logits the build's llama-server reserves: one per slot from b9460, else (and where
        the build is not known) every token of the micro-batch."""
        if self.number is not None and self.number >= PER_SLOT_FROM:
            return ONE_ROW_PER_SLOT
        return WHOLE_MICRO_BATCH

    @property
    def caches_latent_values(self) -> bool:
        """Whether latent attention (DeepSeek's MLA) keeps a V cache beside its K cache: up to
        ggml-org/llama.cpp#19067, "kv-cache : support V-less cache" (merged 2026-01-24), each layer kept the
        latent (kv_lora_rank values) a second time as V; from it V is a view of K. Its first release is not
        read here: a build from b9460 (the per-slot rows' release, months later) is sized without the V
        cache, any other build, or one not given, with it: the larger need, the safe side."""
        return self.number is None or self.number < PER_SLOT_FROM

    @property
    def offload(self) -> str:
        """How the build places -ngl N's layers and head: the layers first up to b7108 and in Ollama's own
        runners (a release before 0.30.0 read here), the head first from b7847 and in every llama-server
        Ollama starts; a build between them or not given (an Ollama release not given or not read), the
        larger of the two placements."""
        if self.number is None:
            return LAYERS_FIRST if self.ollama_known else OFFLOAD_LARGER
        if self.number <= LAYERS_FIRST_UNTIL:
            return LAYERS_FIRST
        return HEAD_FIRST if self.number >= HEAD_FIRST_FROM else OFFLOAD_LARGER

    @property
    def ollama_known(self) -> bool:
        """An Ollama release no later than the newest minor release read here."""
        return self.ollama is not None and self.ollama[:2] <= OLLAMA_NEWEST_MINOR


NOT_GIVEN = LlamaCppBuild()


def kv_layout(engine: str, build: LlamaCppBuild, parallel: int) -> str:
    """How the KV cache of `-np parallel` slots is laid out under `engine` and `build`: Ollama from 0.30.0
    one stream per slot, its own runners (or the version not known) one pool; llama-server started with
    `-np` and no `--kv-unified` one stream per slot from b5913, one pool before it, four slots over one pool
    for `-np 1` from b6823 to b7432; a llama.cpp build not given the larger of pool and streams."""
    if engine == OLLAMA:
        return KV_STREAMS if build.ollama is not None and build.number is not None else KV_POOL
    if build.number is None:
        return KV_LARGER
    if build.number < STREAMS_FROM:
        return KV_POOL
    if parallel == 1 and AUTO_SLOTS_FROM <= build.number < AUTO_SLOTS_UNTIL:
        return KV_AUTO_SLOTS
    return KV_STREAMS


def unified_flag_known(build: LlamaCppBuild) -> bool:
    """Whether llama-server of `build` takes --kv-unified: from b5913, where the cache first kept a stream
    per slot (a build not given is taken to be a recent one)."""
    return build.number is None or build.number >= STREAMS_FROM


def parse_build(text: object, field: str = "engine_version") -> LlamaCppBuild:
    """The build asked, b6500 or 6500 (empty: not given); refused by `field` where it is not a build."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return NOT_GIVEN
    if not isinstance(text, str) or _BUILD.fullmatch(text.strip()) is None:
        raise SizingError(field, gettext(
            "Enter the llama.cpp build as its number, such as b6500 or 6500 (llama-server --version prints "
            "it), or leave it empty."))
    return LlamaCppBuild(int(text.strip().lstrip("bB")))


def parse_ollama_version(text: object, field: str = "engine_version") -> LlamaCppBuild:
    """The Ollama release asked, 0.30.1 or v0.30.1 (empty: not given), as the llama.cpp build it runs
    (`OLLAMA_LLAMA_SERVER`; none before 0.30.0, nor for a release later than the newest minor read);
    refused by `field` where it is not a release."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return NOT_GIVEN
    match = _OLLAMA.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise SizingError(field, gettext(
            "Enter the Ollama version as ollama --version prints it, such as 0.30.1 or v0.32.15, or leave it "
            "empty."))
    version = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
    number = None
    if version[:2] <= OLLAMA_NEWEST_MINOR:
        for first, pinned in OLLAMA_LLAMA_SERVER:
            if version >= first:
                number = pinned
    return LlamaCppBuild(number, version)


def parse_engine_build(engine: str | None, text: object, field: str = "engine_version") -> LlamaCppBuild:
    """engine_version as `engine` reads it here: llama.cpp's build, Ollama's release; not given under any
    other engine (vLLM reads its release elsewhere, `vllm_versions`)."""
    if engine == LLAMACPP:
        return parse_build(text, field)
    if engine == OLLAMA:
        return parse_ollama_version(text, field)
    return NOT_GIVEN


def build_for(engine: str, build: LlamaCppBuild) -> LlamaCppBuild:
    """`build` where `engine` runs it (a llama.cpp build under llama.cpp, an Ollama release under Ollama);
    not given otherwise."""
    if (engine == LLAMACPP and build.ollama is None) or (engine == OLLAMA and build.ollama is not None):
        return build
    return NOT_GIVEN


def constraint_label(engine: str) -> str:
    """What "Constraints applied" calls the version an answer under `engine` assumed."""
    return gettext("Ollama version") if engine == OLLAMA else gettext("llama.cpp build")


def reservation_words(engine: str, build: LlamaCppBuild) -> str:
    """The build or Ollama release an answer under `engine` assumed and the logits it reserves, in short
    ("Constraints applied")."""
    if engine == OLLAMA:
        return _ollama_reservation_words(build)
    if build.reservation == ONE_ROW_PER_SLOT:
        return gettext("%(build)s: the logits of one row per slot reserved") % {"build": build.text}
    if build.given:
        return gettext("%(build)s: the logits of every token of the micro-batch reserved") % {
            "build": build.text}
    return gettext(
        "not given: the logits of every token of the micro-batch reserved, as before b%(from)s"
    ) % {"from": PER_SLOT_FROM}


def _ollama_reservation_words(build: LlamaCppBuild) -> str:
    if not build.given:
        words = gettext(
            "not given: the logits of every token of the micro-batch reserved, as Ollama's own runners "
            "before 0.30.0")
    elif not build.ollama_known:
        words = gettext(
            "%(version)s: not a release read here, the logits of every token of the micro-batch reserved")
    elif build.number is None:
        words = gettext("%(version)s: its own runners, the logits of every token of the micro-batch reserved")
    elif build.reservation == ONE_ROW_PER_SLOT:
        words = gettext(
            "%(version)s: llama-server b%(build)s or later, the logits of one row per slot reserved")
    else:
        words = gettext(
            "%(version)s: llama-server b%(build)s, the logits of every token of the micro-batch reserved")
    return words % {"version": build.text, "build": build.number}


# The first llama.cpp release with the qwen3next architecture (Gated DeltaNet): ggml-org/llama.cpp#16095,
# merged 2025-11-28; the Ollama maintainers name b7186 as the sync that brings it (ollama/ollama#12349).
GATED_DELTANET_FROM = 7186
# The kimi-linear architecture (Kimi Delta Attention) came with ggml-org/llama.cpp#18755, "Kimi-Linear support
# (backend agnostic + MLA KV cache)", opened 2026-01-11 on b7738 and merged in early February 2026 (the
# earlier attempts, #17592 and #18381, were closed unmerged). The release of its merge is not read here: b7738
# and every build before it lack the architecture and are refused; a later build is sized (the builds between
# b7739 and the merge's release would not load it either).
KIMI_DELTA_AFTER = 7738


def check_build_runs(model: LanguageModelSpec, build: LlamaCppBuild, engine: str = LLAMACPP) -> None:
    """Refuse a llama.cpp build (under llama.cpp, or the llama-server an Ollama release starts) that cannot
    load `model`'s architecture: Gated DeltaNet (Qwen3-Next) before GATED_DELTANET_FROM, Kimi Delta
    Attention (Kimi-Linear) up to KIMI_DELTA_AFTER. A llama.cpp build not given is taken to be a recent one.
    Under Ollama, Kimi-Linear runs only in the llama-server of a release from 0.30.0: its own runners (an
    earlier release, and how one not given or later than read is sized) have no Kimi-Linear model in the Go
    engine (model/models) and a vendored llama.cpp without the architecture (ec98e2002, 2025-12-16)."""
    linear = (model.architecture or PLAIN).linear_attention
    if linear is None:
        return
    if linear.kind == KIMI_DELTA:
        if engine == OLLAMA and build.number is None:
            raise SizingError("engine_version", gettext(
                "%(model)s runs under Ollama only in the llama-server of a release from %(from)s "
                "(llama.cpp's kimi-linear architecture): Ollama's own runners, which an earlier release, or "
                "one not given or later than %(newest)s, is sized as, have no Kimi-Linear model. Give the "
                "Ollama version, %(from)s or later.") % {
                "model": model.name, "from": _text(OLLAMA_LLAMA_SERVER[0][0]),
                "newest": ".".join(str(number) for number in OLLAMA_NEWEST_MINOR)})
        if build.number is not None and build.number <= KIMI_DELTA_AFTER:
            raise SizingError("engine_version", gettext(
                "%(model)s needs llama.cpp's kimi-linear architecture (ggml-org/llama.cpp#18755, merged "
                "after b%(after)s): %(build)s does not load it.") % {
                "model": model.name, "after": KIMI_DELTA_AFTER, "build": build.text})
        return
    if linear.kind != GATED_DELTANET or build.number is None:
        return
    if build.number < GATED_DELTANET_FROM:
        raise SizingError("engine_version", gettext(
            "%(model)s needs llama.cpp's qwen3next architecture, in builds from b%(from)s "
            "(ggml-org/llama.cpp#16095): %(build)s does not load it.") % {
            "model": model.name, "from": GATED_DELTANET_FROM, "build": build.text})


def build_words(engine: str, build: LlamaCppBuild) -> str:
    """The build or Ollama release an answer assumed, the logits it reserves and how its KV cache is laid
    out, for its assumptions."""
    if engine == OLLAMA:
        return _ollama_words(build)
    return _logits_words(build) + " " + _layout_words(build)


def _logits_words(build: LlamaCppBuild) -> str:
    if not build.given:
        return gettext(
            "llama.cpp build not given: the compute buffer holds the logits of every token of the "
            "micro-batch, as builds before b%(from)s reserve them (the safe side). From b%(from)s "
            "llama-server reserves one row per slot (ggml-org/llama.cpp#23861): engine_version=b%(from)s "
            "or later sizes that."
        ) % {"from": PER_SLOT_FROM}
    if build.reservation == ONE_ROW_PER_SLOT:
        return gettext(
            "llama.cpp build %(build)s: llama-server reserves the logits of one row per slot, as every "
            "build from b%(from)s does (ggml-org/llama.cpp#23861), and the attention mask in f16."
        ) % {"build": build.text, "from": PER_SLOT_FROM}
    return gettext(
        "llama.cpp build %(build)s: the compute buffer holds the logits of every token of the micro-batch, "
        "as builds before b%(from)s reserve them; from b%(from)s llama-server reserves one row per slot."
    ) % {"build": build.text, "from": PER_SLOT_FROM}


def _layout_words(build: LlamaCppBuild) -> str:
    """How the build's llama-server lays out the KV cache of the command's `-np` slots (`kv_layout`)."""
    values = {"streams": STREAMS_FROM, "from": AUTO_SLOTS_FROM, "until": AUTO_SLOTS_UNTIL - 1,
              "slots": AUTO_SLOTS}
    if build.number is None:
        return gettext(
            "The KV cache is sized as the larger of llama-server's two layouts of the command's slots: one "
            "stream per slot (-np without --kv-unified, from b%(streams)s, ggml-org/llama.cpp#14363), each "
            "slot's share of -c rounded up to 256 cells and a sliding-window layer's window plus one "
            "micro-batch in every stream, never fewer cells than one pool shared by the slots (the builds "
            "before it); the compute buffer as the larger graph of the two. From b%(from)s to b%(until)s "
            "llama-server runs -np 1 as %(slots)s slots over one pool (more cells for a sliding-window "
            "model): engine_version sizes that build."
        ) % values
    if build.number < STREAMS_FROM:
        return gettext(
            "Before b%(streams)s llama-server keeps one KV pool shared by the slots, a sliding-window layer "
            "keeping the window of every slot plus one micro-batch."
        ) % values
    words = gettext(
        "From b%(streams)s llama-server started with -np and without --kv-unified keeps one KV stream per "
        "slot (ggml-org/llama.cpp#14363): each slot's share of -c rounded up to 256 cells, a sliding-window "
        "layer's window plus one micro-batch in every stream, and each token of the micro-batch attends to "
        "its own stream."
    ) % values
    if AUTO_SLOTS_FROM <= build.number < AUTO_SLOTS_UNTIL:
        words += " " + gettext(
            "From b%(from)s to b%(until)s it runs -np 1 as %(slots)s slots over one pool "
            "(ggml-org/llama.cpp#16736, until #17997)."
        ) % values
    return words


def _ollama_words(build: LlamaCppBuild) -> str:
    newest_major, newest_minor = OLLAMA_NEWEST_MINOR
    values = {"version": build.text, "build": build.number, "from": PER_SLOT_FROM,
              "ollama": OLLAMA_PER_SLOT_FROM, "least": OLLAMA_LLAMA_SERVER[-1][1],
              "newest": f"{newest_major}.{newest_minor}.x"}
    streams = gettext(
        "Its KV cache keeps one stream per slot (-c num_ctx × OLLAMA_NUM_PARALLEL, -np OLLAMA_NUM_PARALLEL): "
        "each slot's num_ctx rounded up to 256 tokens, and a sliding-window layer's window plus one "
        "micro-batch in each slot.")
    if not build.given:
        return gettext(
            "Ollama's version not given: the compute buffer holds the logits of every token of the "
            "micro-batch and the KV cache is one pool shared by the slots, as Ollama's own runners before "
            "0.30.0 hold them (the safe side for the logits). From %(ollama)s Ollama starts llama-server "
            "build b%(least)s or later, which reserves one row per slot (ggml-org/llama.cpp#23861) and keeps "
            "a KV stream per slot (more for a sliding-window model with several slots): "
            "engine_version=%(ollama)s or later (ollama --version) sizes that."
        ) % values
    if not build.ollama_known:
        return gettext(
            "Ollama %(version)s is later than the releases read here (up to %(newest)s): sized as when the "
            "version is not given, the logits of every token of the micro-batch and one KV pool shared by "
            "the slots (the safe side for the logits). A release from %(ollama)s to %(newest)s sizes "
            "llama-server's one row per slot and its KV stream per slot."
        ) % values
    if build.number is None:
        return gettext(
            "Ollama %(version)s runs its own runners (before 0.30.0): the compute buffer holds the logits of "
            "every token of the micro-batch, and the KV cache is one pool shared by the slots, a "
            "sliding-window layer keeping its window per slot plus one micro-batch."
        ) % values
    if build.reservation == ONE_ROW_PER_SLOT:
        return gettext(
            "Ollama %(version)s starts llama-server build b%(build)s or later (from %(ollama)s), which "
            "reserves the logits of one row per slot (ggml-org/llama.cpp#23861) and the attention mask in "
            "f16."
        ) % values + " " + streams
    return gettext(
        "Ollama %(version)s starts llama-server build b%(build)s, before b%(from)s: the compute buffer holds "
        "the logits of every token of the micro-batch."
    ) % values + " " + streams
