"""The vLLM release a query asks for (`engine_version`, `cudagraph_estimate`, `skip_vision_tower`,
`model_runner`) and what the GPUs of a split are connected by (`interconnect`), read and checked by one rule
for the wizard's query (page, /estimate, /recommendations, `estimate`, `recommend`, watches) and the GPU
what-if (`/api/v1/capacity`): the release by `sizing.calculators.vllm_versions`, the switches by the release,
the vision tower and the runner's fit to the model where the model is sized
(`sizing.calculators.vllm.check_settings`)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.utils.translation import gettext

from sizing.calculators.vllm_interconnect import check_interconnect
from sizing.calculators.vllm_versions import (
    DEFAULT_RELEASE,
    VllmRelease,
    VllmVersion,
    cudagraph_estimate_for,
    parse_version,
    runner_asked_for,
)
from sizing.errors import SizingError

from .parameters import VLLM_RELEASE_INPUTS

ON_OFF = {"on": True, "off": False}


def read_release(values: Mapping[str, Any]) -> VllmRelease:
    """The release asked in `values` (the form's or the command's text: empty engine_version is the current
    stable release; cudagraph_estimate and skip_vision_tower "on", "off" or empty; model_runner "v1", "v2" or
    empty; interconnect one of `vllm_interconnect.INTERCONNECTS` or empty, not said); SizingError naming the
    field where the version is not one whose budget is known or the release has no such switch (what depends
    on the model is checked where it is sized)."""
    version = values.get("engine_version")
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
    """Reads the release into `cleaned_data["engine_version"]` (`read_release`), each refusal beside its
    field (a bad value: 400)."""
    cleaned = form.cleaned_data
    if "engine_version" not in cleaned:  # its own field was refused
        return
    try:
        cleaned["engine_version"] = read_release(cleaned).version
    except SizingError as error:
        form.add_error(error.field, error.message)


def release_refusals(engine: str | None, asked: Mapping[str, Any]) -> dict[str, str]:
    """The release's inputs named with an engine other than vLLM, by field: said, never silently ignored
    (values each valid alone that do not go together: 422)."""
    if engine == "vllm":
        return {}
    return {
        name: gettext("%(name)s is read by vLLM only: choose the engine vllm, or leave it empty.") % {
            "name": name}
        for name in VLLM_RELEASE_INPUTS if asked.get(name) not in (None, "")
    }


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
