"""gpuhunt's offers: a catalog CSV as gpuhunt publishes one per provider (columns instance_name,
location, price, cpu, memory, gpu_count, gpu_name, gpu_memory, spot, disk_size, gpu_vendor, …), or the
JSON list of its `CatalogItem`s (the same fields, with `provider`).

One machine per offer with a GPU (id "[<provider>/]<instance_name>@<location>", "/spot" added for a spot
offer); offers without a GPU are skipped. gpuhunt lists prices, not stock, so each machine is available
in full. Units: `price` is USD per hour for the whole instance, so divided by `gpu_count`; `gpu_memory`
is GB per GPU (gpuhunt's GB are GiB: the Vast figure 24564 MiB becomes 24). A spot offer is an
interruptible machine at that price. Locations named "us-…" are in the US; other locations' countries
are left unknown.
"""
from __future__ import annotations

from . import units
from .base import FeedError, GpuTypeIndex, MachineRecord, ParsedFeed, RecordRejected
from .offers import country_of_region, csv_rows, json_document, machine_record, mapping, names, read_records

FORMAT = "gpuhunt-offers"
REQUIRED_COLUMNS = ("instance_name", "location", "price", "gpu_count", "gpu_name", "gpu_memory", "spot")


class GpuhuntOffers:
    format = FORMAT
    short_name = "gpuhunt"

    def parse(
        self, body: bytes, *, provider_slug: str, gpu_types: GpuTypeIndex,
        models: frozenset[str] = frozenset(), tier: str = "secure",
    ) -> ParsedFeed:
        if body.lstrip()[:1] in (b"[", b"{"):
            document = json_document(body)
            if not isinstance(document, list):
                raise FeedError("gpuhunt's JSON must be a list of offers")
            items = [(f"[{index}]", item) for index, item in enumerate(document)]
        else:
            items = list(csv_rows(body, REQUIRED_COLUMNS))
        return read_records(items, lambda item: self.records(item, gpu_types), machine_id_of)

    @staticmethod
    def records(item, gpu_types: GpuTypeIndex) -> list[MachineRecord]:
        item = mapping(item, "an offer")
        if str(item.get("gpu_count")).strip() in ("0", "0.0") or _blank(item.get("gpu_name")):
            return []  # a CPU offer
        count = units.gpu_count(item.get("gpu_count"), "gpu_count")
        memory = units.memory_mib(units.figure(item, "gpu_memory"), "gpu_memory", "GiB")
        price = units.price_per_gpu_hour(units.figure(item, "price"), count, "price")
        spot = spot_flag(item.get("spot"))
        location = item.get("location")
        if location is not None and not isinstance(location, str):
            raise RecordRejected(f"location must be text, got {location!r}"[:200])
        return [machine_record(
            machine_id=machine_id_of(item),
            gpu_names=names(item.get("gpu_name")),
            gpu_types=gpu_types,
            gpu_count=count,
            memory_mib=memory,
            price_per_gpu_hour=price,
            available=True,
            free_gpus=None,
            country=country_of_region(location or ""),
            region=location or "",
            interruptible=spot,
            interruptible_price_per_gpu_hour=price if spot else None,
        )]


def machine_id_of(item) -> str:
    provider = str(item.get("provider") or "").strip()
    name = f"{str(item.get('instance_name') or '').strip()}@{str(item.get('location') or '').strip()}"
    spot = "/spot" if _is_true(item.get("spot")) else ""
    return f"{provider}/{name}{spot}" if provider else f"{name}{spot}"


def spot_flag(value) -> bool:
    """gpuhunt writes the flag as JSON true/false, or "True"/"False" in its CSV."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip() in ("True", "False", "true", "false"):
        return value.strip().lower() == "true"
    raise RecordRejected(f"spot must be True or False, got {value!r}"[:200])


def _is_true(value) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())



