"""The machine list's sorts, filters and grouping, as a query names them.

Every sort ends with the engine's own order (hourly price, price per GPU-hour, provider, machine id,
our id), so any sort is total and deterministic. Adding a sort is one line here.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.utils.translation import gettext_lazy as _

from sizing.matching import SORT_PRICE_PER_MILLION
from sizing.preferences import order_key
from sizing.results import RecommendedMachine

if TYPE_CHECKING:
    from django_stubs_ext import StrPromise

CONFIDENCE_RANK = {"high": 0, "medium": 1, "low": 2}


def _engine_order(machine: RecommendedMachine) -> tuple:
    return order_key(machine.hourly_price, machine.offer)


@dataclass(frozen=True)
class Sort:
    label: StrPromise  # what the page says the list is sorted by (translated when read)
    key: Callable[[RecommendedMachine], tuple]


SORTS: dict[str, Sort] = {
    "price": Sort(_("cheapest first (price per hour)"), lambda m: ()),
    "price_per_gpu": Sort(_("price per GPU-hour, lowest first"), lambda m: (m.offer.price_per_gpu_hour,)),
    "memory": Sort(_("memory per GPU, most first"), lambda m: (-m.fit.memory_per_gpu_bytes,)),
    "gpu": Sort(_("GPU model, A to Z"), lambda m: (m.offer.gpu_type.casefold(),)),
    "location": Sort(_("location (country), A to Z"), lambda m: (m.offer.country or "~",)),
    "tier": Sort(_("tier, Secure first"), lambda m: (m.offer.tier != "secure",)),
    "confidence": Sort(_("confidence, highest first"), lambda m: (CONFIDENCE_RANK.get(m.confidence, 9),)),
    # As the feed reports it, never estimated: machines whose feed reports none come last, cheapest first.
    "reliability": Sort(
        _("reliability, highest first (not reported last)"),
        lambda m: (m.offer.reliability is None, -(m.offer.reliability or 0)),
    ),
    # Requests the machine holds at the asked context per dollar per hour; machines without the figure last.
    "requests_per_dollar": Sort(
        _("most requests per dollar (at the asked context)"),
        lambda m: (m.requests_per_dollar is None, -(m.requests_per_dollar or 0)),
    ),
    # Measured speeds only, never an estimate: machines without one, or whose answer keeps layers on the
    # CPU (`sizing.describing.speeds_price_the_answer`), come last, cheapest per hour.
    SORT_PRICE_PER_MILLION: Sort(
        _("price per million tokens, lowest first (no measured speed last)"),
        lambda m: (m.price_per_million_tokens is None, m.price_per_million_tokens or 0),
    ),
}
DEFAULT_SORT = "price"
SORT_CHOICES = [(code, sort.label) for code, sort in SORTS.items()]
GROUPS = [("", _("No grouping")), ("gpu", _("GPU model"))]
CONFIDENCE_FILTERS = [("", _("Any confidence")), ("medium", _("Medium or high")), ("high", _("High only"))]


def sort_key(code: str) -> Callable[[RecommendedMachine], tuple]:
    """The full key of a sort: its own key, then the engine's order."""
    own = SORTS[code].key
    return lambda machine: (*own(machine), *_engine_order(machine))
