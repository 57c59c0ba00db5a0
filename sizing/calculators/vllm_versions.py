"""vLLM by version: which memory lives inside `gpu_memory_utilization` in each release family (issue #43).

Every V1 release sizes the KV cache the same way — `Worker.determine_available_memory` in
vllm/v1/worker/gpu_worker.py profiles one forward pass of `max_num_batched_tokens` tokens and one sampler
step, and gives the KV cache what is left of utilization × the GPU's memory — but what it subtracts, and the
utilization it takes when none is given, have changed four times:

- **0.8.0 – 0.9.1** (the V1 engine before PR #19312): the profile counts every byte the GPU holds outside
  PyTorch after the forward pass as the model's ("non_torch_allocations = total_allocated_bytes −
  torch_allocated_bytes", the used memory `torch.cuda.mem_get_info` reports less PyTorch's). That
  includes the CUDA context the process created at start (and NCCL's communicators under tensor
  parallelism): the context is paid inside the budget.
- **0.9.2 – 0.19** (PR #19312, "Reuse V0's memory_profiling util for gpu worker memory profiling"): the
  profile measures from a snapshot taken after the context exists, so only what the forward pass adds
  outside PyTorch counts ("non-torch forward increase memory"); the CUDA context and the CUDA-graph pool
  (captured after the KV cache) live in what utilization leaves free. `gpu_memory_utilization` defaults to
  0.9 (`CacheConfig`; a 0.19.0 start with no flag logs "Desired GPU memory utilization is (0.9, …)").
- **0.20 – 0.24** (PR #38284, "[Startup][UX] Enable CUDAGraph memory profiling by default"): before the KV
  cache is sized, the model runner captures its CUDA graphs once into a throw-away pool and the worker
  subtracts the estimate (`GPUModelRunner.profile_cudagraph_memory`: "Estimated CUDA graph memory: … GiB
  total"): the graphs are paid inside the budget. `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0` turns the
  estimate off. The same PR raised the default `gpu_memory_utilization` to 0.92, a fixed default
  (`CacheConfig.gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)`, as at v0.25.0 and
  v0.30.0; a 0.31.0 start with no flag logs "Desired GPU memory utilization is (0.92, …)"). The PR meant it
  for 0.21 and the log says "(default since v0.21.0)", but it shipped in 0.20.0: a published 0.20.0 start
  with no such variable logs "CUDA graph memory profiling is enabled … --gpu-memory-utilization=0.7000 is
  equivalent to --gpu-memory-utilization=0.6868 without CUDA graph memory profiling", where 0.19 starts
  still log "In v0.19, CUDA graph memory profiling will be enabled by default" with the estimate off.
- **0.25 – 0.28** (PR #44443, "[ModelRunner V2] Enable by default for all dense models"; release notes of
  0.25.0): vLLM picks its V2 model runner (`vllm/v1/worker/gpu/model_runner.py`, "Using V2 Model Runner")
  for every model that has neither a mixture of experts nor linear-attention (hybrid) layers
  (`VllmConfig._is_default_v2_model_runner_model`: "is_default_v2_architecture or not model_config.is_moe",
  hybrid models left on V1). Until 0.29 that runner's `profile_cudagraph_memory` is a stub that returns 0
  (PR #36520; vllm-project/vllm#49224), so with the estimate on its graphs still live outside the budget: a
  0.26.0 start of Qwen2.5 0.5B logs "Using V2 Model Runner" and a KV cache of the requested memory less
  the weights, the activation peak and the memory outside PyTorch (13.99 − 0.93 − 1.06 − 0.07 GiB), the
  graphs' 0.4 GiB outside. `VLLM_USE_V2_MODEL_RUNNER` (from 0.22, PR #39337: unset, vLLM's choice; 0, the
  V1 runner; 1, the V2 runner) selects the runner. From 0.22 the V2 runner is already the default for Qwen3
  dense models and from 0.23 for Llama and Mistral ones (#43458): the catalog does not record a model's
  Hugging Face architecture, so those releases are sized with the V1 runner unless the V2 one is asked.
- **0.29 on** (PR #53183, "[Model Runner V2] Use MRV2 for all models by default"; PR #53306, "[Model
  Runner V2] Reserve CUDA graph memory", "so that it can be factored into the kv cache auto-sizing, as MRV1
  already does"): every model runs on the V2 runner, which now estimates its graphs too: they are paid
  inside the budget whichever runner runs. From here the worker's closing line counts the estimate in its
  "peak activation" (`peak_activation_memory = transient_peak_headroom + cudagraph_memory_estimate_applied`),
  so a 0.31.0 start's "72.91 GiB − 15.26 − 1.44 = 56.21 GiB" of KV cache has the graphs inside its 1.44.

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
from fractions import Fraction
from typing import TYPE_CHECKING

from ..errors import SizingError
from ..i18n import gettext
from ..units import general_number
from .vllm_interconnect import DEFAULT_INTERCONNECT

if TYPE_CHECKING:
    from ..specs import LanguageModelSpec

# The newest stable release the budget rules are known for, and what an answer assumes when none is asked
# (vLLM 0.31.0: the release deployments pin in late 2026, its image vllm/vllm-openai:v0.31.0; its rules
# those of 0.29 on).
DEFAULT_VERSION = "0.31.0"
OLDEST = (0, 8, 0)  # the V1 engine's first default release; V0's budget is not modelled
NEWEST_MINOR = (0, 31)  # any patch of the newest known minor release is taken
PROFILE_SNAPSHOT_FROM = (0, 9, 2)  # PR #19312: the CUDA context leaves the budget
CUDAGRAPH_ESTIMATE_FROM = (0, 20, 0)  # PR #38284: CUDA graphs estimated inside the budget by default
SKIP_TOWER_FROM = (0, 10, 1)  # PR #22299: every modality limit 0 skips the vision tower
RUNNER_SWITCH_FROM = (0, 22, 0)  # PR #39337: VLLM_USE_V2_MODEL_RUNNER unset is vLLM's choice, 0 V1, 1 V2
V2_DENSE_FROM = (0, 25, 0)  # PR #44443: the V2 runner by default for models without experts or hybrid layers
V2_EVERY_MODEL_FROM = (0, 29, 0)  # PR #53183 (every model on V2) and #53306 (V2 estimates its graphs)
CUDAGRAPH_SWITCH = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"
RUNNER_SWITCH = "VLLM_USE_V2_MODEL_RUNNER"
SKIP_TOWER_FLAG = """--limit-mm-per-prompt '{"image": 0}'"""
# `gpu_memory_utilization` when none is given (CacheConfig): 0.9, and 0.92 from the release whose CUDA-graph
# estimate takes the graphs into the budget (PR #38284 raised both together).
UTILIZATION_BEFORE_ESTIMATE = Fraction(9, 10)
UTILIZATION_WITH_ESTIMATE = Fraction(23, 25)
# vLLM's model runners: V1 (`gpu_model_runner.py`) and V2 (`gpu/model_runner.py`).
V1_RUNNER, V2_RUNNER = "v1", "v2"
RUNNERS = (V1_RUNNER, V2_RUNNER)

# Release families: the budget's rules change only at these releases.
FAMILY_CONTEXT_INSIDE = "0.8"  # 0.8.0 – 0.9.1
FAMILY_SNAPSHOT = "0.9.2"  # 0.9.2 – 0.19
FAMILY_GRAPHS_INSIDE = "0.20"  # 0.20 – 0.24: the V1 runner's graph estimate inside, utilization 0.92
FAMILY_V2_DENSE = "0.25"  # 0.25 – 0.28: the V2 runner for dense models, its graphs outside
FAMILY_V2_EVERY_MODEL = "0.29"  # 0.29 on: the V2 runner for every model, its graphs inside

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
        if self.number < V2_DENSE_FROM:
            return FAMILY_GRAPHS_INSIDE
        if self.number < V2_EVERY_MODEL_FROM:
            return FAMILY_V2_DENSE
        return FAMILY_V2_EVERY_MODEL

    @property
    def context_inside(self) -> bool:
        """Whether the CUDA context is paid inside gpu_memory_utilization (before PR #19312)."""
        return self.family == FAMILY_CONTEXT_INSIDE

    @property
    def estimates_cudagraphs_by_default(self) -> bool:
        return self.number >= CUDAGRAPH_ESTIMATE_FROM

    @property
    def default_utilization(self) -> Fraction:
        """`gpu_memory_utilization` when none is given in this release (CacheConfig's default)."""
        if self.estimates_cudagraphs_by_default:
            return UTILIZATION_WITH_ESTIMATE
        return UTILIZATION_BEFORE_ESTIMATE

    @property
    def has_runner_switch(self) -> bool:
        """Whether VLLM_USE_V2_MODEL_RUNNER picks the model runner (unset: vLLM's choice per model)."""
        return self.number >= RUNNER_SWITCH_FROM

    @property
    def v2_estimates_cudagraphs(self) -> bool:
        """Whether the V2 model runner estimates its CUDA graphs (before, its estimate is 0)."""
        return self.number >= V2_EVERY_MODEL_FROM

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
    """Whether the CUDA-graph estimate is asked of the model runner: the release's default where not asked;
    vLLM's switch turns it off from 0.20 on, and releases before 0.20 leave the graphs outside."""
    if asked is None:
        return version.estimates_cudagraphs_by_default
    if asked and not version.estimates_cudagraphs_by_default:
        raise SizingError(field, gettext(
            "vLLM %(version)s leaves the CUDA graphs outside gpu_memory_utilization; their estimate inside "
            "the budget is the default from 0.20 (%(switch)s=0 turns it off)."
        ) % {"version": version.text, "switch": CUDAGRAPH_SWITCH})
    return asked


def runs_on_v2_by_default(model: LanguageModelSpec) -> bool:
    """Whether vLLM's oracle picks the V2 runner for `model` from 0.25: a model with neither a mixture of
    experts nor linear-attention (hybrid) layers."""
    arch = model.architecture
    return arch is None or (arch.moe is None and arch.linear_attention is None)


def runner_asked_for(version: VllmVersion, asked: str | None, field: str = "model_runner") -> str | None:
    """The model runner asked (None: the release's choice), refused where the release has no switch for it:
    the V2 runner is sized from 0.22, where VLLM_USE_V2_MODEL_RUNNER picks it."""
    if asked is None or asked == V1_RUNNER:
        return asked
    if asked != V2_RUNNER:
        raise SizingError(field, gettext("The vLLM model runner is v1 or v2."))
    if not version.has_runner_switch:
        raise SizingError(field, gettext(
            "vLLM %(version)s runs the V1 model runner; the V2 runner is sized from 0.22, where %(switch)s=1 "
            "selects it."
        ) % {"version": version.text, "switch": RUNNER_SWITCH})
    return asked


def runner_for(model: LanguageModelSpec, version: VllmVersion, asked: str | None,
               field: str = "model_runner") -> str:
    """The model runner `model` runs on: the one asked, else the release's choice (the V2 runner for every
    model from 0.29, for models without experts or linear attention from 0.25, else V1). The V2 runner
    asked for a model the release keeps on V1 is refused: before 0.29 it does not run every model."""
    asked = runner_asked_for(version, asked, field)
    dense = runs_on_v2_by_default(model)
    if asked == V2_RUNNER and not dense and version.number < V2_EVERY_MODEL_FROM:
        raise SizingError(field, gettext(
            "vLLM %(version)s runs models with a mixture of experts or linear attention on its V1 model "
            "runner; the V2 runner runs every model from 0.29."
        ) % {"version": version.text})
    if asked is not None:
        return asked
    if version.number >= V2_EVERY_MODEL_FROM or (version.number >= V2_DENSE_FROM and dense):
        return V2_RUNNER
    return V1_RUNNER


def graphs_inside(version: VllmVersion, estimate_asked: bool | None, runner: str,
                  field: str = "cudagraph_estimate") -> bool:
    """Whether the CUDA graphs' estimate is paid inside gpu_memory_utilization: the estimate asked of the
    runner (the release's default where not asked), and a runner that estimates (V1 from 0.20, V2 from
    0.29). The estimate asked on of a V2 runner that estimates nothing is refused."""
    estimate = cudagraph_estimate_for(version, estimate_asked, field)
    estimates = runner == V1_RUNNER or version.v2_estimates_cudagraphs
    if estimate_asked and not estimates:
        raise SizingError(field, gettext(
            "vLLM %(version)s's V2 model runner estimates no CUDA graphs (from 0.29 it does): their estimate "
            "inside the budget needs the V1 runner (model_runner v1, %(switch)s=0)."
        ) % {"version": version.text, "switch": RUNNER_SWITCH})
    return estimate and estimates


def release_env(version: VllmVersion, estimate_asked: bool | None,
                runner_asked: str | None) -> tuple[str, ...]:
    """The environment a `vllm serve` command sets for the switches asked: the estimate turned off where the
    release has it on, the runner asked wherever the release has the switch (so the command runs the runner
    sized, whatever vLLM would pick for the model)."""
    env = []
    if version.estimates_cudagraphs_by_default and estimate_asked is False:
        env.append(f"{CUDAGRAPH_SWITCH}=0")
    if runner_asked is not None and version.has_runner_switch:
        env.append(f"{RUNNER_SWITCH}={1 if runner_asked == V2_RUNNER else 0}")
    return tuple(env)


def rules_words(version: VllmVersion, runner: str, inside: bool, estimate_asked: bool | None,
                runner_asked: str | None) -> str:
    """Which memory the release pays inside gpu_memory_utilization for the runner sized, in words, and the
    utilization it takes when none is given."""
    values = {"version": version.text, "switch": CUDAGRAPH_SWITCH, "runner_switch": RUNNER_SWITCH}
    if version.context_inside:
        words = gettext(
            "vLLM %(version)s (0.8.0 to 0.9.1): the CUDA context is paid inside gpu_memory_utilization, the "
            "CUDA graphs outside it.") % values
    elif not version.estimates_cudagraphs_by_default:
        words = gettext(
            "vLLM %(version)s (0.9.2 to 0.19): the CUDA context and the CUDA graphs live outside "
            "gpu_memory_utilization.") % values
    elif estimate_asked is False:
        words = gettext(
            "vLLM %(version)s with %(switch)s=0: the CUDA context and the CUDA graphs live outside "
            "gpu_memory_utilization.") % values
    elif inside and version.v2_estimates_cudagraphs:
        words = gettext(
            "vLLM %(version)s (0.29 on, the V2 model runner for every model): the CUDA graphs' estimate is "
            "paid inside gpu_memory_utilization, the CUDA context outside it; %(switch)s=0 leaves the graphs "
            "outside.") % values
    elif inside:
        words = gettext(
            "vLLM %(version)s (0.20 to 0.28, the V1 model runner): the CUDA graphs' estimate is paid inside "
            "gpu_memory_utilization, the CUDA context outside it; %(switch)s=0 leaves the graphs outside."
        ) % values
        if runner_asked is None and version.has_runner_switch and version.number < V2_DENSE_FROM:
            words += " " + gettext(
                "From 0.22 vLLM picks its V2 model runner for Qwen3 dense models and from 0.23 for Llama and "
                "Mistral ones, whose graphs stay outside the budget before 0.29: model_runner v2 sizes that "
                "(%(runner_switch)s=1).") % values
    elif runner_asked is None:
        words = gettext(
            "vLLM %(version)s (0.25 to 0.28) runs models without a mixture of experts or linear attention on "
            "its V2 model runner, whose CUDA-graph estimate is 0 before 0.29: the CUDA context and the CUDA "
            "graphs live outside gpu_memory_utilization; %(runner_switch)s=0 runs the V1 runner, which pays "
            "their estimate inside.") % values
    else:
        words = gettext(
            "vLLM %(version)s on its V2 model runner (%(runner_switch)s=1), whose CUDA-graph estimate is 0 "
            "before 0.29: the CUDA context and the CUDA graphs live outside gpu_memory_utilization.") % values
    return words + " " + gettext(
        "Left unset, gpu_memory_utilization is %(utilization)s in vLLM %(version)s.") % {
        "utilization": general_number(version.default_utilization), "version": version.text}


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
    model_runner: str | None = None  # "v1" or "v2"; None: the release's choice for the model (`runner_for`)

    @property
    def utilization(self) -> Fraction:
        """The gpu_memory_utilization sized where none is asked: the release's default."""
        return self.version.default_utilization

    def settings(self) -> dict[str, object]:
        """The `VllmSettings` fields this release sets."""
        return {"version": self.version, "cudagraph_estimate": self.cudagraph_estimate,
                "skip_vision_tower": self.skip_vision_tower, "model_runner": self.model_runner,
                "interconnect": self.interconnect or DEFAULT_INTERCONNECT}


DEFAULT_RELEASE = VllmRelease()
