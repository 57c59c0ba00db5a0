"""One wizard query as the counting statements see it (`FleetQuery`): what `catalog.counting.fleet`
counts, `catalog.counting.fleet_machines` fetches and `catalog.counting.countries` counts per country.
Its own module, so the modules that read it need not import one another."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from sizing.kinds import NO_KINDS, KindSpace
from sizing.markets import DEFAULT_MARKET


@dataclass(frozen=True)
class FleetQuery:
    """One wizard query as the database sees it. `fits` holds one entry per precision considered:
    the chosen one first, then lower ones; each is `fit_thresholds` of that precision's breakdown."""

    stale_cutoff: datetime
    countries: frozenset[str] | None
    fits: tuple[tuple[tuple[int, int], ...], ...]
    tier: str  # "secure", "community" or "both"
    max_price_per_hour: Decimal | None
    budget: Decimal | None
    machines_shown: int
    alternatives_shown: int
    lower_shown: int = 1  # machines fetched per lower precision (the cheapest; 0 for counts alone)
    min_reliability: Decimal | None = None  # 0 to 1, two places; None: any
    # The markets a machine's price may come from (`sizing.markets.MARKET_CHOICES`): the counts and the
    # walks read each machine's price under this choice.
    market: str = DEFAULT_MARKET
    # The kinds of GPU `fits` tell apart (`sizing.fit.by_kind`: each machine read at its memory raised by
    # its kind, `catalog.counting.gpu_kinds`; none: plain); every entry is then in that space
    # (`sizing.fit.thresholds_alike`).
    by_kind: KindSpace = NO_KINDS
