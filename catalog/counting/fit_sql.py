"""The fit thresholds of `sizing.fit.fit_thresholds` ((GPUs, MiB per GPU) pairs, fewest GPUs first) as
SQL over `catalog_machine m` or a table with its columns: the engine decides fit from a machine's
memory per GPU and free GPUs alone, and these say the same in the database. Where the thresholds are by
kind of GPU (`sizing.fit.by_kind`), `memory` is the machine's memory raised by its kind
(`catalog.counting.gpu_kinds.memory_sql`)."""
from __future__ import annotations

PLAIN_MEMORY = "m.memory_per_gpu_mib"


def gpus_used_sql(thresholds: tuple[tuple[int, int], ...], memory: str = PLAIN_MEMORY) -> tuple[str, list]:
    """CASE expression: GPUs used on a machine, NULL when the workload does not fit on it."""
    if not thresholds:
        return "NULL::integer", []
    parts, params = [], []
    for gpus, need_mib in thresholds:
        parts.append(f"WHEN {memory} >= %s THEN (CASE WHEN m.free_gpus >= %s THEN %s END)")
        params += [need_mib, gpus, gpus]
    return "(CASE " + " ".join(parts) + " END)", params


def band_sql(
    thresholds: tuple[tuple[int, int], ...], index: int, memory: str = PLAIN_MEMORY
) -> tuple[str, list]:
    """Machines that use exactly the index-th threshold's GPU count."""
    gpus, need_mib = thresholds[index]
    sql, params = f"{memory} >= %s AND m.free_gpus >= %s", [need_mib, gpus]
    if index:
        sql += f" AND {memory} < %s"
        params.append(thresholds[index - 1][1])
    return sql, params
