"""Prime Intellect's availability: the answer of `GET /api/v1/availability` (GPU type -> list of
offers) or of `GET /api/v1/availability/gpus` (`{"items": [...]}`). Each offer:

    {"cloudId": "...", "gpuType": "H100_80GB", "socket": "SXM5", "provider": "...", "dataCenter": "...",
     "country": "US", "gpuCount": 8, "gpuMemory": 80, "stockStatus": "Available",
     "security": "secure_cloud", "prices": {"onDemand": 19.12, "communityPrice": null,
     "isVariable": false, "currency": "USD"}, "isSpot": false, "prepaidTime": null}

One machine per offer (id "<provider>/<cloudId>/<dataCenter>/<gpuCount>", "/spot" added for a spot
offer). Units: `gpuMemory` is GB per GPU, GiB as GPU memory is sold; the price is USD per hour for the
whole offer (`communityPrice` where given, else `onDemand`, as Prime's own CLI picks it), so divided by
`gpuCount`. Stock words (Available, High, Medium, Low; Unavailable) say whether it is available. A spot
offer is an interruptible machine at that price; a prepaid offer (`prepaidTime`) is refused, as the
console has no place for prepaid terms yet.
"""
from __future__ import annotations

from . import base, units
from .base import FeedError, GpuTypeIndex, MachineRecord, ParsedFeed, RecordRejected
from .offers import json_object, machine_record, mapping, names, read_records

FORMAT = "prime-availability"
CURRENCY = "USD"


class PrimeAvailability:
    format = FORMAT
    short_name = "prime"

    def parse(
        self, body: bytes, *, provider_slug: str, gpu_types: GpuTypeIndex,
        models: frozenset[str] = frozenset(), tier: str = "secure",
    ) -> ParsedFeed:
        document = json_object(body)
        if isinstance(document.get("items"), list):
            items = [(f"items[{index}]", offer) for index, offer in enumerate(document["items"])]
        else:
            items = []
            for gpu_type, offers in document.items():
                if not isinstance(offers, list):
                    raise FeedError(f'the answer\'s "{str(gpu_type)[:40]}" is not a list of offers')
                items += [(f"{str(gpu_type)[:40]}[{index}]", offer) for index, offer in enumerate(offers)]
        return read_records(items, lambda offer: [self.record(offer, gpu_types)], machine_id_of)

    @staticmethod
    def record(offer, gpu_types: GpuTypeIndex) -> MachineRecord:
        offer = mapping(offer, "an offer")
        if offer.get("prepaidTime"):
            term = str(offer["prepaidTime"])[:20]
            raise RecordRejected(
                f"a prepaid offer (prepaidTime {term}): the console has no place for prepaid terms yet"
            )
        count = units.gpu_count(offer.get("gpuCount"), "gpuCount")
        memory = units.memory_mib(units.figure(offer, "gpuMemory"), "gpuMemory", "GiB")
        prices = mapping(offer.get("prices"), "prices")
        currency = prices.get("currency")
        if currency is not None and currency != CURRENCY:
            raise RecordRejected(f"prices are in {str(currency)[:10]}; the console keeps {CURRENCY}")
        field = "communityPrice" if prices.get("communityPrice") is not None else "onDemand"
        price = units.price_per_gpu_hour(
            units.optional_number(prices.get(field), f"prices.{field}"), count, f"prices.{field}"
        )
        stock, in_stock = units.stock(offer.get("stockStatus"), "stockStatus")
        spot = base.flag(offer.get("isSpot") or False, "isSpot")
        gpu_type, socket = offer.get("gpuType"), offer.get("socket")
        return machine_record(
            machine_id=machine_id_of(offer),
            gpu_names=names(f"{gpu_type} {socket}" if isinstance(gpu_type, str) and isinstance(socket, str)
                            else None, gpu_type),
            gpu_types=gpu_types,
            gpu_count=count,
            memory_mib=memory,
            price_per_gpu_hour=price,
            available=in_stock,
            free_gpus=None,
            country=base.country(offer.get("country")),
            region=offer.get("dataCenter") or "",
            interruptible=spot,
            interruptible_price_per_gpu_hour=price if spot else None,
            stock=stock,
        )


def machine_id_of(offer) -> str:
    parts = [offer.get("provider"), offer.get("cloudId"), offer.get("dataCenter"), offer.get("gpuCount")]
    spot = "/spot" if offer.get("isSpot") is True else ""
    return "/".join(str(part).strip() for part in parts if part not in (None, "")) + spot
