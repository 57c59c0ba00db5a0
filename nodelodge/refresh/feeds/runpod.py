"""RunPod's GPU types: the answer of its GraphQL query

    query { gpuTypes { id displayName memoryInGb secureCloud communityCloud maxGpuCount
        maxGpuCountSecureCloud maxGpuCountCommunityCloud securePrice communityPrice secureSpotPrice
        communitySpotPrice lowestPrice(input: {gpuCount: 1}) { stockStatus maxUnreservedGpuCount
        countryCode } } }

as `{"data": {"gpuTypes": [{...}, …]}}`. Each GPU type is one offer, read for the provider's tier:
secure cloud prices for a Secure provider, community cloud prices for a Community one. Units:
`memoryInGb` is the marketed size per GPU, GiB as GPU memory is sold (80 for an H100); prices are USD
per GPU per hour already; the largest pod (`maxGpuCount…`) is the machine's GPU count. Stock words
(`lowestPrice.stockStatus`: High, Medium, Low; null when none is left) say whether it is available;
`maxUnreservedGpuCount`, where given, how many GPUs are free (at most one pod's). The spot price is the
interruptible price, stored beside the on-demand one; RunPod's answer gives no notice time (left empty).
"""
from __future__ import annotations

from . import base, units
from .base import FeedError, GpuTypeIndex, MachineRecord, ParsedFeed, RecordRejected
from .offers import json_object, machine_record, mapping, names, read_records

FORMAT = "runpod-gpu-types"


class RunPodGpuTypes:
    format = FORMAT
    short_name = "runpod"

    def parse(
        self, body: bytes, *, provider_slug: str, gpu_types: GpuTypeIndex,
        models: frozenset[str] = frozenset(), tier: str = "secure",
    ) -> ParsedFeed:
        document = json_object(body)
        errors = document.get("errors")
        if errors:  # GraphQL answers its errors beside (or instead of) the data
            first = errors[0] if isinstance(errors, list) else errors
            first = first.get("message", first) if isinstance(first, dict) else first
            raise FeedError(f"the GraphQL answer reports an error: {str(first)[:200]}")
        data = document.get("data")
        listed = data.get("gpuTypes") if isinstance(data, dict) else None
        if not isinstance(listed, list):
            raise FeedError('the answer has no "data.gpuTypes" list')
        cloud = "secure" if tier == "secure" else "community"
        return read_records(
            ((f"gpuTypes[{index}]", item) for index, item in enumerate(listed)),
            lambda item: [self.record(item, gpu_types, cloud)],
            lambda item: item.get("id"),
        )

    @staticmethod
    def record(item, gpu_types: GpuTypeIndex, cloud: str) -> MachineRecord:
        item = mapping(item, "a GPU type")
        identifier = base.machine_id(item.get("id"))
        Cloud = cloud.capitalize()  # noqa: N806 - as RunPod's field names spell it
        if item.get(f"{cloud}Cloud") is False:
            raise RecordRejected(f"not offered on RunPod's {cloud} cloud ({cloud}Cloud is false)")
        count_field = f"maxGpuCount{Cloud}Cloud"
        if item.get(count_field) is None:
            count_field = "maxGpuCount"
        count = units.gpu_count(item.get(count_field), count_field)
        memory = units.memory_mib(units.figure(item, "memoryInGb"), "memoryInGb", "GiB")
        price = units.price_per_gpu_hour(
            units.figure(item, f"{cloud}Price"), 1, f"{cloud}Price"
        )
        lowest = item.get("lowestPrice")
        if lowest is None:  # not asked for: nothing said of stock, so it is offered as listed
            stock, in_stock, free, country = "", True, None, ""
        else:
            lowest = mapping(lowest, "lowestPrice")
            stock, in_stock = units.stock(lowest.get("stockStatus"), "lowestPrice.stockStatus")
            unreserved = lowest.get("maxUnreservedGpuCount")
            free = None if unreserved is None else min(
                _not_negative(unreserved, "lowestPrice.maxUnreservedGpuCount"), count
            )
            country = base.country(lowest.get("countryCode"))
        return machine_record(
            machine_id=identifier,
            gpu_names=names(item.get("id"), item.get("displayName")),
            gpu_types=gpu_types,
            gpu_count=count,
            memory_mib=memory,
            price_per_gpu_hour=price,
            available=in_stock,
            free_gpus=free,
            country=country,
            interruptible_price_per_gpu_hour=units.optional_price_per_gpu_hour(
                units.figure(item, f"{cloud}SpotPrice"), 1, f"{cloud}SpotPrice"
            ),
            stock=stock,
        )


def _not_negative(value, label: str) -> int:
    number = units.whole(value, label)
    if number < 0:
        raise RecordRejected(f"{label} cannot be negative, got {number}")
    return number
