"""Which machines may form a cluster, and the sites the planner works on: identical machines of one
provider at one site (tensor parallel within a machine, pipeline parallel across machines).

The catalog turns its rows into `ClusterSite`s (catalog/clusters.py); one cluster is sized in
`sizing.cluster`, the search over sites is `sizing.cluster_search`.
"""
from __future__ import annotations

from decimal import Decimal
from typing import NamedTuple

from .engine_support import GpuArchitecture
from .markets import ON_DEMAND
from .preferences import order_key_of

# The rule for which machines may form a cluster, once: a Secure machine at a named site whose network to
# the others there is RDMA (InfiniBand or RoCE) at this speed or more. Pipeline parallelism sends each
# stage's activations to the next for every token; tensor parallelism across machines is not planned.
CLUSTER_INTERCONNECTS = ("infiniband", "roce")
MIN_CLUSTER_GBPS = 100
CLUSTER_TIER = "secure"


def can_join_cluster(*, tier: str, site: str, interconnect: str, interconnect_gbps: int | None) -> bool:
    """Whether a machine with these facts may be part of a cluster."""
    return (
        tier == CLUSTER_TIER
        and bool(site)
        and interconnect in CLUSTER_INTERCONNECTS
        and (interconnect_gbps or 0) >= MIN_CLUSTER_GBPS
    )


class ClusterMachine(NamedTuple):
    """One machine of a cluster, with what its row and its booking show: the provider's id for it, its
    booking limit and the market its price is in (read for the clusters an answer shows,
    `ClusterPlan.machines`)."""

    id: int
    provider_machine_id: str
    price_per_hour: Decimal  # all its GPUs, in `market`
    booking_limit_hours: int | None = None
    # The market of its price under the market preference (`sizing.markets.priced_in`): on demand, or
    # interruptible (a machine the provider may take back), or reserved.
    market: str = ON_DEMAND


class ClusterSite(NamedTuple):
    """Identical machines of one provider at one site that may form a cluster, cheapest first (price per
    hour, then id): their ids and prices only, which is all a search over a few hundred sites needs. (A
    named tuple, as `ClusterMachine`: an answer makes a few hundred.)"""

    provider: str
    site: str
    country: str | None
    region: str
    gpu_type: str
    gpu_count: int  # GPUs per machine
    memory_per_gpu_mib: int  # as the machine reports it (nvidia-smi's total)
    usable_memory_mib: int  # one GPU's memory as CUDA reports it: the catalog's figure for its GPU type
    interconnect: str
    interconnect_gbps: int
    machine_ids: tuple[int, ...]
    # each machine's, in the order of `machine_ids`: under the market preference, the cheapest of the
    # markets it lets in (`sizing.markets.priced_in`)
    prices_per_gpu_hour: tuple[Decimal, ...]
    # Its GPU type's architecture (`sizing.engine_support.gpu_architecture`; None where the catalog records
    # none): which commands start on it, and which kernel its MXFP4 experts load through
    # (`sizing.calculators.vllm_loading`).
    gpu_architecture: GpuArchitecture | None = None
    # The lowest reliability its machines listed report (None where one reports none): what a minimum
    # reliability compares (`sizing.preferences.RULE`); never assumed.
    reliability: Decimal | None = None

    def price_per_hour(self, machines: int) -> Decimal:
        """What its `machines` cheapest machines cost per hour together, all their GPUs."""
        return sum(self.prices_per_gpu_hour[:machines], Decimal(0)) * self.gpu_count

    @property
    def tier(self) -> str:
        """Every machine of a cluster is of the one tier that may form one: what the tier preference
        compares (`sizing.preferences.RULE`)."""
        return CLUSTER_TIER

    @property
    def place(self) -> tuple[object, ...]:
        """Where it is and what its machines are, its name first: what tells two sites of one provider
        apart in the listing order."""
        return (self.site, self.gpu_type, self.gpu_count, self.memory_per_gpu_mib, self.interconnect,
                self.country or "", self.region)

    def order_key(self, machines: int) -> tuple[object, ...]:
        """Its `machines` cheapest machines' place in the listing order (`sizing.preferences.ORDER`), as
        one machine's would be: `cluster_order_key`."""
        price = self.price_per_hour(machines)
        return cluster_order_key(price, _ClusterOrder(
            price / (machines * self.gpu_count), self.provider, self.place, self.machine_ids[:machines]))


class _ClusterOrder(NamedTuple):
    """What the listing order reads of a cluster besides its hourly price, under the names it reads them
    by (`cluster_order_key`)."""

    price_per_gpu_hour: Decimal  # its hourly price over all its GPUs
    provider: str
    place: tuple[object, ...]
    machine_ids: tuple[int, ...]


# The listing order (`sizing.preferences.ORDER`) of clusters: the hourly price (all their machines), the
# price per GPU-hour, the provider, then the site's place where a machine has the provider's id and the
# machines' ids where it has ours. Total: a site's machines are its own.
cluster_order_key = order_key_of(provider_machine_id="place", id="machine_ids")
