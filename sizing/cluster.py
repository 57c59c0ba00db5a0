"""Clusters: one model served by several identical machines at one site (tensor parallel within a
machine, pipeline parallel across machines).

The values the planner works on. The catalog turns its rows into `ClusterSite`s (catalog/clusters.py);
the planner (`plan_clusters`) sizes each site's smallest cluster that holds the workload.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

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


@dataclass(frozen=True)
class ClusterMachine:
    """One machine a cluster may take: every one of its GPUs is free."""

    id: int
    provider_machine_id: str
    price_per_hour: Decimal  # all its GPUs
    booking_limit_hours: int | None = None


@dataclass(frozen=True)
class ClusterSite:
    """Identical machines of one provider at one site that may form a cluster, cheapest first
    (price per hour, then id)."""

    provider: str
    site: str
    country: str | None
    region: str
    gpu_type: str
    gpu_count: int  # GPUs per machine
    memory_per_gpu_mib: int  # as the machine reports it (nvidia-smi's total)
    interconnect: str
    interconnect_gbps: int
    machines: tuple[ClusterMachine, ...]
