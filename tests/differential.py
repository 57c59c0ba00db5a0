"""The queries the differential tests ask and the reference they compare with: the pure engine over
every machine the catalog may offer (the ORM reads them), whatever path the wizard took to answer."""
import random

from catalog.models import GpuType, Machine
from nodelodge.recommendations import fleet
from nodelodge.recommendations.estimate import estimate_for, lower_precision_estimates
from nodelodge.recommendations.query import WorkloadQuery, WorkloadQueryForm
from sizing import matching
from sizing.fit import MEMORY_BEYOND_ANY, fit_thresholds
from sizing.limits import PAGE_LIMIT
from tests import factories
from tests.helpers import LLAMA_8B

QUERIES = [
    LLAMA_8B,
    "workload=inference&model=llama-3-1-70b&precision=16&context=8192&requests=4",
    "workload=inference&model=llama-3-1-405b&precision=16&context=8192&requests=1",
    "workload=inference&model=qwen2-5-32b&precision=8&context=32768&requests=2",
    "workload=inference&model=whisper-large-v3&precision=16&context=4096&requests=4",
    "workload=finetune&model=llama-3-1-8b&precision=16&context=2048&requests=4",
    "workload=image&model=stable-diffusion-xl&precision=16&requests=1",
    "workload=notebook&memory_gib=30",
    # MXFP4 experts under vLLM: each machine fitted at its kind of GPU's need (Marlin, FlashInfer on a
    # B200, Triton on an MI300X: `sizing.fit.by_kind`); asked 16-bit, its 4-bit lower precision is by kind.
    "workload=inference&model=gpt-oss-120b&precision=4&context=131072&requests=19&engine=vllm",
    "workload=inference&model=gpt-oss-20b&precision=16&context=131072&requests=8&engine=vllm",
    # A split under vLLM: each machine fitted at what its GPU type's GPUs are connected by (`sizing.kinds`).
    "workload=inference&model=qwen2-5-32b&precision=8&context=8192&requests=2&engine=vllm",
]
# The GPU types the random fleets draw from, one of each kind of GPU (`sizing.fit.by_kind`): a kernel
# each (Marlin, FlashInfer, Triton on ROCm) on NVSwitch, and Marlin over PCIe with and without
# peer-to-peer.
KIND_GPU_TYPES = ("H100 SXM 80GB", "B200", "MI300X", "L40S", "RTX 3090")
PREFERENCES = [
    "",
    "&tier=secure",
    "&tier=community&max_price=2",
    "&max_price=1.5&budget=3",
    "&budget=0.9",
    "&countries=EU",
    "&countries=CH&tier=secure",
    "&max_price=0.3&tier=community&countries=DE,FR,US",
    "&limit=3",
    "&max_price=10&budget=6.67",
    # The market preference: the counts and walks at each machine's price under the choice.
    "&market=interruptible",
    "&market=any&max_price=1.5&budget=3",
    "&market=interruptible&tier=community&budget=0.9",
    "&market=any&countries=DE,FR,US&max_price=0.3",
]


def parse(query_string: str) -> WorkloadQuery:
    values = dict(part.split("=", 1) for part in query_string.split("&"))
    form = WorkloadQueryForm(values)
    assert form.is_valid(), form.errors
    return WorkloadQuery.from_form(form)


def memory_pool() -> list[int]:
    """Datasheet figures plus every fit threshold of the queries (every kind of GPU's), exactly and one
    MiB either side."""
    pool = set(GpuType.objects.values_list("memory_mib", flat=True))
    for query_string in QUERIES:
        query = parse(query_string)
        breakdowns = [estimate_for(query)[0], *lower_precision_estimates(query, None).values()]
        for breakdown in breakdowns:
            for kind in breakdown.gpu_kinds():
                for _, need in fit_thresholds(kind):
                    pool |= {need - 1, need, need + 1}
    return sorted(m for m in pool if m and 0 < m < MEMORY_BEYOND_ANY)


def engine_over_every_machine(query: WorkloadQuery, now, rng: random.Random) -> matching.Recommendation:
    """The reference: the pure engine over every machine the catalog may offer, counted by the ORM."""
    breakdown, _ = estimate_for(query)
    lower = lower_precision_estimates(query, None)
    recommendation, _ = fleet.recommend_over_every_machine(
        query, breakdown, lower, now, query.limit or PAGE_LIMIT, shuffle=rng.shuffle
    )
    return recommendation


def random_fleet(rng: random.Random, machines: int, now) -> None:
    """factories.random_fleet with memories at every fit threshold of QUERIES, and market terms besides
    the listed prices (`with_market_terms`)."""
    factories.random_fleet(rng, machines, now, memory_pool())
    with_market_terms(Machine.objects.all())
    with_gpu_kinds(Machine.objects.all())


def with_gpu_kinds(machines) -> None:
    """Gives `machines` GPU types of every kind of GPU (KIND_GPU_TYPES), drawn apart from the fleet's
    sequence (seeded by the machine's id at its provider), so every other figure is what it was."""
    types = [GpuType.objects.get(name=name) for name in KIND_GPU_TYPES]
    changed = []
    for machine in machines.order_by("pk"):
        machine.gpu_type = random.Random(f"kinds:{machine.provider_machine_id}").choice(types)
        changed.append(machine)
    Machine.objects.bulk_update(changed, ["gpu_type"])


def with_market_terms(machines) -> None:
    """Gives `machines` markets besides their listed prices: a listing that is interruptible keeps its
    listed price there; about half the others are offered interruptible too, and about one in three has
    a reserved term, at prices cheaper or dearer than the listed one. Drawn apart from the fleet's
    sequence (seeded by the machine's id at its provider), so every other figure is what it was."""
    changed = []
    for machine in machines.order_by("pk"):
        draw = random.Random(f"markets:{machine.provider_machine_id}")
        if machine.interruptible:
            machine.interruptible_price_per_gpu_hour = machine.price_per_gpu_hour
        elif draw.random() < 0.5:
            machine.interruptible_price_per_gpu_hour = draw.choice(factories.PRICES)
        if draw.random() < 0.3:
            machine.reserved_price_per_gpu_hour = draw.choice(factories.PRICES)
            machine.reserved_term_days = 30
        changed.append(machine)
    Machine.objects.bulk_update(
        changed, ["interruptible_price_per_gpu_hour", "reserved_price_per_gpu_hour", "reserved_term_days"]
    )
