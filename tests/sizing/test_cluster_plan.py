"""Clusters (sizing.cluster): the fewest machines of a site that hold a model under vLLM at tensor parallel =
GPUs per machine × pipeline parallel = machines, each per-GPU figure worked out here by hand."""
import math
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

import pytest
from django.utils import translation
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog.data.gpu_types import ARCHITECTURES
from catalog.data.language_models import LANGUAGE_MODELS
from sizing.calculators.items import weight_items
from sizing.calculators.vllm_inference import estimate_vllm
from sizing.calculators.vllm_interconnect import NVSWITCH, PCIE, PCIE_P2P
from sizing.calculators.vllm_versions import VllmRelease, parse_version
from sizing.cluster import cluster_need, layers_per_stage, release_on
from sizing.cluster_search import plan_clusters, search_clusters
from sizing.cluster_sites import CLUSTER_TIER, ClusterMachine, ClusterSite
from sizing.engine_support import gpu_architecture
from sizing.offers import Preferences
from sizing.preferences import HOURLY_PRICE, ORDER, preference_breaks
from sizing.reasons import BREAK_BUDGET, BREAK_MAX_PRICE
from sizing.units import GIB, MIB
from tests.sizing.test_capacity import shipped

H100_SMI_MIB, H100_USABLE_MIB = 81_559, 81_090  # nvidia-smi; CUDA (the catalog's usable figure)
H200_SMI_MIB = 143_771
H200_USABLE_MIB = H200_SMI_MIB - 469  # no usable figure recorded: nvidia-smi less what the driver keeps
USABLE = {"H100 SXM 80GB": H100_USABLE_MIB}
NON_TORCH = GIB // 4
NCCL = 2 * GIB
BATCHED = 8192  # max_num_batched_tokens
# The figures by hand follow vLLM 0.19's budget (the CUDA context and graphs outside it), as its logs do.
AT_0_19 = VllmRelease(parse_version("0.19"))


def model(slug):
    row = next(row for row in LANGUAGE_MODELS if row["slug"] == slug)
    return replace(shipped(slug), hf_id=row["hf_id"])


LLAMA_405B = model("llama-3-1-405b")
DEEPSEEK_V3 = model("deepseek-v3")


def site(name, gpu, smi_mib, prices, provider="Lambda", gpus=8):
    """A site whose machines cost `prices` per hour each (all their GPUs), cheapest first."""
    return ClusterSite(
        provider=provider, site=name, country="US", region="us-east", gpu_type=gpu, gpu_count=gpus,
        memory_per_gpu_mib=smi_mib, usable_memory_mib=USABLE.get(gpu) or smi_mib - 469,
        interconnect="infiniband", interconnect_gbps=400,
        machine_ids=tuple(index + 1 + hash(name) % 1000 * 100 for index in range(len(prices))),
        prices_per_gpu_hour=tuple(Decimal(price) / gpus for price in prices),
        gpu_architecture=gpu_architecture(*ARCHITECTURES[gpu]),
    )


H100_SITE = site("h100-site", "H100 SXM 80GB", H100_SMI_MIB, ["20.00", "21.00", "22.00", "23.00", "24.00"])
H200_SITE = site("h200-site", "H200", H200_SMI_MIB, ["30.00", "31.00", "32.00"])


def budget_of(usable_mib):
    return math.floor(Fraction(9, 10) * usable_mib * MIB)


def llama_405b_16_bit_per_gpu(pp):
    """Llama 3.1 405B, bf16 weights, 8,192 tokens × 1 request, TP 8 × PP pp: each item by hand."""
    total = 405_853_388_800 * 2
    embeddings = 128_256 * 16_384 * 2  # vocabulary × hidden, bf16: the embeddings, and again the head
    decoder = total - 2 * embeddings
    stage_layers = math.ceil(126 / pp)
    stage = Fraction(decoder * stage_layers, 126) + embeddings if pp > 1 else total
    # + vLLM's rotary cos/sin cache, whole on every GPU: 131,072 positions × 128 × 2 bytes
    weights = math.ceil(stage / 8) + 131_072 * 128 * 2
    # One KV head of 128 values (8 KV heads over 8 GPUs), K and V, 2 bytes, blocks of 16 tokens:
    kv = math.ceil(8192 / 16) * stage_layers * (16 * 2 * 1 * 128 * 2)
    activation = BATCHED * (2 * 16_384 + 3 * 53_248 // 8) * 2  # one layer's MLP over the prefill step
    pipeline = 2 * BATCHED * 16_384 * 2 if pp > 1 else 0  # hidden states and residual received
    return {"weights": weights, "kv": kv, "activation": activation, "non_torch": NON_TORCH,
            "communication": NCCL + pipeline}


def at_current_release(by_hand):
    """The figures by hand as the current stable release (0.21 on) holds them: its CUDA graphs' estimate
    (1 GiB per GPU) inside the budget, listed before the communication buffers."""
    found = {key: value for key, value in by_hand.items() if key != "communication"}
    return {**found, "cuda_graphs": GIB, "communication": by_hand["communication"]}


def figures(need):
    names = ("weights", "kv", "activation", "non_torch", "communication")
    return dict(zip(names, (item.bytes for item in need.items), strict=True))


def test_llama_405b_16_bit_fits_no_8_x_h100_alone_and_two_at_tp_8_pp_2():
    alone = cluster_need(LLAMA_405B, 16, 16, 8192, 1, gpus_per_machine=8, machines=1,
                         usable_bytes=H100_USABLE_MIB * MIB, release=AT_0_19)
    assert figures(alone) == llama_405b_16_bit_per_gpu(1)
    assert round(alone.need_bytes / GIB, 2) == 98.07 and round(alone.budget_bytes / GIB, 2) == 71.27
    assert not alone.fits
    two = cluster_need(LLAMA_405B, 16, 16, 8192, 1, gpus_per_machine=8, machines=2,
                       usable_bytes=H100_USABLE_MIB * MIB, release=AT_0_19)
    by_hand = llama_405b_16_bit_per_gpu(2)
    assert figures(two) == by_hand
    # 126 ÷ 2 layers: exactly half of 811,706,777,600 ÷ 8, and the whole rotary cache
    assert by_hand["weights"] == 50_731_673_600 + 33_554_432
    assert two.need_bytes == sum(by_hand.values())
    assert round(two.need_bytes / GIB, 2) == 51.08
    assert two.budget_bytes == budget_of(H100_USABLE_MIB) and two.fits

    plans = plan_clusters(LLAMA_405B, 16, 16, 8192, 1, [H100_SITE], release=AT_0_19)
    (plan,) = plans
    assert (plan.tensor_parallel, plan.pipeline_parallel, plan.gpus) == (8, 2, 16)
    assert plan.machine_prices_per_hour == (Decimal("20.00"), Decimal("21.00"))
    assert plan.machine_ids == H100_SITE.machine_ids[:2]
    assert plan.price_per_hour == Decimal("41.00")
    assert plan.layers_per_stage == (63, 63)
    assert plan.confidence == "low"


def test_llama_405b_in_8_bit_fits_one_8_x_h100_as_the_ordinary_answer():
    alone = cluster_need(LLAMA_405B, 8, 16, 8192, 1, gpus_per_machine=8, machines=1,
                         usable_bytes=H100_USABLE_MIB * MIB, release=AT_0_19)
    assert alone.fits
    # The single-machine answer under vLLM reaches the same need per GPU.
    assert alone.need_bytes == estimate_vllm(LLAMA_405B, 8, 8192, 1, release=AT_0_19).need_in_budget(8)
    assert round(alone.need_bytes / GIB, 2) == 51.31


def deepseek_per_gpu(precision, pp):
    """DeepSeek-V3, 8,192 tokens × 1 request, TP 8 × PP pp: the stored (FP8) or bf16 weights' busiest
    stage ÷ 8, the latent cache of its layers, the fused-MoE peak, the buffers."""
    if precision == 8:  # the checkpoint as published (block FP8), as the single-machine answer sizes it
        items, _words, _stored = weight_items(DEEPSEEK_V3, 8)
        total = sum(item.bytes for item in items)
    else:
        total = 671_026_404_352 * 2
    embeddings = 129_280 * 7168 * 2
    stage_layers = math.ceil(61 / pp)
    stage = min(Fraction(1), (Fraction((total - 2 * embeddings) * stage_layers, 61) + embeddings) / total) \
        if pp > 1 else 1
    # + the rotary cos/sin cache of MLA's 64 rotary dims over 163,840 positions, whole on every GPU
    weights = math.ceil(total * stage / 8) + 163_840 * 64 * 2
    kv = math.ceil(8192 / 16) * stage_layers * (16 * (512 + 64) * 2)  # one latent per token and layer
    activation = BATCHED * (2 * 7168 + 8 * (3 * 2048 // 8 + 7168) + 3 * 2048 // 8) * 2
    pipeline = 2 * BATCHED * 7168 * 2 if pp > 1 else 0
    return {"weights": weights, "kv": kv, "activation": activation, "non_torch": NON_TORCH,
            "communication": NCCL + pipeline}


def test_deepseek_v3_fp8_one_8_x_h200_or_two_8_x_h100():
    on_h200 = cluster_need(DEEPSEEK_V3, 8, 16, 8192, 1, gpus_per_machine=8, machines=1,
                           usable_bytes=H200_USABLE_MIB * MIB, release=AT_0_19)
    assert figures(on_h200) == deepseek_per_gpu(8, 1) and on_h200.fits
    assert round(on_h200.need_bytes / GIB, 2) == 82.37
    on_h100 = cluster_need(DEEPSEEK_V3, 8, 16, 8192, 1, gpus_per_machine=8, machines=1,
                           usable_bytes=H100_USABLE_MIB * MIB, release=AT_0_19)
    assert not on_h100.fits
    (plan,) = plan_clusters(DEEPSEEK_V3, 8, 16, 8192, 1, [H100_SITE], release=AT_0_19)
    assert plan.pipeline_parallel == 2
    assert figures(plan.need) == deepseek_per_gpu(8, 2)
    assert round(plan.need.need_bytes / GIB, 2) == 43.78
    assert plan.layers_per_stage == (31, 30)


def test_deepseek_v3_16_bit_two_8_x_h200_and_three_8_x_h100():
    plans = plan_clusters(DEEPSEEK_V3, 16, 16, 8192, 1, [H100_SITE, H200_SITE], release=AT_0_19)
    by_gpu = {plan.site.gpu_type: plan for plan in plans}
    h200, h100 = by_gpu["H200"], by_gpu["H100 SXM 80GB"]
    assert h200.pipeline_parallel == 2 and figures(h200.need) == deepseek_per_gpu(16, 2)
    assert round(h200.need.need_bytes / GIB, 2) == 83.35
    assert h200.need.budget_bytes == budget_of(H200_USABLE_MIB)
    # Physics decides: three 8 × H100 machines hold it (57.7 of 71.27 GiB per GPU), two do not (83.3).
    assert h100.pipeline_parallel == 3 and figures(h100.need) == deepseek_per_gpu(16, 3)
    assert round(h100.need.need_bytes / GIB, 2) == 57.73
    assert h100.layers_per_stage == (20, 21, 20)
    assert h100.price_per_hour == Decimal("63.00")
    # SGLang's --tp spans all 24 GPUs, which does not divide 128 heads.
    assert h100.sglang_commands == () and "128" in h100.sglang_note and "24" in h100.sglang_note
    assert [plan.price_per_hour for plan in plans] == [Decimal("61.00"), Decimal("63.00")]


def test_commands_name_the_split_and_the_head():
    (plan,) = plan_clusters(LLAMA_405B, 16, 16, 8192, 1, [H100_SITE])
    head, worker, serve = plan.vllm_commands
    assert head == "ray start --head --port=6379" and worker == "ray start --address=<head>:6379"
    assert serve.startswith("vllm serve meta-llama/Llama-3.1-405B --tensor-parallel-size 8 "
                            "--pipeline-parallel-size 2 --max-model-len 8192")
    assert serve.endswith("--distributed-executor-backend ray")
    assert plan.sglang_commands == tuple(
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-405B --tp 16 --nnodes 2 "
        f"--node-rank {rank} --dist-init-addr <head>:20000 --context-length 8192" for rank in (0, 1))


def test_a_site_whose_gpu_count_does_not_divide_the_heads_is_skipped_with_its_reason():
    odd = site("odd", "H100 SXM 80GB", H100_SMI_MIB, ["3.00", "3.00", "3.00"], gpus=3)
    search = search_clusters(LLAMA_405B, 16, 16, 8192, 1, [odd, H100_SITE])
    assert [plan.site.site for plan in search.plans] == ["h100-site"]
    ((skipped, reason),) = search.skipped
    assert skipped is odd and "tensor-parallel size must divide" in reason


def test_a_site_with_too_few_machines_forms_no_cluster():
    small = site("small", "H100 SXM 80GB", H100_SMI_MIB, ["1.00", "1.00"])
    search = search_clusters(DEEPSEEK_V3, 16, 16, 8192, 1, [small])
    assert search.plans == () and "2 machines" in search.skipped[0][1]


def test_plans_are_cheapest_first_then_provider_site_and_ids():
    a = site("b-site", "H100 SXM 80GB", H100_SMI_MIB, ["10.00", "10.00"], provider="Zeta")
    b = site("a-site", "H100 SXM 80GB", H100_SMI_MIB, ["10.00", "10.00"], provider="Zeta")
    c = site("c-site", "H100 SXM 80GB", H100_SMI_MIB, ["10.00", "10.00"], provider="Alpha")
    plans = plan_clusters(LLAMA_405B, 16, 16, 8192, 1, [a, b, c, H100_SITE])
    assert [(plan.site.provider, plan.site.site) for plan in plans] == [
        ("Alpha", "c-site"), ("Zeta", "a-site"), ("Zeta", "b-site"), ("Lambda", "h100-site")]


def test_answers_share_the_sizing_of_one_shape_in_the_words_of_their_own_language():
    first = plan_clusters(LLAMA_405B, 16, 16, 8192, 1, [H100_SITE])[0].need
    again = plan_clusters(LLAMA_405B, 16, 16, 8192, 1, [H100_SITE, site("h100-other", "H100 SXM 80GB",
                                                                       H100_SMI_MIB, ["9.00", "9.00"])])
    assert all(plan.need is first for plan in again)  # sized once, whatever the answer or the site
    english = cluster_need(LLAMA_405B, 16, 16, 8192, 1, gpus_per_machine=8, machines=2,
                           usable_bytes=H100_USABLE_MIB * MIB, gpu=H100_SITE.gpu_architecture)
    assert first == english
    with translation.override("de"):
        german = plan_clusters(LLAMA_405B, 16, 16, 8192, 1, [H100_SITE])[0].need
        assert german == cluster_need(LLAMA_405B, 16, 16, 8192, 1, gpus_per_machine=8, machines=2,
                                      usable_bytes=H100_USABLE_MIB * MIB, gpu=H100_SITE.gpu_architecture)
    assert german.need_bytes == first.need_bytes
    assert [item.name for item in german.items] != [item.name for item in first.items]
    # Another workload is another sizing.
    longer = plan_clusters(LLAMA_405B, 16, 16, 16384, 1, [H100_SITE])[0].need
    assert longer is not first and longer.need_bytes > first.need_bytes


def test_layers_split_as_vllm_splits_them():
    assert layers_per_stage(126, 2) == (63, 63)
    assert layers_per_stage(61, 2) == (31, 30)
    assert layers_per_stage(61, 4) == (15, 15, 16, 15)  # the extra layer before the last stage
    assert sum(layers_per_stage(61, 7)) == 61 and max(layers_per_stage(61, 7)) == math.ceil(61 / 7)


MODELS = [LLAMA_405B, DEEPSEEK_V3, model("llama-3-1-70b"), model("gpt-oss-120b"), model("gemma-2-27b"), model("llama-4-scout"), model("qwen3-next-80b-a3b")]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from([16, 8]), st.sampled_from([16, 8]),
       st.integers(1, 32_768), st.integers(1, 64), st.integers(2, 30), st.sampled_from([1, 2, 4, 8]))
def test_more_machines_never_need_more_per_gpu(spec, precision, kv_bits, context, requests, machines, gpus):
    context = min(context, spec.max_context or context)
    if spec.attention_heads % gpus or machines + 1 > spec.layers:
        return
    fewer = cluster_need(spec, precision, kv_bits, context, requests, gpus_per_machine=gpus, machines=machines,
                         usable_bytes=80 * GIB)
    more = cluster_need(spec, precision, kv_bits, context, requests, gpus_per_machine=gpus,
                        machines=machines + 1, usable_bytes=80 * GIB)
    assert more.need_bytes <= fewer.need_bytes


@settings(max_examples=20, deadline=None)
@given(st.permutations([H100_SITE, H200_SITE, site("x", "H200", H200_SMI_MIB, ["29.00", "33.00"])]))
def test_the_plan_is_deterministic_whatever_order_the_sites_come_in(sites):
    plans = plan_clusters(DEEPSEEK_V3, 16, 16, 8192, 1, sites)
    again = plan_clusters(DEEPSEEK_V3, 16, 16, 8192, 1, list(reversed(sites)))
    assert plans == again
    assert [plan.site.site for plan in plans] == ["h200-site", "x", "h100-site"]


def test_a_plan_takes_its_own_machines_in_its_order_and_reads_its_booking_limit_from_them():
    (plan,) = plan_clusters(LLAMA_405B, 16, 16, 8192, 1, [H100_SITE])
    with pytest.raises(ValueError, match="with_machines"):
        plan.booking_limit_hours  # noqa: B018 - reading it is the test
    machines = tuple(
        ClusterMachine(machine_id, f"m-{machine_id}", price, 24 if place else None)
        for place, (machine_id, price) in enumerate(zip(plan.machine_ids, plan.machine_prices_per_hour))
    )
    detailed = plan.with_machines(machines)
    assert detailed.booking_limit_hours == 24
    assert detailed.price_per_hour == plan.price_per_hour == Decimal("41.00")
    with pytest.raises(ValueError, match="its own"):
        plan.with_machines(tuple(reversed(machines)))
    with pytest.raises(ValueError, match="its own"):
        plan.with_machines(machines[:1])


def test_the_cheapest_plans_within_a_price_limit_and_how_many_are_within_it():
    cheap = site("h100-cheap", "H100 SXM 80GB", H100_SMI_MIB, ["9.00", "9.00"])
    search = search_clusters(LLAMA_405B, 16, 16, 8192, 1, [H200_SITE, H100_SITE, cheap])
    prices = [plan.price_per_hour for plan in search.plans]
    assert prices == [Decimal("18.00"), Decimal("41.00"), Decimal("61.00")]
    shown, within, broken = search.cheapest(Preferences(), 2)
    assert ([plan.price_per_hour for plan in shown], within, broken) == (
        [Decimal("18.00"), Decimal("41.00")], 3, ())
    # The limit itself is within it.
    shown, within, broken = search.cheapest(Preferences(max_price_per_hour=Decimal("41.00")), 5)
    assert ([plan.site.site for plan in shown], within, broken) == (
        ["h100-cheap", "h100-site"], 2, ((BREAK_MAX_PRICE,),))
    assert search.cheapest(Preferences(max_price_per_hour=Decimal("17.99")), 5) == (
        (), 0, ((BREAK_MAX_PRICE,),) * 3)
    assert search.cheapest(Preferences(), 99)[0] == search.plans


LIMITS = [None, Decimal("17.99"), Decimal("18.00"), Decimal("40.99"), Decimal("41.00"), Decimal("61.00")]


@pytest.mark.parametrize("max_price", LIMITS)
@pytest.mark.parametrize("budget", LIMITS)
@pytest.mark.parametrize("tier", ["both", "secure", "community"])
def test_a_cluster_meets_the_preferences_as_a_machine_costing_its_total_per_hour_does(max_price, budget, tier):
    cheap = site("h100-cheap", "H100 SXM 80GB", H100_SMI_MIB, ["9.00", "9.00"])
    search = search_clusters(LLAMA_405B, 16, 16, 8192, 1, [H200_SITE, H100_SITE, cheap])
    preferences = Preferences(max_price_per_hour=max_price, budget=budget, tier=tier)
    shown, within, broken = search.cheapest(preferences, 99)
    # The rule single machines are held to (`sizing.preferences.preference_breaks`), on the cluster's
    # total per hour and its tier (every cluster machine's).
    by_rule = [(plan, preference_breaks(plan.site, plan.price_per_hour, preferences)) for plan in search.plans]
    assert shown == tuple(plan for plan, codes in by_rule if not codes)
    assert within == len(shown)
    assert broken == tuple(codes for _plan, codes in by_rule if codes)
    assert all(plan.site.tier == CLUSTER_TIER for plan in search.plans)
    if budget is not None and budget < Decimal("18.00"):
        assert shown == () and all(BREAK_BUDGET in codes for codes in broken)


def test_clusters_follow_the_listing_order_single_machines_do():
    # $48 per hour each: 2 × (8 × $3) and 2 × (4 × $6); at one hourly price the lower price per
    # GPU-hour comes first, as it does for single machines, then the provider's name.
    eight = site("eight", "H200", H200_SMI_MIB, ["24.00", "24.00"], provider="Zeta")
    four = site("four", "H200", H200_SMI_MIB, ["24.00", "24.00"], provider="Alpha", gpus=4)
    other = site("other", "H200", H200_SMI_MIB, ["24.00", "24.00"], provider="Beta")
    order = [eight.order_key(2), four.order_key(2), other.order_key(2)]
    assert sorted(order) == [other.order_key(2), eight.order_key(2), four.order_key(2)]
    # The key is the rule's (`sizing.preferences.order_key_of`): the hourly price, the price per GPU-hour,
    # the provider, then the site where a machine has the provider's id and the machines' ids for ours.
    assert eight.order_key(2)[:3] == (Decimal("48.00"), Decimal("3.00"), "Zeta")
    assert ORDER[:3] == (HOURLY_PRICE, "price_per_gpu_hour", "provider")
    assert eight.order_key(2)[3][0] == "eight" and eight.order_key(2)[4] == eight.machine_ids


def test_a_cluster_of_geforce_machines_is_sized_at_pcie_where_no_interconnect_is_asked():
    """Each machine's split at its GPU type's interconnect (`release_on`), as a single machine's: a site of
    RTX 3090 machines pays no NCCL or all-reduce buffers on the GPU, an H100 site NVSwitch's 2 GiB; an
    interconnect asked, or one GPU per machine, keeps the release as it is."""
    rtx = site("rtx-site", "RTX 3090", 24_576, ["1.00", "1.10", "1.20", "1.30"], gpus=2)
    assert release_on(AT_0_19, "RTX 3090", 2).interconnect == PCIE
    assert release_on(AT_0_19, "H100 SXM 80GB", 8).interconnect == NVSWITCH
    asked = VllmRelease(parse_version("0.19"), interconnect=PCIE_P2P)
    assert release_on(asked, "RTX 3090", 2) is asked and release_on(AT_0_19, "RTX 3090", 1) is AT_0_19
    llama_8b = model("llama-3-1-8b")
    plans = search_clusters(llama_8b, 16, 16, 8192, 1, [rtx, H100_SITE], release=AT_0_19).plans
    by_gpu = {plan.site.gpu_type: plan for plan in plans}
    communication = {gpu: next((item.bytes for item in plan.need.items if item.name == "Communication buffers"), 0)
                     for gpu, plan in by_gpu.items()}
    assert communication["RTX 3090"] < communication["H100 SXM 80GB"]
    words = " ".join(by_gpu["RTX 3090"].assumptions)
    assert "Each machine's 2 GPUs taken to be connected by PCIe without peer-to-peer" in words
    assert "connected by NVLink through NVSwitch" in " ".join(by_gpu["H100 SXM 80GB"].assumptions)
