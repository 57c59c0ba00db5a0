"""A notebook (SPEC §3): the GPU memory asked for is the need, with nothing added."""
from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

from ..breakdown import Breakdown, Item
from ..errors import SizingError
from ..i18n import gettext
from ..limits import MAX_NOTEBOOK_GIB
from ..units import GIB, fmt_gib, fmt_int, general_number


def estimate_notebook(memory_gib: float) -> Breakdown:
    if isinstance(memory_gib, bool) or not isinstance(memory_gib, int | float | Decimal):
        raise SizingError("memory_gib", gettext("Enter the GPU memory as a number of GiB."))
    if (isinstance(memory_gib, Decimal) and not memory_gib.is_finite()) or not math.isfinite(memory_gib):
        raise SizingError("memory_gib", gettext("Enter the GPU memory as a finite number of GiB."))
    if memory_gib <= 0:
        raise SizingError("memory_gib", gettext("The GPU memory must be more than 0 GiB."))
    if memory_gib > MAX_NOTEBOOK_GIB:
        raise SizingError(
            "memory_gib", gettext("The GPU memory may be at most %(maximum)s GiB.") % {
                "maximum": fmt_int(MAX_NOTEBOOK_GIB)
            }
        )
    requested_bytes = math.ceil(Fraction(memory_gib) * GIB)
    return Breakdown(
        workload="notebook",
        title=gettext("Notebook, %(memory)s of GPU memory") % {"memory": fmt_gib(requested_bytes)},
        items=(
            Item(
                gettext("Requested GPU memory"),
                gettext("%(memory)s GiB × 2^30 bytes") % {"memory": general_number(memory_gib)},
                requested_bytes,
            ),
        ),
        assumptions=(
            gettext(
                "The memory you entered is the need: no safety margin or runtime is added, since you sized "
                "it yourself."
            ),
            gettext("A notebook is placed on one GPU."),
        ),
        precision=None,
        splittable_over_heads=None,
        inputs={"memory_gib": memory_gib},
    )

