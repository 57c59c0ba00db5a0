"""Which rows of logits llama.cpp reserves its compute buffer for, by the build that serves the model.

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

The library's own default, llama-cpp-python and Ollama's own runners keep the whole micro-batch. Ollama
0.30.0 (ollama/ollama#16031) replaced its runners with llama-server, started with `-np` its slots, and
0.30.1 pins llama.cpp b9479 (`LLAMA_CPP_VERSION`): from 0.30.1 Ollama too reserves one row per slot.
Ollama's version is not asked here, so Ollama is sized on the whole micro-batch, the larger need.

A llama.cpp build that is not given is sized as a build before b9460 (the whole micro-batch, either
generation of the mask): the larger need, the safe side. The build is given as llama-server prints it
(`--version`: "version: 6500 (…)"; release tags "b6500").
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import SizingError
from ..i18n import gettext

PER_SLOT_FROM = 9460  # the first release with ggml-org/llama.cpp#23861: llama-server reserves a row per slot
OLLAMA_PER_SLOT_FROM = "0.30.1"  # the first Ollama release whose llama-server reserves so (b9479)
WHOLE_MICRO_BATCH, ONE_ROW_PER_SLOT = "micro-batch", "slot"  # the rows of logits reserved
RESERVATIONS = (WHOLE_MICRO_BATCH, ONE_ROW_PER_SLOT)
# A build as llama.cpp numbers its releases: b6500 or 6500 (ASCII digits only, no leading zero).
BUILD_PATTERN = r"[bB]?[1-9][0-9]{0,5}"
_BUILD = re.compile(BUILD_PATTERN)


@dataclass(frozen=True)
class LlamaCppBuild:
    """The llama.cpp build an answer assumes (None: not given)."""

    number: int | None = None

    @property
    def given(self) -> bool:
        return self.number is not None

    @property
    def text(self) -> str:
        """As llama.cpp tags its releases: b6500 (empty: not given)."""
        return f"b{self.number}" if self.number is not None else ""

    @property
    def reservation(self) -> str:
        """The rows of logits the build's llama-server reserves: one per slot from b9460, else (and where
        the build is not given) every token of the micro-batch."""
        if self.number is not None and self.number >= PER_SLOT_FROM:
            return ONE_ROW_PER_SLOT
        return WHOLE_MICRO_BATCH


NOT_GIVEN = LlamaCppBuild()


def parse_build(text: object, field: str = "engine_version") -> LlamaCppBuild:
    """The build asked, b6500 or 6500 (empty: not given); refused by `field` where it is not a build."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return NOT_GIVEN
    if not isinstance(text, str) or _BUILD.fullmatch(text.strip()) is None:
        raise SizingError(field, gettext(
            "Enter the llama.cpp build as its number, such as b6500 or 6500 (llama-server --version prints "
            "it), or leave it empty."))
    return LlamaCppBuild(int(text.strip().lstrip("bB")))


def reservation_words(build: LlamaCppBuild) -> str:
    """The llama.cpp build an answer assumed and the logits it reserves, in short ("Constraints applied")."""
    if build.reservation == ONE_ROW_PER_SLOT:
        return gettext("%(build)s: the logits of one row per slot reserved") % {"build": build.text}
    if build.given:
        return gettext("%(build)s: the logits of every token of the micro-batch reserved") % {
            "build": build.text}
    return gettext(
        "not given: the logits of every token of the micro-batch reserved, as before b%(from)s"
    ) % {"from": PER_SLOT_FROM}


def build_words(engine: str, build: LlamaCppBuild) -> str:
    """The build an answer assumed and the rows of logits it reserves, for its assumptions."""
    if engine == "ollama":
        return gettext(
            "The compute buffer holds the logits of every token of the micro-batch, as Ollama's own runners "
            "reserved them before 0.30. From %(ollama)s Ollama starts llama-server build b9479 or later, "
            "which reserves one row per slot: on the safe side, as Ollama's version is not asked."
        ) % {"ollama": OLLAMA_PER_SLOT_FROM}
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
