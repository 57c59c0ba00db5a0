"""Vast.ai's offers: the answer of its search offers call (`POST /api/v0/bundles/`, `vastai search
offers --raw`), `{"offers": [{...}, …]}` or the bare list.

Each offer is one machine (its `id`, the ask, is the machine id here; one host machine may list several
offers). Units as Vast's REST API gives them: `gpu_ram` in MB per GPU as the driver reports it (the
nvidia-smi figure, which is MiB: 24564 for an RTX 4090); `dph_total` and `min_bid` in USD per hour for
the whole offer (every GPU of it), so divided by `num_gpus`; `duration` in seconds (the CLI shows days);
`reliability2` a fraction from 0 to 1; `geolocation` "Region, CC". `min_bid` is the interruptible price
floor (the lowest bid taken, per GPU-hour once divided) and `reliability2` the reliability, both stored
on the machine. Vast's offers say nothing of notice before an outbid machine is stopped: left empty.
"""
from __future__ import annotations

from sizing.countries import is_country_code

from . import base, units
from .base import FeedError, GpuTypeIndex, MachineRecord, ParsedFeed
from .offers import json_document, machine_record, mapping, names, read_records

FORMAT = "vast-offers"
# What Vast's `reliability2` is, in the words kept beside the figure (Vast computes it; the console
# shows it as given).
RELIABILITY_MEASURES = "Vast.ai reliability2: Vast's reliability score of the host machine (0–1)"


class VastOffers:
    format = FORMAT
    short_name = "vast"

    def parse(
        self, body: bytes, *, provider_slug: str, gpu_types: GpuTypeIndex,
        models: frozenset[str] = frozenset(), tier: str = "secure",
    ) -> ParsedFeed:
        document = json_document(body)
        offers = document.get("offers") if isinstance(document, dict) else document
        if not isinstance(offers, list):
            raise FeedError('the answer has no "offers" list')
        return read_records(
            ((f"offers[{index}]", offer) for index, offer in enumerate(offers)),
            lambda offer: [self.record(offer, gpu_types)],
            lambda offer: offer.get("id"),
        )

    @staticmethod
    def record(offer, gpu_types: GpuTypeIndex) -> MachineRecord:
        offer = mapping(offer, "an offer")
        identifier = base.machine_id(offer.get("id"))
        count = units.gpu_count(offer.get("num_gpus"), "num_gpus")
        memory = units.memory_mib(units.figure(offer, "gpu_ram"), "gpu_ram", "MiB")
        total = units.figure(offer, "dph_total")
        # Listed offers are rentable (the search's default); the field, when there, says so per offer.
        rentable = base.flag(offer["rentable"], "rentable") if "rentable" in offer else True
        country, region = geolocation(offer.get("geolocation"))
        return machine_record(
            machine_id=identifier,
            gpu_names=names(offer.get("gpu_name")),
            gpu_types=gpu_types,
            gpu_count=count,
            memory_mib=memory,
            price_per_gpu_hour=units.price_per_gpu_hour(total, count, "dph_total"),
            available=rentable,
            free_gpus=(count if rentable else 0) if "rentable" in offer else None,
            country=country,
            region=region,
            interruptible_price_per_gpu_hour=units.optional_price_per_gpu_hour(
                units.figure(offer, "min_bid"), count, "min_bid"
            ),
            reliability=units.reliability(offer.get("reliability2"), "reliability2"),
            reliability_measures=RELIABILITY_MEASURES,
            booking_limit_hours=units.whole_hours(units.figure(offer, "duration"),
                                                  "duration"),
        )


def geolocation(value) -> tuple[str, str]:
    """(country, region) from Vast's "Region, CC" ("Sweden, SE", "California, US", or "US" alone): the
    country where the last part is an ISO code, the whole text as the region."""
    if value is None:
        return "", ""
    if not isinstance(value, str):
        raise base.RecordRejected(f"geolocation must be text, got {value!r}"[:200])
    code = value.rsplit(",", 1)[-1].strip().upper()
    country = code if len(code) == 2 and is_country_code(code) else ""
    return country, value.strip()
