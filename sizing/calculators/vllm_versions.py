"""vLLM by version: which memory lives inside `gpu_memory_utilization` in each release family (issue #43).

Every V1 release sizes the KV cache the same way — `Worker.determine_available_memory` in
vllm/v1/worker/gpu_worker.py profiles one forward pass of `max_num_batched_tokens` tokens and one sampler
step, and gives the KV cache what is left of utilization × the GPU's memory — but what it subtracts has
changed twice:

- **0.8.0 – 0.9.1** (the V1 engine before PR #19312): the profile counts every byte the GPU holds outside
  PyTorch after the forward pass as the model's ("non_torch_allocations = total_allocated_bytes −
  torch_allocated_bytes", the used memory `torch.cuda.mem_get_info` reports less PyTorch's). That
  includes the CUDA context the process created at start (and NCCL's communicators under tensor
  parallelism): the context is paid inside the budget.
- **0.9.2 – 0.20** (PR #19312, "Reuse V0's memory_profiling util for gpu worker memory profiling"): the
  profile measures from a snapshot taken after the context exists, so only what the forward pass adds
  outside PyTorch counts ("non-torch forward increase memory"); the CUDA context and the CUDA-graph pool
  (captured after the KV cache) live in what utilization leaves free.
- **0.21 on**: before the KV cache is sized, vLLM captures its CUDA graphs once into a throw-away pool
  and subtracts the estimate (`GPUModelRunner.profile_cudagraph_memory`: the first, largest capture plus
  the second's increase times the remaining graphs; "Estimated CUDA graph memory: … GiB total"): the
  graphs are paid inside the budget. `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0` turns the estimate off
  ("CUDA graph memory profiling is enabled (default since v0.21.0) … To disable, set
  VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0"), which gives back the 0.9.2 – 0.20 budget.

In every V1 release the profiling forward pass is the first call of the torch.compile'd model, so it
compiles (or loads the compiled graph) inside the profiled window; the activation peak is the same item in
each family.

A multimodal checkpoint loads its vision tower unless every modality's limit is 0: from 0.10.1
(PR #22299, "Implicit language-model-only mode via limit-mm-per-prompt") `--limit-mm-per-prompt
'{"image": 0}'` leaves the encoder and its projector unbuilt, and the weights are the language model's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import SizingError
from ..i18n import gettext
from .vllm_interconnect import DEFAULT_INTERCONNECT

# The newest stable release the budget rules are known for, and what an answer assumes when none is asked
# (vLLM 0.31.0: the release deployments pin in late 2026, its image vllm/vllm-openai:v0.31.0; the
# CUDA-graph estimate and its switch unchanged since 0.21).
DEFAULT_VERSION = "0.31.0"
OLDEST = (0, 8, 0)  # the V1 engine's first default release; V0's budget is not modelled
NEWEST_MINOR = (0, 31)  # any patch of the newest known minor release is taken
PROFILE_SNAPSHOT_FROM = (0, 9, 2)  # PR #19312: the CUDA context leaves the budget
CUDAGRAPH_ESTIMATE_FROM = (0, 21, 0)  # CUDA graphs estimated inside the budget by default
SKIP_TOWER_FROM = (0, 10, 1)  # PR #22299: every modality limit 0 skips the vision tower
CUDAGRAPH_SWITCH = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"
SKIP_TOWER_FLAG = """--limit-mm-per-prompt '{"image": 0}'"""

# Release families: the budget's rules change only at these releases.
FAMILY_CONTEXT_INSIDE = "0.8"  # 0.8.0 – 0.9.1
FAMILY_SNAPSHOT = "0.9.2"  # 0.9.2 – 0.20
FAMILY_GRAPHS_INSIDE = "0.21"  # 0.21 on

_FORM = re.compile(r"v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?(?:\.(\d{1,3}))?")


@dataclass(frozen=True, order=True)
class VllmVersion:
    """A vLLM release as asked ("0.19", "0.9.2", "v0.21.0"), and the family of budget rules it follows."""

    number: tuple[int, int, int]
    text: str

    @property
    def family(self) -> str:
        if self.number < PROFILE_SNAPSHOT_FROM:
            return FAMILY_CONTEXT_INSIDE
        if self.number < CUDAGRAPH_ESTIMATE_FROM:
            return FAMILY_SNAPSHOT
        return FAMILY_GRAPHS_INSIDE

    @property
    def context_inside(self) -> bool:
        """Whether the CUDA context is paid inside gpu_memory_utilization (before PR #19312)."""
        return self.family == FAMILY_CONTEXT_INSIDE

    @property
    def estimates_cudagraphs_by_default(self) -> bool:
        return self.family == FAMILY_GRAPHS_INSIDE

    @property
    def skips_tower(self) -> bool:
        """Whether every modality limit at 0 leaves the vision tower unloaded in this release."""
        return self.number >= SKIP_TOWER_FROM


def parse_version(text: object, field: str = "engine_version") -> VllmVersion:
    """The release asked, refused by `field` where it is not a version (malformed) or not one whose budget
    rules are known (before 0.8, the V0 engine; after the newest known release)."""
    if text is None or (isinstance(text, str) and not text.strip()):
        text = DEFAULT_VERSION
    if not isinstance(text, str):
        raise SizingError(field, _malformed())
    match = _FORM.fullmatch(text.strip())
    if match is None:
        raise SizingError(field, _malformed())
    major, minor, patch = (int(match.group(index) or 0) for index in (1, 2, 3))
    number = (major, minor, patch)
    shown = text.strip().removeprefix("v")
    if number < OLDEST or (major, minor) > NEWEST_MINOR:
        raise SizingError(field, gettext(
            "vLLM %(version)s is not a release whose memory budget is known here: choose a version from 0.8 "
            "(the V1 engine) to %(newest)s."
        ) % {"version": shown, "newest": DEFAULT_VERSION})
    return VllmVersion(number=number, text=shown)


def known_release_pattern() -> str:
    """The releases `parse_version` takes (or empty: the default), as a regular expression: the API's schema
    states it, so a schema-valid version is always one whose rules are known."""
    minors = "|".join(str(minor) for minor in range(OLDEST[1], NEWEST_MINOR[1] + 1))
    return rf"^(?:v?{OLDEST[0]}\.(?:{minors})(?:\.\d{{1,3}}){{0,2}})?$"


def _malformed() -> str:
    return gettext("Enter the vLLM version as numbers with dots, such as 0.19 or 0.9.2.")


DEFAULT = parse_version(DEFAULT_VERSION)


def cudagraph_estimate_for(version: VllmVersion, asked: bool | None,
                           field: str = "cudagraph_estimate") -> bool:
    """Whether the CUDA-graph estimate is inside the budget: the release's default where not asked; vLLM's
    switch turns it off from 0.21 on, and releases before 0.21 leave the graphs outside."""
    if asked is None:
        return version.estimates_cudagraphs_by_default
    if asked and not version.estimates_cudagraphs_by_default:
        raise SizingError(field, gettext(
            "vLLM %(version)s leaves the CUDA graphs outside gpu_memory_utilization; their estimate inside "
            "the budget is the default from 0.21 (%(switch)s=0 turns it off)."
        ) % {"version": version.text, "switch": CUDAGRAPH_SWITCH})
    return asked


@dataclass(frozen=True)
class VllmRelease:
    """The vLLM release a query asks for and the switches whose default it sets, with what the GPUs of a
    split are connected by: what the wizard's breakdown, its machine rows, clusters and watches size vLLM
    under (the GPU what-if reads the same)."""

    version: VllmVersion = DEFAULT
    cudagraph_estimate: bool | None = None  # None: the release's default (`cudagraph_estimate_for`)
    skip_vision_tower: bool = False  # every modality limit 0 (`vllm.check_skip_vision_tower`)
    # What the GPUs of a tensor-parallel split are connected by (`vllm_interconnect`); None: not said, the
    # NVSwitch machines measured (the GPU what-if takes a named GPU type's instead).
    interconnect: str | None = None

    def settings(self) -> dict[str, object]:
        """The `VllmSettings` fields this release sets."""
        return {"version": self.version, "cudagraph_estimate": self.cudagraph_estimate,
                "skip_vision_tower": self.skip_vision_tower,
                "interconnect": self.interconnect or DEFAULT_INTERCONNECT}


DEFAULT_RELEASE = VllmRelease()
