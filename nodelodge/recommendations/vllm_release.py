"""The vLLM release a query asks for (`engine_version`, `cudagraph_estimate`, `skip_vision_tower`,
`model_runner`), what the GPUs of a split are connected by (`interconnect`) and, under engine=llamacpp, the
llama.cpp build or, under engine=ollama, Ollama's release (`engine_version` there), read and checked by one
rule for the wizard's query (page, /estimate, /recommendations, `estimate`, `recommend`, watches) and the
GPU what-if (`/api/v1/capacity`): the release by `sizing.calculators.vllm_versions`, the switches by the
release, the vision tower and the runner's fit to the model where the model is sized
(`sizing.calculators.vllm.check_settings`), the build and Ollama's release by
`sizing.calculators.llamacpp_builds`."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django import forms
from django.utils.translation import gettext

from sizing.calculators.llamacpp_builds import (
    BUILD_PATTERN,
    LLAMACPP,
    OLLAMA,
    OLLAMA_PATTERN,
    LlamaCppBuild,
    build_for,
    parse_engine_build,
)
from sizing.calculators.vllm_interconnect import check_interconnect
from sizing.calculators.vllm_versions import (
    DEFAULT_RELEASE,
    VllmRelease,
    VllmVersion,
    cudagraph_estimate_for,
    known_release_pattern,
    parse_version,
    runner_asked_for,
)
from sizing.errors import SizingError

from .messages import CONFLICT
from .parameters import VLLM_RELEASE_INPUTS

ON_OFF = {"on": True, "off": False}
VLLM = "vllm"
# The engines that read engine_version: vLLM's release, llama.cpp's build, Ollama's release.
VERSIONED_ENGINES = (VLLM, LLAMACPP, OLLAMA)


def engine_version_pattern() -> str:
    """What engine_version takes under some engine (or empty: the default), as a regular expression: a vLLM
    release whose rules are known, a llama.cpp build or an Ollama release. The API's schema states it; a
    value it allows that the chosen engine does not read (a vLLM release past the known ones has the form of
    an Ollama release) is a conflict (422), one it does not allow a bad value (400)."""
    return rf"{known_release_pattern()}|^{BUILD_PATTERN}$|^{OLLAMA_PATTERN}$"


def read_build(values: Mapping[str, Any]) -> LlamaCppBuild:
    """The llama.cpp build asked in `values` under engine=llamacpp, or Ollama's release under engine=ollama
    (empty engine_version: not given); not given under any other engine. SizingError naming engine_version
    where it is not one."""
    engine, build = values.get("engine") or "", values.get("engine_version")
    if isinstance(build, LlamaCppBuild):
        return build_for(engine, build)
    return parse_engine_build(engine, build)


def read_release(values: Mapping[str, Any]) -> VllmRelease:
    """The release asked in `values` (the form's or the command's text: empty engine_version is the current
    stable release; cudagraph_estimate and skip_vision_tower "on", "off" or empty; model_runner "v1", "v2" or
    empty; interconnect one of `vllm_interconnect.INTERCONNECTS` or empty, not said); SizingError naming the
    field where the version is not one whose budget is known or the release has no such switch (what depends
    on the model is checked where it is sized). Under another engine the release is the current stable one:
    engine_version is llama.cpp's build or Ollama's release (`read_build`), or refused
    (`release_refusals`)."""
    version = values.get("engine_version") if values.get("engine", VLLM) == VLLM else None
    version = version if isinstance(version, VllmVersion) else parse_version(version)
    asked = values.get("cudagraph_estimate") or ""
    graphs = ON_OFF.get(asked)
    cudagraph_estimate_for(version, graphs)
    runner = runner_asked_for(version, values.get("model_runner") or None)
    interconnect = values.get("interconnect") or None
    if interconnect is not None:
        check_interconnect(interconnect)
    return VllmRelease(version=version, cudagraph_estimate=graphs,
                       skip_vision_tower=values.get("skip_vision_tower") == "on", model_runner=runner,
                       interconnect=interconnect)


def clean_release(form: forms.Form) -> None:
    """Reads the release, or under engine=llamacpp the build and under engine=ollama Ollama's release, into
    `cleaned_data["engine_version"]` (`read_release`, `read_build`), each refusal beside its field: a bad
    value 400, an engine_version of the form another engine reads (`engine_version_pattern`) a conflict,
    422."""
    cleaned = form.cleaned_data
    if "engine_version" not in cleaned:  # its own field was refused
        return
    asked = cleaned["engine_version"]
    try:
        release = read_release(cleaned)
        build = read_build(cleaned)
        cleaned["engine_version"] = build if cleaned.get("engine") in (LLAMACPP, OLLAMA) else release.version
    except SizingError as error:
        another_engines = (error.field == "engine_version" and isinstance(asked, str)
                           and re.fullmatch(engine_version_pattern(), asked.strip()) is not None)
        form.add_error(error.field, forms.ValidationError(error.message, code=CONFLICT if another_engines
                                                          else None))


def release_refusals(engine: str | None, asked: Mapping[str, Any]) -> dict[str, str]:
    """The release's inputs named with an engine other than vLLM (engine_version with an engine other than
    vLLM, llama.cpp and Ollama), by field: said, never silently ignored (values each valid alone that do not
    go together: 422)."""
    if engine == VLLM:
        return {}
    refusals = {}
    for name in VLLM_RELEASE_INPUTS:
        if asked.get(name) in (None, ""):
            continue
        if name != "engine_version":
            refusals[name] = gettext(
                "%(name)s is read by vLLM only: choose the engine vllm, or leave it empty.") % {"name": name}
        elif engine not in VERSIONED_ENGINES:
            refusals[name] = gettext(
                "engine_version is read by vLLM (its release), llama.cpp (its build) and Ollama (its "
                "version) only: choose the engine vllm, llamacpp or ollama, or leave it empty.")
    return refusals


def build_params(build: LlamaCppBuild) -> dict[str, str]:
    """The query-string values that ask for `build`, a llama.cpp build or Ollama's release (not given:
    none)."""
    return {"engine_version": build.text} if build.given else {}


def release_params(release: VllmRelease) -> dict[str, str]:
    """The query-string values that ask for `release` (the defaults left out)."""
    params = {}
    if release.version != DEFAULT_RELEASE.version:
        params["engine_version"] = release.version.text
    if release.cudagraph_estimate is not None:
        params["cudagraph_estimate"] = "on" if release.cudagraph_estimate else "off"
    if release.skip_vision_tower:
        params["skip_vision_tower"] = "on"
    if release.interconnect:
        params["interconnect"] = release.interconnect
    if release.model_runner is not None:
        params["model_runner"] = release.model_runner
    return params
