"""Clusters are sized at their GPU's MoE kernel (issue #43): MXFP4 experts (gpt-oss) on a site of
data-center Blackwell (compute capability 10.x) load through FlashInfer's padding, on Hopper through
Marlin's, as a single machine of that GPU is sized (`sizing.calculators.vllm_loading`); sites alike but for
their GPU architecture share no sizing, and a model without MXFP4 experts sizes the same on every one."""
from __future__ import annotations

import math

import pytest

from catalog.data.gpu_types import ARCHITECTURES
from sizing import cluster as cluster_module
from sizing.calculators.vllm import VllmSettings, vllm_budget
from sizing.calculators.vllm_loading import FLASHINFER_SM100, MARLIN, mxfp4_loaded
from sizing.calculators.vllm_versions import DEFAULT_RELEASE
from sizing.cluster import _shared_need, cluster_need, plan_of, release_on
from sizing.cluster_search import search_clusters
from sizing.engine_support import gpu_architecture
from sizing.units import GIB, MIB
from tests.sizing.test_cluster_plan import DEEPSEEK_V3, H100_SITE, H100_SMI_MIB, LLAMA_405B, model, site

GPT_OSS_120B = model("gpt-oss-120b")
B200_SMI_MIB = 183_359  # no usable figure recorded: nvidia-smi less what the driver keeps
B200 = gpu_architecture(*ARCHITECTURES["B200"])
HOPPER = gpu_architecture(*ARCHITECTURES["H100 SXM 80GB"])
B200_SITE = site("b200-site", "B200", B200_SMI_MIB, ["40.00", "41.00"])
H100_PAIR = H100_SITE._replace(machine_ids=H100_SITE.machine_ids[:2],
                               prices_per_gpu_hour=H100_SITE.prices_per_gpu_hour[:2])
# gpt-oss-120b over TP 8: 36 MoE layers of 128 experts, each 2,880 wide (360 per GPU) on a 2,880 hidden
# size; 2,127,557,952 other parameters in 16 bits; the rotary cache of 131,072 positions × 64 × 2 bytes.
EXPERTS = 36 * 128
OTHER_BYTES = 2_127_557_952 * 2
ROTARY = 131_072 * 64 * 2


def expert_bytes(width: int, hidden: int) -> int:
    """One expert on one GPU at the padded width and hidden size: 4-bit values, an E8M0 scale per 32,
    bf16 biases."""
    values = 3 * width * hidden
    return values // 2 + values // 32 + (2 * width + hidden) * 2


def weights_by_hand(width: int, hidden: int) -> int:
    """The busiest of two stages' weights per GPU: its 18 of 36 layers and one of the embeddings and
    output head come to half the group's bytes (the two are the same size), ÷ 8 GPUs; + the rotary cache."""
    group = expert_bytes(width, hidden) * EXPERTS * 8 + OTHER_BYTES
    return math.ceil(group / 16) + ROTARY


def single_budget(site_, gpu):
    """One vLLM budget at the cluster's split (TP 8 × PP 2) on the site's GPUs, with `gpu` named."""
    release = release_on(DEFAULT_RELEASE, site_.gpu_type, site_.gpu_count)
    return vllm_budget(GPT_OSS_120B, 4, 16, VllmSettings(
        **release.settings(),  # type: ignore[arg-type]
        gpu_memory_bytes=site_.usable_memory_mib * MIB, tensor_parallel=8, pipeline_parallel=2,
        gpu_memory_utilization=release.utilization, max_model_len=8192, max_num_seqs=1, gpu=gpu,
    ))


def test_gpt_oss_120b_on_two_8_x_b200_loads_through_flashinfer_as_one_budget_on_b200_does():
    plan = plan_of(GPT_OSS_120B, 4, 16, 8192, 1, B200_SITE)
    assert not isinstance(plan, str)
    assert (plan.tensor_parallel, plan.pipeline_parallel) == (8, 2)
    weights = plan.need.items[0]
    assert weights == single_budget(B200_SITE, B200).weights  # name, formula and bytes
    assert plan.need.budget.settings.kernel is FLASHINFER_SM100
    loaded = mxfp4_loaded(GPT_OSS_120B, 8, FLASHINFER_SM100)
    assert (loaded.width, loaded.padded_width, loaded.padded_hidden) == (360, 512, 3072)
    assert weights.bytes == weights_by_hand(512, 3072) == 6_077_152_936  # 5.66 GiB per GPU
    assert round(weights.bytes / GIB, 2) == 5.66
    # The breakdown names the kernel the weights were sized for, as a single machine's weights item does.
    assert weights.formula.startswith("MXFP4 experts through FlashInfer MXFP4 (compute capability 10): ")
    assert "padded to a multiple of 256 and the hidden size (2,880) to a multiple of 256" in weights.formula


def test_the_same_cluster_on_h100_loads_through_marlin_and_holds_less():
    plan = plan_of(GPT_OSS_120B, 4, 16, 8192, 1, H100_PAIR)
    assert not isinstance(plan, str)
    weights = plan.need.items[0]
    assert weights == single_budget(H100_PAIR, HOPPER).weights
    assert plan.need.budget.settings.kernel is MARLIN
    assert weights.bytes == weights_by_hand(384, 3072) == 4_632_084_136  # 4.31 GiB per GPU
    assert weights.formula.startswith("MXFP4 experts through Marlin (weight-only MXFP4): ")
    on_b200 = plan_of(GPT_OSS_120B, 4, 16, 8192, 1, B200_SITE)
    assert not isinstance(on_b200, str) and on_b200.need.items[0].bytes > weights.bytes


def test_a_search_sizes_each_site_at_its_own_kernel():
    search = search_clusters(GPT_OSS_120B, 4, 16, 8192, 1, [B200_SITE, H100_SITE])
    kernels = {plan.site.gpu_type: plan.need.budget.settings.kernel for plan in search.plans}
    assert kernels == {"B200": FLASHINFER_SM100, "H100 SXM 80GB": MARLIN}
    by_gpu = {plan.site.gpu_type: plan.need.items[0].bytes for plan in search.plans}
    assert by_gpu == {"B200": weights_by_hand(512, 3072), "H100 SXM 80GB": weights_by_hand(384, 3072)}


def test_two_sites_alike_but_for_their_gpu_architecture_share_no_sizing():
    """An H100-shaped site recorded as compute capability 10.0 (the same GPUs per machine, usable memory
    and interconnect): its sizing is its own, in a search and in the shared sizings across answers."""
    blackwell_shaped = H100_PAIR._replace(site="h100-shaped-b", gpu_architecture=B200)
    hopper, blackwell = (search_clusters(GPT_OSS_120B, 4, 16, 8192, 1, [H100_PAIR, blackwell_shaped])
                         .plans)[:2]
    by_site = {plan.site.site: plan.need for plan in (hopper, blackwell)}
    assert by_site["h100-site"].budget.settings.kernel is MARLIN
    assert by_site["h100-shaped-b"].budget.settings.kernel is FLASHINFER_SM100
    assert by_site["h100-site"].items[0].bytes < by_site["h100-shaped-b"].items[0].bytes
    # One site at a time (a cluster's page) reads the shared sizings by the same key.
    first = plan_of(GPT_OSS_120B, 4, 16, 8192, 1, H100_PAIR)
    second = plan_of(GPT_OSS_120B, 4, 16, 8192, 1, blackwell_shaped)
    assert not isinstance(first, str) and not isinstance(second, str)
    assert first.need is by_site["h100-site"] and second.need is by_site["h100-shaped-b"]
    assert first.need.items[0] != second.need.items[0]


@pytest.mark.parametrize(("spec", "precision"), [(LLAMA_405B, 16), (DEEPSEEK_V3, 8)])
def test_a_model_without_mxfp4_experts_sizes_the_same_on_every_architecture(spec, precision):
    needs = [cluster_need(spec, precision, 16, 8192, 1, gpus_per_machine=8, machines=2,
                          usable_bytes=H100_SMI_MIB * MIB, gpu=gpu) for gpu in (None, HOPPER, B200)]
    assert needs[0].items == needs[1].items == needs[2].items
    assert needs[0].outside == needs[1].outside == needs[2].outside


def counting_needs(monkeypatch) -> list[tuple]:
    """Every `cluster_need` a search computes (the shared sizings forgotten first), as (GPUs per machine,
    machines, GPU architecture)."""
    _shared_need.cache_clear()
    computed: list[tuple] = []
    original = cluster_module.cluster_need

    def counted(*args, **kwargs):
        computed.append((kwargs["gpus_per_machine"], kwargs["machines"], kwargs["gpu"]))
        return original(*args, **kwargs)

    monkeypatch.setattr(cluster_module, "cluster_need", counted)
    return computed


def test_a_search_sizes_each_shape_once_per_gpu_architecture_among_its_sites(monkeypatch):
    """Work is bounded by shapes × architectures, not by sites: DeepSeek-V3 in 16 bits on 8 × H100 walks
    two counts (two machines do not hold it, three do); ten sites of that shape size them twice, and the
    same ten split over two architectures size them four times."""
    sites = [site(f"h100-{n}", "H100 SXM 80GB", H100_SMI_MIB, ["20.00", "21.00", "22.00"]) for n in range(10)]
    computed = counting_needs(monkeypatch)
    search_clusters(DEEPSEEK_V3, 16, 16, 8192, 1, sites)
    assert sorted(computed, key=str) == [(8, 2, HOPPER), (8, 3, HOPPER)]
    split = [each._replace(gpu_architecture=B200) if n % 2 else each for n, each in enumerate(sites)]
    computed = counting_needs(monkeypatch)
    search = search_clusters(DEEPSEEK_V3, 16, 16, 8192, 1, split)
    assert len(search.plans) == 10 and len(computed) == 2 * 2
    assert {gpu for _gpus, _machines, gpu in computed} == {HOPPER, B200}
    computed.clear()
    search_clusters(DEEPSEEK_V3, 16, 16, 8192, 1, list(reversed(split)))  # another answer: shared
    assert computed == []
