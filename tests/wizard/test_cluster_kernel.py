"""Clusters in the answer, on their own page and at booking are sized at their GPU type's MoE kernel
(issue #43): gpt-oss-120b's MXFP4 experts on a site of 8 × B200 machines (compute capability 10.0) load
through FlashInfer's padding, on 8 × H100 through Marlin's, and booking a cluster checks it at the same
kernel the listing sized it for."""
import re
import uuid
from decimal import Decimal

import pytest

from catalog.models import LanguageModel
from nodelodge.launches.booking import launch
from nodelodge.launches.refusals import GroupRefused, LaunchRefused
from nodelodge.recommendations.clusters import cluster_does_not_hold
from nodelodge.recommendations.query import parse_query
from sizing.cluster import cluster_need, over_budget_words, release_on
from sizing.units import MIB
from tests.factories import make_user
from tests.sizing.test_cluster_kernel import B200, GPT_OSS_120B, weights_by_hand

pytestmark = pytest.mark.django_db

GPT_OSS = "workload=inference&model=gpt-oss-120b&precision=4&context=8192&requests=1&clusters=show"
# 516 requests of 131,072 tokens on 2 × (8 × B200): the KV cache leaves room for Marlin's experts
# (163.40 of 164.32 GiB per GPU, each machine's GPUs on NVSwitch) but not for FlashInfer's (164.75).
EDGE = "workload=inference&model=gpt-oss-120b&precision=4&context=131072&requests=516"
B200_SMI_MIB = 183_359
B200_USABLE_MIB = B200_SMI_MIB - 469  # none recorded: nvidia-smi less what the driver keeps
FLASHINFER = "MXFP4 experts through FlashInfer MXFP4 (compute capability 10): "
MARLIN = "MXFP4 experts through Marlin (weight-only MXFP4): "


@pytest.fixture
def b200_site(make_machine):
    """Two whole 8 × B200 machines at one site (iad-3) on 400 Gb/s InfiniBand, $40 per hour each."""
    return [make_machine("B200", gpu_count=8, free_gpus=8, site="iad-3", interconnect="infiniband",
                         interconnect_gbps=400, country="US", region="Virginia", price_per_gpu_hour=Decimal("5.00"))
            for _ in range(2)]


def address(machines, query=GPT_OSS, prefix="/"):
    return f"{prefix}cluster/?{query}&machines={','.join(str(machine.id) for machine in machines)}"


def query_of(text: str):
    return parse_query(dict(pair.split("=") for pair in text.split("&")))


def test_the_api_lists_each_cluster_sized_at_its_own_gpus_kernel(client, b200_site, h100_site):
    body = client.get(f"/api/v1/recommendations?{GPT_OSS}").json()
    by_gpu = {cluster["gpu_type"]: cluster for cluster in body["clusters"]}
    b200, h100 = by_gpu["B200"], by_gpu["H100 SXM 80GB"]
    assert (b200["tensor_parallel"], b200["pipeline_parallel"]) == (h100["tensor_parallel"], h100["pipeline_parallel"]) \
        == (8, 2)
    weights_b200, weights_h100 = b200["items"][0], h100["items"][0]
    assert weights_b200["bytes"] == weights_by_hand(512, 3072) and weights_b200["formula"].startswith(FLASHINFER)
    assert weights_h100["bytes"] == weights_by_hand(384, 3072) and weights_h100["formula"].startswith(MARLIN)
    assert (weights_b200["gib"], weights_h100["gib"]) == (5.66, 4.31)


def test_the_clusters_page_names_flashinfer_on_b200_in_both_languages(client, b200_site):
    page = client.get(address(b200_site)).content.decode()
    assert "Model weights as loaded: <strong class=\"nowrap\">5.66 GiB</strong>" in page
    assert FLASHINFER in page
    german = client.get(address(b200_site, prefix="/de/")).content.decode()
    assert "FlashInfer MXFP4 (Compute Capability 10)" in german


def test_booking_checks_the_cluster_at_its_gpu_types_kernel(client, b200_site):
    query = query_of(EDGE)
    model_row = LanguageModel.objects.get(slug="gpt-oss-120b")
    release = release_on(query.vllm_release, "B200", 8)
    shape = {"gpus_per_machine": 8, "machines": 2, "usable_bytes": B200_USABLE_MIB * MIB, "release": release}
    through_marlin = cluster_need(GPT_OSS_120B, 4, 16, 131072, 516, **shape)
    through_flashinfer = cluster_need(GPT_OSS_120B, 4, 16, 131072, 516, gpu=B200, **shape)
    assert through_marlin.fits and not through_flashinfer.fits  # the case where the kernel decides
    why = cluster_does_not_hold(query, model_row, gpu_type="B200", gpus_per_machine=8,
                                memory_per_gpu_mib=B200_SMI_MIB, machines=2)
    assert why == over_budget_words(2, 8, "B200", through_flashinfer)
    assert "164.75 GiB per GPU" in why and "164.32 GiB" in why
    # The cluster's own page says the same of these machines: the figure the listing sizes them at.
    page = client.get(address(b200_site, EDGE)).content.decode()
    assert re.search(r'data-testid="cluster-problem">([^<]*)<', page).group(1).replace("&#x27;", "'") == why
    # Booking them is refused with it, whatever the client sent.
    pairs = [(machine.pk, 8) for machine in b200_site]
    with pytest.raises(GroupRefused) as refused:
        launch(make_user(), machines=pairs, shown_price_per_hour=Decimal("80.00"), query_string=EDGE,
               idempotency_key=uuid.uuid4().hex, kind="cluster")
    assert refused.value.code == LaunchRefused.NO_LONGER_FITS and why in refused.value.message


def test_booking_a_cluster_the_kernel_leaves_room_on_goes_through(b200_site):
    query = query_of(EDGE.replace("requests=516", "requests=500"))
    model_row = LanguageModel.objects.get(slug="gpt-oss-120b")
    assert cluster_does_not_hold(query, model_row, gpu_type="B200", gpus_per_machine=8,
                                 memory_per_gpu_mib=B200_SMI_MIB, machines=2) is None
