"""What a tensor-parallel split costs each GPU under vLLM, by what the GPUs are connected by
(sizing.calculators.vllm_interconnect): the buffers from vLLM's and NCCL's sources, the rule by GPU type, and
the budget, the context and the wizard's need that follow."""
from fractions import Fraction

import pytest

from sizing.calculators.vllm import (
    CUDA_CONTEXT_SPLIT_BYTES,
    NCCL_BYTES,
    NON_TORCH_BYTES,
    VllmSettings,
    outside_items,
    vllm_budget,
)
from sizing.calculators.vllm_inference import estimate_vllm
from sizing.calculators.vllm_interconnect import (
    INTERCONNECTS,
    NCCL_CONNECTION_BYTES,
    NVSWITCH,
    NVSWITCH_START_BUFFERS,
    PCIE,
    PCIE_P2P,
    SplitCost,
    check_interconnect,
    custom_all_reduce_on,
    interconnect_of_gpu,
)
from sizing.calculators.vllm_versions import VllmRelease, parse_version
from sizing.errors import SizingError
from sizing.units import GIB, MIB
from tests.sizing.models import LLAMA_3_1_8B

RTX_3090 = int(Fraction(2354, 100) * GIB)


def settings(**changes):
    values = {"gpu_memory_bytes": RTX_3090, "gpu_memory_utilization": Fraction(9, 10), "max_model_len": 4096,
              "version": parse_version("0.19"), "tensor_parallel": 2}
    values.update(changes)
    return VllmSettings(**values)


def test_one_nccl_connection_holds_its_three_protocols_buffers_as_nccl_sizes_them():
    ll = 8 * 512 * 8 * 16  # lines per thread × threads × steps × 16-byte line
    ll128 = 120 * 640 * 8 * 8  # elements per thread × threads × steps × 8 bytes
    assert (ll, ll128) == (524_288, 4_915_200)
    assert NCCL_CONNECTION_BYTES == ll + ll128 + 4 * MIB == 9_633_792


def test_custom_all_reduce_runs_where_vllm_enables_it():
    assert custom_all_reduce_on(NVSWITCH, 8) and custom_all_reduce_on(PCIE_P2P, 2)
    assert not custom_all_reduce_on(PCIE_P2P, 4)  # "not supported on more than two PCIe-only GPUs"
    assert not custom_all_reduce_on(PCIE, 2)  # "your platform lacks GPU P2P capability"
    assert not custom_all_reduce_on(NVSWITCH, 3)  # world sizes 2, 4, 6 and 8 only


def test_the_split_costs_each_gpu_what_its_interconnect_holds():
    assert SplitCost(NVSWITCH, 2).bytes == SplitCost(NVSWITCH, 8).bytes == NCCL_BYTES == 2 * GIB
    # 8 MiB of scratch and flags, an 8 MiB IPC buffer, 8 MiB of graph addresses; 2 communicators × 2 channels
    assert SplitCost(PCIE_P2P, 2).bytes == 24 * MIB + 2 * 2 * 1 * NCCL_CONNECTION_BYTES
    assert SplitCost(PCIE_P2P, 4).bytes == 2 * 2 * 2 * NCCL_CONNECTION_BYTES  # two neighbours, no custom
    assert SplitCost(PCIE, 2).bytes == SplitCost(PCIE, 8).bytes == 0  # NCCL over host memory
    assert all(SplitCost(name, 1).bytes == 0 for name in INTERCONNECTS)


@pytest.mark.parametrize(("gpu", "interconnect"), [
    ("RTX 3090", PCIE), ("NVIDIA GeForce RTX 3090", PCIE), ("RTX 4090", PCIE), ("RTX 5090", PCIE),
    ("RTX A6000", PCIE_P2P), ("RTX 6000 Ada", PCIE_P2P), ("L40S", PCIE_P2P), ("L4", PCIE_P2P), ("T4", PCIE_P2P),
    ("H100 PCIe 80GB", PCIE_P2P), ("H100 NVL", PCIE_P2P),
    ("H100 SXM 80GB", NVSWITCH), ("NVIDIA H100 80GB HBM3", NVSWITCH), ("H200", NVSWITCH), ("B200", NVSWITCH),
    ("A100 80GB", NVSWITCH), ("MI300X", NVSWITCH), ("", NVSWITCH),
])
def test_a_gpu_types_machines_are_taken_as_its_name_says(gpu, interconnect):
    assert interconnect_of_gpu(gpu) == interconnect


def test_the_budget_charges_the_split_by_interconnect_with_its_formula():
    budgets = {name: vllm_budget(LLAMA_3_1_8B, 16, 16, settings(interconnect=name)) for name in INTERCONNECTS}
    assert budgets[NVSWITCH].non_torch.bytes == NON_TORCH_BYTES + 2 * GIB
    assert budgets[PCIE].non_torch.bytes == NON_TORCH_BYTES
    assert budgets[PCIE].kv_cache_bytes - budgets[NVSWITCH].kv_cache_bytes == 2 * GIB
    assert "NVSwitch" in budgets[NVSWITCH].non_torch.formula
    assert "host memory" in budgets[PCIE].non_torch.formula
    assert "2 communicators × 2 channels × 1 peer × 9,633,792 bytes" in budgets[PCIE_P2P].non_torch.formula
    alone = vllm_budget(LLAMA_3_1_8B, 16, 16, settings(tensor_parallel=1, interconnect=PCIE))
    assert alone.non_torch.bytes == NON_TORCH_BYTES and alone.non_torch.formula == "cuBLAS workspaces, kernel scratch"


def test_the_context_of_a_split_holds_no_nvlink_buffers_without_nvswitch():
    [nvswitch] = [i for i in outside_items(settings(interconnect=NVSWITCH), graphs=True) if i.name.startswith("CUDA context")]
    [pcie] = [i for i in outside_items(settings(interconnect=PCIE), graphs=True) if i.name.startswith("CUDA context")]
    assert nvswitch.bytes == CUDA_CONTEXT_SPLIT_BYTES
    assert NVSWITCH_START_BUFFERS == 2 * 24 * NCCL_CONNECTION_BYTES  # "24 coll channels" between two GPUs
    assert pcie.bytes == CUDA_CONTEXT_SPLIT_BYTES - NVSWITCH_START_BUFFERS
    assert "24 channels" in pcie.formula and "24 channels" not in nvswitch.formula
    # before 0.9.2 the context is paid inside the budget: the pool gains what the context loses
    old = {name: vllm_budget(LLAMA_3_1_8B, 16, 16, settings(interconnect=name, version=parse_version("0.8.4")))
           for name in (NVSWITCH, PCIE)}
    assert old[PCIE].kv_cache_bytes - old[NVSWITCH].kv_cache_bytes == 2 * GIB + NVSWITCH_START_BUFFERS


def test_an_interconnect_not_known_is_refused_by_its_field():
    with pytest.raises(SizingError) as refused:
        check_interconnect("infiniband")
    assert refused.value.field == "interconnect"
    with pytest.raises(SizingError):
        vllm_budget(LLAMA_3_1_8B, 16, 16, settings(interconnect="nvlink"))


def test_the_wizards_need_per_gpu_follows_the_release_asked_interconnect():
    said = estimate_vllm(LLAMA_3_1_8B, 16, 4096, 1, release=VllmRelease(interconnect=PCIE))
    unsaid = estimate_vllm(LLAMA_3_1_8B, 16, 4096, 1, release=VllmRelease())
    assert said.bytes_per_gpu(1) == unsaid.bytes_per_gpu(1)
    # 2 GiB of NCCL and all-reduce buffers inside the release's default gpu_memory_utilization (0.92 from
    # 0.20; rounded up once each)
    utilization = float(VllmRelease().utilization)
    assert utilization == 0.92
    assert unsaid.bytes_per_gpu(2) - said.bytes_per_gpu(2) == pytest.approx(2 * GIB / utilization, abs=2)
    assert any("Sized for: PCIe without peer-to-peer." in line for line in said.assumptions)
    assert VllmRelease().settings()["interconnect"] == NVSWITCH
    # what the settings say of themselves: the default is not said again
    assert settings(interconnect=NVSWITCH).release.interconnect is None
    assert settings(interconnect=PCIE).release.interconnect == PCIE
