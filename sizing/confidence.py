"""Confidence (SPEC §5): high, medium or low, with every reason shown.

Start at high. Each of these is a reason for *medium*: quantized weights (8-bit or 4-bit); the model
split over several GPUs; GPU memory reported by the host, or taken from the manufacturer's datasheet
rather than the datacenter; a tight margin. Each of these is a reason for *low*: the host's memory
figure is flagged as doubtful; image generation or fine-tuning (their memory depends on settings the
calculation cannot see); two or more reasons for medium together. The level is the lowest any reason
gives. A notebook's need is the figure the user entered, so precision does not apply; speech
recognition follows the language-model rule.
"""
from __future__ import annotations

from .breakdown import Breakdown
from .fit import TIGHT_HEADROOM_FRACTION, Fit
from .offers import MachineOffer
from .wording import percent

HIGH, MEDIUM, LOW = "high", "medium", "low"


def confidence(breakdown: Breakdown, offer: MachineOffer, fit: Fit) -> tuple[str, list[str]]:
    """The confidence level and every reason behind it (rule in the module docstring)."""
    medium: list[str] = []
    low: list[str] = []
    workload = breakdown.workload
    settings_bound = {workload, breakdown.confidence_hint}
    if "image" in settings_bound:
        low.append(
            "image generation: memory grows with resolution, batch size and pipeline settings; "
            "the margin covers one image at the model's native resolution"
        )
    if "finetune" in settings_bound:
        low.append(
            "fine-tuning: memory depends on the training script's settings (sequence packing, "
            "checkpointing, optimizer), which the calculation can only assume"
        )
    if workload != "notebook" and breakdown.precision in (8, 4):
        medium.append(
            f"{breakdown.precision}-bit weights: quantized, so the real footprint depends on "
            "the quantization format"
        )
    if fit.gpus_used > 1:
        medium.append(
            f"split over {fit.gpus_used} GPUs: the communication buffers tensor parallelism adds "
            "on each GPU are an estimate, not measured on this machine"
        )
    source = offer.memory_source
    if source == "host":
        medium.append("memory reported by the host, not checked by Node Lodge")
    elif source == "datasheet":
        medium.append("memory from the manufacturer's datasheet, not measured at the datacenter")
    elif source != "datacenter":
        medium.append("the source of the memory figure is not recorded")
    if fit.tight:
        medium.append(
            f"tight margin: {percent(fit.headroom_fraction)} of the GPU's memory stays free "
            f"(tight means under {percent(TIGHT_HEADROOM_FRACTION)})"
        )
    if offer.memory_flag:
        low.append(f"the host's memory figure is in doubt: {offer.memory_flag}")
    if len(medium) >= 2:
        low.append(f"{len(medium)} reasons for medium together make it low")

    if low:
        return LOW, low + medium
    if medium:
        return MEDIUM, medium
    if workload == "notebook":
        return HIGH, ["the need is the figure you entered; datacenter memory figure, one GPU, ample headroom"]
    bits = f"{breakdown.precision}-bit weights, " if breakdown.precision else ""
    return HIGH, [f"{bits}datacenter memory figure, one GPU, ample headroom"]
