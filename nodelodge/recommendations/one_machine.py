"""One machine of an answer, described as the answer describes it: a machine's own page (and the part
the result panel loads when a row's details are opened) shows the row the answer wrote for it, from the
query alone, without computing the answer again.

The machine goes through the engine's own door (`sizing.matching.recommend`) alone: the availability
rule, its fit, its price in the market the preferences let in, the preferences it breaks and its words
are those of the answer's row (the answer's `Describer`), and one machine is read whatever the fleet's
size (its columns and its measured speeds: two statements). A machine the answer would not list now
(unavailable, too small) is said so with the reason the answer counts it under.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from catalog import database
from catalog import rows as catalog_rows
from catalog.models import Machine
from sizing import i18n
from sizing.breakdown import Breakdown
from sizing.matching import recommend
from sizing.offers import MachineOffer
from sizing.reasons import reason_words
from sizing.results import RecommendedMachine

from .estimate import estimate_for
from .fleet import preferences_for, stale_after_minutes
from .query import WorkloadQuery


@dataclass(frozen=True)
class MachineAnswer:
    """A machine under a query: its row where the answer lists it (`machine`, an alternative's where it
    breaks a preference), else why not (`reason`, in words)."""

    query: WorkloadQuery
    breakdown: Breakdown
    model: object | None
    offer: MachineOffer
    machine: RecommendedMachine | None
    reason: str | None = None

    @property
    def alternative(self) -> bool:
        """Listed among the alternatives: it breaks a preference (its row names which)."""
        return self.machine is not None and bool(self.machine.breaks)


def machine_answer(query: WorkloadQuery, machine_id: int, *, model_row=None,
                   now: datetime | None = None) -> MachineAnswer | None:
    """The machine `machine_id` under `query`, as the answer describes it; None where there is no such
    machine in the fleet (unknown, or gone from its provider's feed). Raises QueryError where the query
    cannot be sized (as the answer does)."""
    now = now or timezone.now()
    with database.one_snapshot(), i18n.words_remembered():
        breakdown, model_row = estimate_for(query, model_row=model_row)
        found = catalog_rows.machine_offers(Machine.objects.filter(pk=machine_id))
        if not found or found[0].gone:
            return None
        offer = found[0]
        recommendation = recommend(breakdown, [offer], preferences_for(query), now=now,
                                   stale_after_minutes=stale_after_minutes(), machines_shown=1)
    shown = (*recommendation.machines, *recommendation.alternatives)
    if shown:
        return MachineAnswer(query, breakdown, model_row, offer, shown[0])
    # Counted under the first reason the answer would count it under (the availability rule's, or too
    # small): the one machine is counted once.
    reason = next((reason for reason, count in recommendation.excluded.items() if count), None)
    return MachineAnswer(query, breakdown, model_row, offer, None, reason_words(reason) if reason else None)


def id_in_address(text: str | None, digits: int = 18) -> int | None:
    """A whole number an address names (a machine's id, a row's GPUs): ASCII digits, at least 1; None
    for anything else."""
    if not text or len(text) > digits or not (text.isascii() and text.isdigit()):
        return None
    return int(text) or None
