"""What a tensor-parallel split costs each GPU inside vLLM's budget, by what the machine's GPUs are
connected by (issue #43).

Under tensor parallelism vLLM all-reduces every layer's output. Two things hold GPU memory for it outside
PyTorch, and so inside the "memory outside PyTorch" vLLM's profile counts:

- **vLLM's custom all-reduce** (vllm/distributed/device_communicators/custom_all_reduce.py): on at 2, 4, 6
  or 8 GPUs of one machine, only where every GPU can reach the others' memory (CUDA peer-to-peer, checked by
  `_can_p2p`), and beyond two GPUs only where they are fully connected by NVLink ("Custom allreduce is
  disabled because it's not supported on more than two PCIe-only GPUs"). Where on, it allocates
  `meta_size() + max_size` of signal flags and scratch and a registered input buffer of `max_size`, both
  shared by CUDA IPC (`create_shared_buffer`: the peers' buffers are mapped, not copied), and 8 MiB of
  `rank_data` for the CUDA graphs' registered addresses ("Allocating 8MB is enough for 131072 such
  tuples"); `max_size` is 8192 × 1024 bytes. On a GPU without peer access: "Custom allreduce is disabled
  because your platform lacks GPU P2P capability or P2P test failed", and nothing is allocated.
- **NCCL** (vLLM's PyNcclCommunicator for the group, and PyTorch's ProcessGroupNCCL on the same group for
  the collectives vLLM leaves to torch.distributed: two communicators). Each channel holds one connection
  per peer it receives from, and each connection one buffer per protocol (NVIDIA/nccl src/init.cc
  `computeBuffSizes`, src/include/device.h): LL, 8 lines × 512 threads × 8 steps × 16 bytes = 512 KiB;
  LL128, 120 elements × 640 threads × 8 steps × 8 bytes = 4.69 MiB; Simple, 4 MiB (`DEFAULT_BUFFSIZE`).
  Where the GPUs reach each other peer to peer, the P2P transport holds them in GPU memory
  (src/transport/p2p.cc: the receiver allocates LL, LL128 and Simple, or the sender Simple under P2P
  read); where they do not, the SHM transport holds them in shared host memory (src/transport/shm.cc,
  `ncclShmOpen`; device copies only with NCCL_SHM_USE_CUDA_MEMCPY, off by default) and the GPU holds none.
  Over PCIe NCCL's search finds one ring within the link's bandwidth and connect.cc doubles the rings: two
  channels ("Channel 00/02", "Channel 01/02"). Two GPUs receive from one peer; more, in a ring and the
  intra-node tree over the same neighbours, from two.

So the split's cost per GPU by interconnect:

- `nvswitch` (NVLink through NVSwitch, every GPU to every GPU: HGX and DGX machines): vLLM 0.19 logs
  2.06–2.13 GiB of memory outside PyTorch per GPU at 2- and 4-way on H100 against 0.24–0.26 GiB on one
  GPU (catalog/data/reference/vllm_startup_logs.csv and the llm-d planner's logs it comes from): 2 GiB more,
  the figure this class keeps. There everything above is on and larger (custom all-reduce at every size,
  NCCL over NVLink with up to 32 channels, NVLink SHARP beyond two GPUs) and Hopper adds vLLM's own
  NVLink-only buffers (torch symmetric memory, FlashInfer's all-reduce fusion workspace: "Initialized
  FlashInfer All Reduce workspace" in the same logs).
- `pcie_p2p` (PCIe, or an NVLink bridge between a pair, with peer-to-peer): custom all-reduce at two GPUs
  (24 MiB) and NCCL's buffers in GPU memory: 2 communicators × 2 channels × peers × 9.19 MiB.
- `pcie` (PCIe without peer-to-peer: GeForce cards, whose drivers refuse peer access between them): no
  custom all-reduce and NCCL's buffers in host memory: nothing.

Where NCCL connects at start (vLLM's warm-up all-reduce) its buffers sit in the context that releases from
0.9.2 leave outside the budget; they are counted here all the same: a few tens of MiB, over rather than
under.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import SizingError
from ..i18n import gettext, gettext_noop
from ..units import GIB, MIB, fmt_gib, fmt_int

NVSWITCH, PCIE_P2P, PCIE = "nvswitch", "pcie_p2p", "pcie"
INTERCONNECTS = (NVSWITCH, PCIE_P2P, PCIE)
DEFAULT_INTERCONNECT = NVSWITCH  # where not said and no GPU type says otherwise: the H100 machines measured
INTERCONNECT_LABELS = {
    NVSWITCH: gettext_noop("NVLink through NVSwitch, every GPU to every GPU"),
    PCIE_P2P: gettext_noop("PCIe or an NVLink bridge, with peer-to-peer"),
    PCIE: gettext_noop("PCIe without peer-to-peer"),
}

# Measured with GPUs linked through NVSwitch (H100, vLLM 0.19): what the split adds to the memory outside
# PyTorch per GPU, 2.06–2.13 GiB logged at 2- and 4-way against 0.24–0.26 GiB on one GPU.
NVSWITCH_SPLIT_BYTES = 2 * GIB

# vLLM's custom all-reduce (CustomAllreduce): the world sizes it runs at, its max_size, its rank data.
CUSTOM_ALL_REDUCE_SIZES = (2, 4, 6, 8)
CUSTOM_ALL_REDUCE_MAX_SIZE = 8192 * 1024
CUSTOM_ALL_REDUCE_RANK_DATA = 8 * MIB
# meta (flags and max_size of scratch) + the registered input buffer + rank_data; the flags (meta_size(),
# a few KiB) are left out.
CUSTOM_ALL_REDUCE_BYTES = 2 * CUSTOM_ALL_REDUCE_MAX_SIZE + CUSTOM_ALL_REDUCE_RANK_DATA

# NCCL's buffers of one connection, one per protocol (src/include/device.h, src/init.cc).
NCCL_STEPS = 8
NCCL_LL_BYTES = 8 * 512 * NCCL_STEPS * 16  # NCCL_LL_LINES_PER_THREAD × NCCL_LL_MAX_NTHREADS × steps × line
NCCL_LL128_BYTES = 120 * 640 * NCCL_STEPS * 8  # NCCL_LL128_ELEMS_PER_THREAD × NCCL_LL128_MAX_NTHREADS × …
NCCL_SIMPLE_BYTES = 1 << 22  # DEFAULT_BUFFSIZE
NCCL_CONNECTION_BYTES = NCCL_LL_BYTES + NCCL_LL128_BYTES + NCCL_SIMPLE_BYTES
NCCL_PCIE_CHANNELS = 2  # one ring within a PCIe link's bandwidth, doubled by connect.cc
NCCL_COMMUNICATORS = 2  # vLLM's PyNcclCommunicator and PyTorch's ProcessGroupNCCL, on the same group
# Through NVSwitch NCCL's search finds 12 rings between two GPUs (NVLink's bandwidth over 20 GB/s a ring),
# doubled: "24 coll channels" in NCCL's INFO lines on A100 and H100 machines. Both communicators connect at
# start (their warm-up all-reduce), so the CUDA context measured with NVSwitch holds 2 × 24 connections'
# buffers in GPU memory that a machine without NVSwitch does not.
NCCL_NVSWITCH_CHANNELS = 24
NVSWITCH_START_BUFFERS = NCCL_COMMUNICATORS * NCCL_NVSWITCH_CHANNELS * NCCL_CONNECTION_BYTES


def check_interconnect(interconnect: object, field: str = "interconnect") -> str:
    if interconnect not in INTERCONNECTS:
        raise SizingError(field, gettext("Choose the GPUs' interconnect: nvswitch, pcie_p2p or pcie."))
    return str(interconnect)


def interconnect_label(interconnect: str) -> str:
    return gettext(INTERCONNECT_LABELS[interconnect])


# --- what a GPU type's machines are connected by, where the user does not say --------------------------

# GeForce cards (the RTX 3090, 4090, 5090; names as the catalog and the drivers write them): NVIDIA's
# drivers give them no peer access over PCIe, and vLLM logs "Custom allreduce is disabled because your
# platform lacks GPU P2P capability" on them (catalog/data/reference/published_logs_not_handed.csv).
GEFORCE_PATTERN = r"\bgeforce\b|^(?:nvidia\s+)?rtx\s?\d{4}(?:\s?(?:ti|super|d))*$"
# Cards sold only for PCIe slots (data-center and workstation boards; the H100 NVL pairs by NVLink bridge):
# peer-to-peer between them, no NVSwitch.
PCIE_CARD_PATTERN = (
    r"\bpcie\b|\bnvl\b|\b(?:l4|l20|l40s?|t4|a2|a10g?|a16|a30|a40)\b|\brtx\s?a\d{4}\b|\bada\b|\bquadro\b"
    r"|\brtx\s?pro\b")
# The rule, in order, over the name with its surrounding white space trimmed (case aside): the first pattern
# found gives the interconnect, DEFAULT_INTERCONNECT where none is. Written in the regular expressions
# Python and PostgreSQL both read (`\b` aside, PostgreSQL's `\y`): the catalog compiles it into SQL
# (`catalog.counting.gpu_kinds.fabric_sql`), and a test holds the two to it on every GPU type.
INTERCONNECT_RULE = ((GEFORCE_PATTERN, PCIE), (PCIE_CARD_PATTERN, PCIE_P2P))
_RULE = tuple((re.compile(pattern, re.IGNORECASE), found) for pattern, found in INTERCONNECT_RULE)


@lru_cache(maxsize=1024)
def interconnect_of_gpu(gpu_name: str | None) -> str:
    """What a machine of this GPU type has between its GPUs, from the type's name: `pcie` for GeForce
    cards, `pcie_p2p` for cards sold only for PCIe slots, `nvswitch` otherwise (SXM and OAM modules, and
    any type the name does not settle: the figure measured, the larger)."""
    name = (gpu_name or "").strip()
    for pattern, interconnect in _RULE:
        if pattern.search(name):
            return interconnect
    return DEFAULT_INTERCONNECT


# --- the cost ---------------------------------------------------------------------------------------

def custom_all_reduce_on(interconnect: str, tensor_parallel: int) -> bool:
    """Whether vLLM's custom all-reduce runs (and holds its buffers) for this split."""
    if tensor_parallel not in CUSTOM_ALL_REDUCE_SIZES or interconnect == PCIE:
        return False
    return interconnect == NVSWITCH or tensor_parallel == 2


def nccl_peers(tensor_parallel: int) -> int:
    """The peers each GPU receives from in every channel: one of two GPUs, the ring's and tree's two
    neighbours of more."""
    return min(2, tensor_parallel - 1)


@dataclass(frozen=True)
class SplitCost:
    """What a tensor-parallel split of `tensor_parallel` GPUs adds per GPU to vLLM's memory outside PyTorch
    on GPUs connected by `interconnect`."""

    interconnect: str
    tensor_parallel: int

    @property
    def split(self) -> bool:
        return self.tensor_parallel > 1

    @property
    def custom_all_reduce_bytes(self) -> int:
        return CUSTOM_ALL_REDUCE_BYTES if custom_all_reduce_on(self.interconnect, self.tensor_parallel) else 0

    @property
    def nccl_bytes(self) -> int:
        """NCCL's buffers in GPU memory (none where they live in host memory)."""
        if not self.split or self.interconnect != PCIE_P2P:
            return 0
        peers = nccl_peers(self.tensor_parallel)
        return NCCL_COMMUNICATORS * NCCL_PCIE_CHANNELS * peers * NCCL_CONNECTION_BYTES

    @property
    def bytes(self) -> int:
        if not self.split:
            return 0
        if self.interconnect == NVSWITCH:
            return NVSWITCH_SPLIT_BYTES
        return self.custom_all_reduce_bytes + self.nccl_bytes

    def context_bytes(self, measured: int) -> int:
        """The CUDA context with NCCL's communicators, from the figure `measured` with NVSwitch: less the
        buffers NCCL connected there over NVLink at start, which other interconnects hold in host memory
        or count with the split's own buffers (`bytes`)."""
        if self.interconnect == NVSWITCH:
            return measured
        return measured - NVSWITCH_START_BUFFERS

    def context_formula(self, measured: int) -> str:
        """How `context_bytes` comes from the measured figure, in parentheses (empty with NVSwitch)."""
        if self.interconnect == NVSWITCH:
            return ""
        return gettext(
            " (%(measured)s as measured with NVSwitch, less the %(buffers)s NCCL connects there over NVLink "
            "at start: %(comms)s communicators × %(channels)s channels × %(connection)s bytes)") % {
            "measured": fmt_gib(measured), "buffers": fmt_gib(NVSWITCH_START_BUFFERS),
            "comms": NCCL_COMMUNICATORS, "channels": NCCL_NVSWITCH_CHANNELS,
            "connection": fmt_int(NCCL_CONNECTION_BYTES)}

    def formula(self) -> str:
        """The split's share of the item's formula, beginning " + "."""
        if self.interconnect == NVSWITCH:
            return gettext(
                " + %(nccl)s NCCL and custom all-reduce buffers under tensor parallelism (GPUs linked "
                "through NVSwitch, as measured on H100)") % {"nccl": fmt_gib(self.bytes)}
        if self.interconnect == PCIE:
            return gettext(
                " + %(bytes)s under tensor parallelism over PCIe without peer-to-peer (no custom all-reduce; "
                "NCCL's buffers in host memory)") % {"bytes": fmt_gib(self.bytes)}
        if self.custom_all_reduce_bytes:
            custom = gettext("custom all-reduce 2 × 8 MiB + 8 MiB of graph addresses")
        else:
            custom = gettext("no custom all-reduce beyond 2 GPUs over PCIe")
        return gettext(
            " + %(bytes)s under tensor parallelism over PCIe with peer-to-peer: %(custom)s; NCCL %(comms)s "
            "communicators × %(channels)s channels × %(peers)s × %(connection)s bytes per connection (LL, "
            "LL128 and Simple buffers)") % {
            "bytes": fmt_gib(self.bytes), "custom": custom, "comms": NCCL_COMMUNICATORS,
            "channels": NCCL_PCIE_CHANNELS, "peers": _peers_words(nccl_peers(self.tensor_parallel)),
            "connection": fmt_int(NCCL_CONNECTION_BYTES)}


def _peers_words(peers: int) -> str:
    return gettext("1 peer") if peers == 1 else gettext("%(peers)s peers") % {"peers": peers}
