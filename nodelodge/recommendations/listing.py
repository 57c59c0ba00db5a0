"""The machine list of an answer: which of the fitting machines to describe, and the page of them
to show after the result's sort, filters and grouping."""
from __future__ import annotations

import math
from dataclasses import dataclass

from django.utils.formats import number_format
from django.utils.translation import gettext

from sizing.limits import MAX_LIMIT
from sizing.matching import SORT_PRICE_PER_MILLION, Recommendation
from sizing.units import GIB

from .query import NotFound, WorkloadQuery
from .sorts import CONFIDENCE_RANK, SORTS, sort_key

# A sorted, filtered or grouped list is worked out over the cheapest machines that fit, up to this many.
BROWSE_LIMIT = MAX_LIMIT
# Pages reach the cheapest machines that fit, up to this many, in any order: a page past them is
# refused before anything is computed, so every page costs about the same (at most this many
# machines described). 1,000 is 40 pages of the page's 25 and 10 of the API's 100.
PAGE_WINDOW = MAX_LIMIT
CONFIDENCE_AT_LEAST = {"high": 0, "medium": 1}


@dataclass(frozen=True)
class Listing:
    """The machine list as shown: one page of the fitting machines after the result's filters, in
    the chosen order, with the groups' counts."""

    sort: str
    sort_label: str
    page: int
    pages: int
    per_page: int
    matching: int  # machines that fit, meet every preference and pass the list's filters
    browsed: int | None  # when sorting or filtering: the cheapest machines that were looked at
    groups: tuple[tuple[str, int], ...]  # (GPU model, machines) when grouped by GPU model
    gpu_types: tuple[str, ...]  # the GPU models among the machines looked at (the filter's choices)

    def to_dict(self) -> dict:
        return {
            "sort": self.sort,
            "sort_label": self.sort_label,
            "page": self.page,
            "pages": self.pages,
            "per_page": self.per_page,
            "machines_matching": self.matching,
            "sorted_among_cheapest": self.browsed,
            "groups": [{"gpu_type": name, "machines": count} for name, count in self.groups],
        }


def passes_filters(query: WorkloadQuery, machine) -> bool:
    if query.gpu and machine.offer.gpu_type.casefold() != query.gpu.casefold():
        return False
    if query.min_memory_gib is not None and machine.fit.memory_per_gpu_bytes < query.min_memory_gib * GIB:
        return False
    if query.confidence:
        return CONFIDENCE_RANK.get(machine.confidence, 9) <= CONFIDENCE_AT_LEAST[query.confidence]
    return True


def machines_to_fetch(query: WorkloadQuery, per_page: int) -> int:
    """How many of the cheapest fitting machines the answer needs described."""
    if query.lists_by_default:
        return per_page * query.page
    if query.sort == SORT_PRICE_PER_MILLION and not query.filtered and not query.group:
        # The engine orders by price per million tokens itself, and the machines with the lowest
        # join the fetched ones (`recommendation_for`): the page needs no more than it shows.
        return per_page * query.page
    return max(BROWSE_LIMIT, per_page * query.page)


def last_page(per_page: int) -> int:
    """The last page the window reaches with `per_page` machines a page."""
    return max(1, math.ceil(PAGE_WINDOW / per_page))


def cost_in_first_pages(page: int, per_page: int, first_page: int) -> int:
    """What one page of the list costs the console, counted in first pages of `first_page` machines:
    the answer describes the cheapest page × per_page machines to reach it (`machines_to_fetch`). A
    page past the window is refused before any work: it costs one. The per-address rate limits count
    requests at this weight, so a client looping on page 40 is held to what 40 first pages cost."""
    if page > last_page(per_page):
        return 1
    return max(1, math.ceil(page * per_page / first_page))


class PageOutsideWindow(NotFound):
    """A page past the window: no such page of the list (the API answers 404, the page shows why)."""


def check_page_in_window(page: int, per_page: int) -> None:
    """Refuses, before any work, a page past the cheapest PAGE_WINDOW machines."""
    if page > last_page(per_page):
        raise PageOutsideWindow({"page": gettext(
            "The list reaches the cheapest %(window)s machines: with %(per_page)s per page, pages 1 "
            "to %(last)s. Narrow the search or sort it another way to see others."
        ) % {"window": number_format(PAGE_WINDOW, force_grouping=True), "per_page": per_page,
             "last": last_page(per_page)}})


def list_machines(query: WorkloadQuery, recommendation: Recommendation, per_page: int):
    """The page of machines to show and the listing that describes it. The default list is the
    engine's own order; any other sort, a filter or grouping works over the machines fetched."""
    fetched = list(recommendation.machines)
    if query.lists_by_default:
        chosen, matching, browsed = fetched, recommendation.machines_total, None
    else:
        chosen = sorted((m for m in fetched if passes_filters(query, m)), key=sort_key(query.sort))
        matching = len(chosen)
        browsed = len(fetched) if recommendation.machines_total > len(fetched) else None
    counts: dict[str, int] = {}
    for machine in chosen:
        counts[machine.offer.gpu_type] = counts.get(machine.offer.gpu_type, 0) + 1
    groups: tuple[tuple[str, int], ...] = ()
    if query.group == "gpu":
        place = {name: index for index, name in enumerate(counts)}  # groups in the order of their first
        chosen = sorted(chosen, key=lambda m: place[m.offer.gpu_type])  # stable: the sort within
        groups = tuple(counts.items())
    pages = max(1, math.ceil(min(matching, PAGE_WINDOW) / per_page))
    page = min(query.page, pages)
    start = (page - 1) * per_page
    shown = tuple(chosen[start:start + per_page])
    listing = Listing(
        sort=query.sort,
        sort_label=str(SORTS[query.sort].label),
        page=page,
        pages=pages,
        per_page=per_page,
        matching=matching,
        browsed=browsed,
        groups=groups,
        gpu_types=tuple(sorted({m.offer.gpu_type for m in fetched}, key=str.casefold)),
    )
    return shown, listing
