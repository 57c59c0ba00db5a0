"""Lambda's instance types: the answer of `GET /api/v1/instance-types`,

    {"data": {"gpu_8x_h100_sxm5": {"instance_type": {"name": "gpu_8x_h100_sxm5",
        "description": "8x H100 (80 GB SXM5)", "gpu_description": "H100 (80 GB SXM5)",
        "price_cents_per_hour": 2392, "specs": {"vcpus": 208, "memory_gib": 1800, "storage_gib": 24780,
        "gpus": 8}}, "regions_with_capacity_available": [{"name": "us-east-1", "description": "..."}]}}}

One machine per instance type and region with capacity (id "<type>@<region>"), free in full; a type with
capacity nowhere is one machine (id "<type>") that is not available. Units: `price_cents_per_hour` is US
cents per hour for the whole instance, so divided by 100 and by `specs.gpus`; the memory per GPU is the
GB figure in `gpu_description`, GiB as GPU memory is sold. The GPU is looked up by the type's name, then
by its GPU part ("h100_sxm5" of "gpu_8x_h100_sxm5"). Regions named "us-…" are in the US; other regions'
countries are left unknown.
"""
from __future__ import annotations

import re
from functools import partial

from . import base, units
from .base import FeedError, GpuTypeIndex, MachineRecord, ParsedFeed, RecordRejected
from .offers import country_of_region, json_document, machine_record, mapping, names, read_records

FORMAT = "lambda-instance-types"
# "H100 (80 GB SXM5)", "A10 (24 GB PCIe)": the memory per GPU, in GB, in parentheses.
_MEMORY = re.compile(r"\(\s*(\d+(?:\.\d+)?)\s*GB\b", re.IGNORECASE)
# "gpu_8x_h100_sxm5" -> "h100_sxm5"
_GPU_PART = re.compile(r"^gpu_\d+x_", re.IGNORECASE)


class LambdaInstanceTypes:
    format = FORMAT
    short_name = "lambda"

    def parse(
        self, body: bytes, *, provider_slug: str, gpu_types: GpuTypeIndex,
        models: frozenset[str] = frozenset(), tier: str = "secure",
    ) -> ParsedFeed:
        document = json_document(body)
        data = document.get("data") if isinstance(document, dict) else None
        if not isinstance(data, dict):
            raise FeedError('the answer has no "data" object of instance types')
        return read_records(
            ((f"data[{str(name)[:60]!r}]", (name, entry)) for name, entry in data.items()),
            lambda pair: self.records(pair[1], gpu_types),
            lambda pair: pair[0],
        )

    @staticmethod
    def records(entry, gpu_types: GpuTypeIndex) -> list[MachineRecord]:
        entry = mapping(entry, "an instance type entry")
        kind = mapping(entry.get("instance_type"), "instance_type")
        name = base.machine_id(kind.get("name"))
        specs = mapping(kind.get("specs"), "instance_type.specs")
        count = units.gpu_count(specs.get("gpus"), "specs.gpus")
        memory = units.memory_mib(_memory_gib(kind.get("gpu_description")), "gpu_description", "GiB")
        cents = units.figure(kind, "price_cents_per_hour")
        price = units.price_per_gpu_hour(
            None if cents is None else units.dollars_from_cents(cents), count, "price_cents_per_hour"
        )
        regions = entry.get("regions_with_capacity_available", [])
        if not isinstance(regions, list):
            raise RecordRejected("regions_with_capacity_available must be a list")
        offer = partial(
            machine_record, gpu_names=names(name, _GPU_PART.sub("", name)), gpu_types=gpu_types,
            gpu_count=count, memory_mib=memory, price_per_gpu_hour=price,
        )
        if not regions:
            return [offer(machine_id=name, available=False, free_gpus=0)]
        machines = []
        for region in regions:
            region_name = base.region(mapping(region, "a region").get("name"))
            if not region_name:
                raise RecordRejected("a region with capacity has no name")
            machines.append(offer(
                machine_id=f"{name}@{region_name}", available=True, free_gpus=None,
                country=country_of_region(region_name), region=region_name,
            ))
        return machines


def _memory_gib(description):
    if not isinstance(description, str):
        return None
    found = _MEMORY.search(description)
    return None if found is None else units.number(found.group(1), "gpu_description")
