"""SkyPilot's catalog: a cloud's `vms.csv` (columns InstanceType, AcceleratorName, AcceleratorCount,
vCPUs, MemoryGiB, Price, SpotPrice, Region, AvailabilityZone, GpuInfo, in any order).

One machine per row with an accelerator (id "<InstanceType>@<AvailabilityZone or Region>"); rows
without one are CPU instances and are skipped. A catalog lists what can be launched, not stock, so each
machine is available in full. Units: `Price` and `SpotPrice` are USD per hour for the whole instance,
so divided by `AcceleratorCount` (written 8.0; a fraction of a GPU is refused); the memory per GPU is
GpuInfo's `Gpus[0].MemoryInfo.SizeInMiB` (MiB), else its `TotalGpuMemoryInMiB` over the count
(`MemoryGiB` is the host's memory, not the GPU's). GpuInfo is a Python literal (single quotes) as
SkyPilot writes it. `SpotPrice` is the interruptible price, stored beside the on-demand one. Regions
named "us-…" are in the US; other regions' countries are left unknown.
"""
from __future__ import annotations

import ast
from decimal import Decimal

from . import units
from .base import GpuTypeIndex, MachineRecord, ParsedFeed
from .offers import country_of_region, csv_rows, machine_record, names, read_records

FORMAT = "skypilot-catalog"
REQUIRED_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
# GpuInfo of a machine is a short literal; a longer cell is not read (literal_eval's cost grows with it).
MAX_GPU_INFO_CHARACTERS = 4_000


class SkyPilotCatalog:
    format = FORMAT
    short_name = "skypilot"

    def parse(
        self, body: bytes, *, provider_slug: str, gpu_types: GpuTypeIndex,
        models: frozenset[str] = frozenset(), tier: str = "secure",
    ) -> ParsedFeed:
        return read_records(
            csv_rows(body, REQUIRED_COLUMNS),
            lambda row: self.records(row, gpu_types),
            machine_id_of,
        )

    @staticmethod
    def records(row: dict[str, str], gpu_types: GpuTypeIndex) -> list[MachineRecord]:
        accelerator = (row.get("AcceleratorName") or "").strip()
        if not accelerator:
            return []  # a CPU instance
        count = units.gpu_count(row.get("AcceleratorCount"), "AcceleratorCount")
        info = gpu_info(row.get("GpuInfo"))
        memory = units.memory_mib(memory_per_gpu_mib(info, count), "GpuInfo memory", "MiB")
        region = (row.get("Region") or "").strip()
        return [machine_record(
            machine_id=machine_id_of(row),
            gpu_names=names(accelerator, _first_gpu(info).get("Name")),
            gpu_types=gpu_types,
            gpu_count=count,
            memory_mib=memory,
            price_per_gpu_hour=units.price_per_gpu_hour(
                units.figure(row, "Price"), count, "Price"
            ),
            available=True,
            free_gpus=None,
            country=country_of_region(region),
            region=region,
            interruptible_price_per_gpu_hour=units.optional_price_per_gpu_hour(
                units.figure(row, "SpotPrice"), count, "SpotPrice"
            ),
        )]


def machine_id_of(row: dict[str, str]) -> str:
    kind = (row.get("InstanceType") or "").strip() or (row.get("AcceleratorName") or "").strip()
    place = (row.get("AvailabilityZone") or "").strip() or (row.get("Region") or "").strip()
    return f"{kind}@{place}"


def gpu_info(cell: str | None) -> dict:
    """GpuInfo's dictionary, or {} where the cell is empty, too long or not a dictionary (some clouds
    write the accelerator's name there)."""
    if not cell or len(cell) > MAX_GPU_INFO_CHARACTERS:
        return {}
    try:
        value = ast.literal_eval(cell.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _first_gpu(info: dict) -> dict:
    gpus = info.get("Gpus")
    return gpus[0] if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict) else {}


def memory_per_gpu_mib(info: dict, count: int) -> Decimal | None:
    memory = _first_gpu(info).get("MemoryInfo")
    if isinstance(memory, dict) and memory.get("SizeInMiB") is not None:
        return units.number(memory["SizeInMiB"], "GpuInfo SizeInMiB")
    total = info.get("TotalGpuMemoryInMiB")
    if total is not None:
        return units.number(total, "GpuInfo TotalGpuMemoryInMiB") / count
    return None
