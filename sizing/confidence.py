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
from .i18n import TranslatedWords, format_number, gettext, gettext_noop
from .offers import MachineOffer
from .units import percent_text
from .wording import memory_flag_words

HIGH, MEDIUM, LOW = "high", "medium", "low"
# The levels are codes in the API; these are their words.
CONFIDENCE_WORDS = TranslatedWords(
    {HIGH: gettext_noop("high"), MEDIUM: gettext_noop("medium"), LOW: gettext_noop("low")}
)

# Workloads whose need depends on settings the calculation can only assume: a reason for low.
SETTINGS_BOUND = {
    "image": gettext_noop(
        "image generation: memory grows with resolution, batch size and pipeline settings; "
        "the margin covers one image at the model's native resolution"
    ),
    "finetune": gettext_noop(
        "fine-tuning: memory depends on the training script's settings (sequence packing, "
        "checkpointing, optimizer), which the calculation can only assume"
    ),
}


def confidence(breakdown: Breakdown, offer: MachineOffer, fit: Fit) -> tuple[str, list[str]]:
    """The confidence level and every reason behind it (rule in the module docstring)."""
    medium: list[str] = []
    low: list[str] = []
    settings_bound = {breakdown.workload, breakdown.confidence_hint}
    low.extend(gettext(words) for code, words in SETTINGS_BOUND.items() if code in settings_bound)
    takes_memory = breakdown.capabilities is not None and breakdown.capabilities.takes_memory
    if not takes_memory and breakdown.precision in (8, 4):
        medium.append(gettext(
            "%(bits)s-bit weights: quantized, so the real footprint depends on the quantization format"
        ) % {"bits": breakdown.precision})
    if fit.gpus_used > 1:
        medium.append(gettext(
            "split over %(gpus)s GPUs: the communication buffers tensor parallelism adds on each GPU are an "
            "estimate, not measured on this machine"
        ) % {"gpus": format_number(fit.gpus_used)})
    source = offer.memory_source
    if source == "host":
        medium.append(gettext("memory reported by the host, not checked by Node Lodge"))
    elif source == "datasheet":
        medium.append(gettext("memory from the manufacturer's datasheet, not measured at the datacenter"))
    elif source != "datacenter":
        medium.append(gettext("the source of the memory figure is not recorded"))
    if fit.tight:
        medium.append(gettext(
            "tight margin: %(percent)s of the GPU's memory stays free (tight means under %(tight)s)"
        ) % {"percent": percent_text(fit.headroom_fraction), "tight": percent_text(TIGHT_HEADROOM_FRACTION)})
    if offer.memory_flag:
        flag = memory_flag_words(offer.memory_flag)
        low.append(gettext("the host's memory figure is in doubt: %(flag)s") % {"flag": flag})
    if len(medium) >= 2:
        low.append(gettext("%(count)s reasons for medium together make it low") % {"count": len(medium)})

    if low:
        return LOW, low + medium
    if medium:
        return MEDIUM, medium
    if takes_memory:
        return HIGH, [
            gettext("the need is the figure you entered; datacenter memory figure, one GPU, ample headroom")
        ]
    if breakdown.precision:
        return HIGH, [
            gettext("%(bits)s-bit weights, datacenter memory figure, one GPU, ample headroom")
            % {"bits": breakdown.precision}
        ]
    return HIGH, [gettext("datacenter memory figure, one GPU, ample headroom")]
