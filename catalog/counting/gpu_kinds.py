"""The kind of GPU a machine is fitted by, as SQL, where a workload's need depends on it (`sizing.fit`:
vLLM's MXFP4 experts, padded for the MoE kernel each GPU runs): the place in
`sizing.calculators.vllm_loading.MOE_KERNELS` of the kernel `mxfp4_kernel` picks for a GPU type, from its
architecture and compute capability as `sizing.engine_support.gpu_architecture` reads them. Compiled
from the rule's own data, so the two cannot disagree (a test holds them to it on every architecture).

The kept counts keep it per shape (`fleet_counts`, column `moe_kernel`); the walks over machines look it
up by GPU type. Where the query's thresholds are by kind (`sizing.fit.by_kind`), a machine's memory is
read raised by its kind's range (`memory_sql`)."""

from __future__ import annotations

from sizing.calculators.vllm_loading import (
    FLASHINFER_BELOW,
    FLASHINFER_FROM,
    FLASHINFER_SM100,
    MOE_KERNELS,
    ROCM_TRITON,
)
from sizing.engine_support import AMD, FAMILIES, NVIDIA
from sizing.fit import KIND_MEMORY_STEP

KERNEL_COLUMN = "moe_kernel"
# A compute capability as `sizing.engine_support.parse_compute_capability` reads one (after trimming).
CAPABILITY_PATTERN = r"^[0-9]{1,2}\.[0-9]$"


def _quoted(values: list[str]) -> str:
    return ", ".join("'" + value.replace("'", "''") + "'" for value in values)


def kernel_sql(g: str) -> str:
    """The kernel's place over a catalog_gputype row `g`: AMD architectures (no compute capability)
    load through Triton on ROCm; an NVIDIA architecture at a compute capability from FLASHINFER_FROM and
    below FLASHINFER_BELOW through FlashInfer; every other GPU, or one whose fields name no architecture
    the rule knows, through Marlin (place 0)."""
    amd = [key for key, family in FAMILIES.items() if family.maker == AMD]
    flashinfer: dict[str, list[str]] = {}
    for key, family in FAMILIES.items():
        if family.maker != NVIDIA:
            continue
        for major in range(FLASHINFER_FROM[0], FLASHINFER_BELOW[0] + 1):
            for minor in range(10):
                if FLASHINFER_FROM <= (major, minor) < FLASHINFER_BELOW and family.holds((major, minor)):
                    flashinfer.setdefault(key, []).append(f"{major}.{minor}")
    capability = f"btrim({g}.compute_capability)"
    cases = [
        f"WHEN {g}.architecture IN ({_quoted(amd)}) AND {capability} !~ '{CAPABILITY_PATTERN}' "
        f"THEN {MOE_KERNELS.index(ROCM_TRITON)}"
    ]
    cases += [
        f"WHEN {g}.architecture = '{key}' AND {capability} IN ({_quoted(capabilities)}) "
        f"THEN {MOE_KERNELS.index(FLASHINFER_SM100)}"
        for key, capabilities in flashinfer.items()
    ]
    return f"CASE {' '.join(cases)} ELSE 0 END"


def machine_kernel_sql(m: str = "m") -> str:
    """The kernel's place of a catalog_machine row `m`, from its GPU type."""
    return f"(SELECT {kernel_sql('g')} FROM catalog_gputype g WHERE g.id = {m}.gpu_type_id)"  # noqa: S608  # nosec B608


def memory_sql(by_kind: bool, kernel: str, m: str = "m") -> str:
    """A machine's (or a shape's) memory per GPU as the query's thresholds read it: as it is, or, where
    they are by kind, raised by its kind's range (`kernel`: the SQL of its kind's place)."""
    if not by_kind:
        return f"{m}.memory_per_gpu_mib"
    return f"({m}.memory_per_gpu_mib::bigint + ({kernel})::bigint * {KIND_MEMORY_STEP})"


def shape_memory_sql(by_kind: bool) -> str:
    """`memory_sql` over a kept-counts row `m`, whose kind is kept beside it."""
    return memory_sql(by_kind, f"m.{KERNEL_COLUMN}")


def walked_machine_kernel_sql(m: str = "m") -> str:
    """The kernel's place of a catalog_machine row `m`, for statements that read many machines (the
    walks, the speed rows): each place's GPU types listed once per statement (uncorrelated subqueries,
    worked out before the first row), and each machine's GPU type looked up in those lists. Looked up
    per machine instead (`machine_kernel_sql`), gpt-oss's walks took 2 to 3 times as long."""
    kernel = kernel_sql("g")
    places = " ".join(
        f"WHEN {m}.gpu_type_id = ANY(ARRAY(SELECT g.id FROM catalog_gputype g "  # noqa: S608  # nosec B608
        f"WHERE ({kernel}) = {place})) THEN {place}"
        for place in range(1, len(MOE_KERNELS))
    )
    return f"(CASE {places} ELSE 0 END)"


def machine_memory_sql(by_kind: bool) -> str:
    """`memory_sql` over a catalog_machine row `m`, its kind looked up by its GPU type."""
    return memory_sql(by_kind, walked_machine_kernel_sql("m"))
