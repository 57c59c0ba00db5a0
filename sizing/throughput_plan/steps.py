"""A plan's words: the documentation's GPU-count formula filled in with each machine's own measured
speed. Figures are written by `sizing.units.figure_text`, the one rounding of shown figures."""
from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING

from ..i18n import gettext, ngettext
from ..units import figure_text

if TYPE_CHECKING:
    from .plans import PlanPart


def plan_steps(parts: Sequence[PlanPart], target: Fraction, efficiency: Fraction, usable: Fraction,
               productive: int, spare: int) -> tuple[str, ...]:
    """The documentation's formula filled in with each machine's own measured speed."""
    written: dict[Fraction, str] = {}

    # machines share speeds: each figure is written (in the language) once
    def figure(number: Fraction | Decimal | int) -> str:
        value = Fraction(number)
        if value not in written:
            written[value] = figure_text(value)
        return written[value]

    steps = []
    productive_parts = [p for p in parts if p.productive_copies]
    speeds = {p.candidate.tokens_per_s_per_gpu for p in productive_parts}
    one_gpu_copies = all(p.candidate.gpus_per_copy == 1 for p in productive_parts)
    for part in parts:
        candidate = part.candidate
        per_gpu = candidate.tokens_per_s_per_gpu
        if part.productive_copies:
            gpus = part.productive_copies * candidate.gpus_per_copy
            steps.append(
                ngettext(
                    "Usable per GPU on %(machine)s = %(measured)s tokens/s measured × %(efficiency)s %% = "
                    "%(usable)s tokens/s; %(gpus)s GPU gives %(total)s tokens/s",
                    "Usable per GPU on %(machine)s = %(measured)s tokens/s measured × %(efficiency)s %% = "
                    "%(usable)s tokens/s; %(gpus)s GPUs give %(total)s tokens/s",
                    gpus,
                ) % {
                    "machine": candidate.name, "measured": figure(per_gpu), "efficiency": figure(efficiency),
                    "usable": figure(per_gpu * efficiency / 100), "gpus": gpus,
                    "total": figure(gpus * per_gpu * efficiency / 100),
                }
            )
    if len(speeds) == 1 and one_gpu_copies:
        (per_gpu,) = speeds
        usable_per_gpu = per_gpu * efficiency / 100
        steps.append(
            gettext("Productive GPUs = ceil(%(target)s ÷ %(usable)s) = %(productive)s")
            % {"target": figure(target), "usable": figure(usable_per_gpu), "productive": productive}
        )
    else:
        steps.append(
            gettext("Productive GPUs = %(productive)s: together %(usable)s tokens/s ≥ %(target)s tokens/s")
            % {"productive": productive, "usable": figure(usable), "target": figure(target)}
        )
    spares = [
        gettext("%(gpus)s on %(machine)s") % {
            "gpus": part.spare_copies * part.candidate.gpus_per_copy, "machine": part.candidate.name
        }
        for part in parts
        if part.spare_copies
    ]
    if spares:
        steps.append(
            gettext(
                "Redundancy GPUs = %(spares)s: spare copies as fast as any productive one, so the "
                "target holds when one fails"
            ) % {"spares": ", ".join(spares)}
        )
    steps.append(
        gettext("Total GPUs = %(productive)s productive + %(redundancy)s redundancy = %(total)s")
        % {"productive": productive, "redundancy": spare, "total": productive + spare}
    )
    return tuple(steps)
