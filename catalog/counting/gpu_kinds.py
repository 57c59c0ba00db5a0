"""The kind of GPU a machine is fitted by, as SQL, where a workload's need depends on it (`sizing.kinds`,
`sizing.fit`): the place in `sizing.calculators.vllm_loading.MOE_KERNELS` of the kernel `mxfp4_kernel`
picks for a GPU type, from its architecture and compute capability as
`sizing.engine_support.gpu_architecture` reads them (vLLM's MXFP4 experts), and the place in
`sizing.calculators.vllm_interconnect.INTERCONNECTS` of what its machines' GPUs are connected by, from its
name as `interconnect_of_gpu` reads it (vLLM's split). Compiled from the rules' own data, so the two
cannot disagree (tests hold them to it on every architecture and every GPU type of the catalog).

The catalog's kind of a GPU type is both places, in the fullest space (`CATALOG_KINDS`: kernel ×
interconnects + fabric); a query's kind, in the space of its thresholds, is a division or a remainder of
it (`kind_sql`). PostgreSQL keeps it on each GPU type (column `gpu_kind` of catalog_gputype, generated
from `catalog_kind_sql` through the function `GPU_KIND_FUNCTION`, so no write of a GPU type can leave it
behind); the kept counts join each machine written to it and keep it per shape (`fleet_counts`, column
`gpu_kind`), and the walks over machines look it up by GPU type. Where the query's thresholds are by kind
(`sizing.fit.by_kind`), a machine's memory is read raised by its kind's range (`memory_sql`)."""

from __future__ import annotations

from sizing.calculators.vllm_interconnect import DEFAULT_INTERCONNECT, INTERCONNECT_RULE, INTERCONNECTS
from sizing.calculators.vllm_loading import (
    FLASHINFER_BELOW,
    FLASHINFER_FROM,
    FLASHINFER_SM100,
    MOE_KERNELS,
    ROCM_TRITON,
)
from sizing.engine_support import AMD, FAMILIES, NVIDIA
from sizing.fit import KIND_MEMORY_STEP
from sizing.kinds import NO_KINDS, KindSpace

KIND_COLUMN = "gpu_kind"
# The catalog's kind of a GPU type as an SQL function of its row's fields (immutable, so the column can
# be generated from it), and the fields it reads, in the order it takes them.
GPU_KIND_FUNCTION = "catalog_fleet_gpu_kind"
GPU_KIND_FIELDS = ("name", "architecture", "compute_capability")
# Every kind a GPU type may be: what the catalog keeps (a query's narrower space is read from it).
CATALOG_KINDS = KindSpace(len(MOE_KERNELS), len(INTERCONNECTS))
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


def fabric_sql(g: str) -> str:
    """The interconnect's place over a catalog_gputype row `g`: `interconnect_of_gpu`'s rule on its name
    (white space trimmed, case aside; PostgreSQL writes Python's word boundary `\\b` as `\\y`)."""
    name = rf"regexp_replace({g}.name, '^\s+|\s+$', '', 'g')"
    cases = " ".join(
        f"WHEN {name} ~* '{pattern.replace(chr(92) + 'b', chr(92) + 'y')}' THEN {INTERCONNECTS.index(found)}"
        for pattern, found in INTERCONNECT_RULE
    )
    return f"CASE {cases} ELSE {INTERCONNECTS.index(DEFAULT_INTERCONNECT)} END"


def catalog_kind_sql(g: str) -> str:
    """A catalog_gputype row `g`'s kind in `CATALOG_KINDS`: kernel place × interconnects + fabric place."""
    return f"(({kernel_sql(g)}) * {CATALOG_KINDS.fabrics} + ({fabric_sql(g)}))"


def kind_sql(space: KindSpace, kind: str) -> str:
    """A kind of `CATALOG_KINDS` (SQL `kind`) as `space` numbers it (`KindSpace.index`)."""
    if space.kernels > 1 and space.fabrics > 1:
        return f"({kind})"
    if space.kernels > 1:
        return f"(({kind}) / {CATALOG_KINDS.fabrics})"
    if space.fabrics > 1:
        return f"mod({kind}, {CATALOG_KINDS.fabrics})"  # not %: statements carry %s placeholders
    return "0"


def gpu_kind_function_sql() -> str:
    """The function `GPU_KIND_FUNCTION`: `catalog_kind_sql` over its arguments, named as the fields of a
    catalog_gputype row (PostgreSQL reads `function.argument` as the argument)."""
    arguments = ", ".join(f"{field} varchar" for field in GPU_KIND_FIELDS)
    return (
        f"CREATE FUNCTION {GPU_KIND_FUNCTION}({arguments}) RETURNS smallint "
        "LANGUAGE sql IMMUTABLE PARALLEL SAFE "
        f"AS $fn$SELECT ({catalog_kind_sql(GPU_KIND_FUNCTION)})::smallint$fn$"
    )


def gpu_type_kind_column_sql() -> str:
    """The expression catalog_gputype's column `KIND_COLUMN` is generated by, as PostgreSQL writes it."""
    return f"{GPU_KIND_FUNCTION}({', '.join(GPU_KIND_FIELDS)})"


def memory_sql(space: KindSpace, kind: str, m: str = "m") -> str:
    """A machine's (or a shape's) memory per GPU as the query's thresholds read it: as it is, or, where
    they are by kind (`space` of more than one), raised by its kind's range (`kind`: the SQL of its kind,
    already as `space` numbers it)."""
    if not space:
        return f"{m}.memory_per_gpu_mib"
    return f"({m}.memory_per_gpu_mib::bigint + ({kind})::bigint * {KIND_MEMORY_STEP})"


def shape_memory_sql(space: KindSpace = NO_KINDS) -> str:
    """`memory_sql` over a kept-counts row `m`, whose catalog kind is kept beside it."""
    return memory_sql(space, kind_sql(space, f"m.{KIND_COLUMN}"))


def walked_machine_kind_sql(space: KindSpace, m: str = "m") -> str:
    """The kind in `space` of a catalog_machine row `m`, for statements that read many machines (the
    walks, the speed rows): the GPU types of each kind (as each keeps it) listed once per statement
    (uncorrelated subqueries, worked out before the first row), and each machine's GPU type looked up in
    those lists. Looked up per machine instead (a correlated subquery), gpt-oss's walks took 2 to 3 times
    as long."""
    kind = kind_sql(space, f"g.{KIND_COLUMN}")
    places = " ".join(
        f"WHEN {m}.gpu_type_id = ANY(ARRAY(SELECT g.id FROM catalog_gputype g "  # noqa: S608  # nosec B608
        f"WHERE {kind} = {place})) THEN {place}"
        for place in range(1, space.size)
    )
    return f"(CASE {places} ELSE 0 END)" if places else "0"


def machine_memory_sql(space: KindSpace = NO_KINDS, m: str = "m") -> str:
    """`memory_sql` over a catalog_machine row `m`, its kind looked up by its GPU type."""
    return memory_sql(space, walked_machine_kind_sql(space, m), m)
