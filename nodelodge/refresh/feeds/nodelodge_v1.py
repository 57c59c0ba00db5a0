"""The Node Lodge feed, version 1: one JSON document with every machine of the provider.

    {"provider": "<slug>", "generated_at": "<ISO 8601>", "machines": [
        {"id": "...", "gpu_type": "H100 SXM 80GB", "gpu_count": 8, "free_gpus": 3,
         "memory_mib": 81559, "available": true, "country": "DE", "region": "Frankfurt",
         "price_per_gpu_hour": "2.49", "interruptible": false, "booking_limit_hours": 72,
         "site": "fra-2", "interconnect": "infiniband", "interconnect_gbps": 400}]}

A machine may add `measured_speeds`, speeds measured on it (docs/feed-format.md has the table); each entry
is checked on its own, and a bad one is refused with its reason while the machine and its other
speeds are applied. Leaving the section out keeps the speeds the machine has.

A provider with no machines left says so: `"machines": [], "empty": true`. An empty list without
the flag is taken for a fault at the provider's end, and the refresh marks nothing gone.

Unknown fields are ignored, so providers can add their own without breaking the feed.
"""
from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

from . import base
from .base import FeedError, GpuTypeIndex, MachineRecord, ParsedFeed, RecordRejected, RejectedRecord

FORMAT = "nodelodge-v1"
REQUIRED_FIELDS = ("gpu_type", "gpu_count", "free_gpus", "available", "price_per_gpu_hour")


class NodeLodgeV1:
    format = FORMAT
    short_name = "nodelodge"

    def parse(
        self,
        body: bytes,
        *,
        provider_slug: str,
        gpu_types: GpuTypeIndex,
        models: frozenset[str] = frozenset(),
        tier: str = "secure",
    ) -> ParsedFeed:
        try:
            document = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise FeedError(f"the feed is not valid JSON: {error}") from error
        if not isinstance(document, dict):
            raise FeedError(f"the feed must be a JSON object, got {type(document).__name__}")
        if document.get("provider") != provider_slug:
            raise FeedError(
                f"the feed is for provider {str(document.get('provider'))[:60]!r}, expected {provider_slug!r}"
            )
        machines = document.get("machines")
        if not isinstance(machines, list):
            raise FeedError('the feed has no "machines" list')

        empty = document.get("empty", False)
        if not isinstance(empty, bool):
            raise FeedError(f'"empty" must be true or false, got {str(empty)[:20]!r}')
        if empty and machines:
            count = len(machines)
            raise FeedError(f'"empty" is true but the feed lists {count} machine{"" if count == 1 else "s"}')

        parsed = ParsedFeed(generated_at=_timestamp(document.get("generated_at")), declared_empty=empty)
        seen: set[str] = set()
        now = datetime.now(UTC)
        for item in machines:
            record_id = _id_of(item)
            try:
                record = self.record(item, gpu_types)
                if record.provider_machine_id in seen:
                    raise RecordRejected("the id appears more than once in the feed")
            except RecordRejected as rejection:
                parsed.rejected.append(RejectedRecord(record_id, str(rejection)))
                continue
            seen.add(record.provider_machine_id)
            if "measured_speeds" in item:
                speeds = self.speeds(item["measured_speeds"], record, models, now, parsed.rejected_speeds)
                record = replace(record, measured_speeds=speeds)
            parsed.records.append(record)
        return parsed

    @staticmethod
    def speeds(
        items, record: MachineRecord, models: frozenset[str], now: datetime, rejected: list
    ) -> tuple | None:
        """The machine's measured speeds that pass their checks; the others go to `rejected`."""
        if not isinstance(items, list):
            rejected.append(RejectedRecord(record.provider_machine_id, "measured_speeds must be a list"))
            return None
        speeds = []
        for position, item in enumerate(items):
            try:
                speeds.append(base.measured_speed(item, gpu_count=record.gpu_count, models=models, now=now))
            except RecordRejected as rejection:
                rejected.append(
                    RejectedRecord(record.provider_machine_id, f"measured_speeds[{position}]: {rejection}")
                )
        return tuple(speeds)

    @staticmethod
    def record(item, gpu_types: GpuTypeIndex) -> MachineRecord:
        if not isinstance(item, dict):
            raise RecordRejected(f"a machine must be a JSON object, got {type(item).__name__}")
        identifier = base.machine_id(item.get("id"))
        for name in REQUIRED_FIELDS:
            if name not in item:
                raise RecordRejected(f"{name} is missing")
        count = base.gpu_count(item["gpu_count"])
        link = base.interconnect(item.get("interconnect"), item.get("interconnect_gbps"))
        price = base.price(item["price_per_gpu_hour"])
        interruptible = base.flag(item.get("interruptible", False), "interruptible")
        reliability, measures = base.reliability(item.get("reliability"), item.get("reliability_measures"))
        stock = item.get("stock")
        if stock is not None and not isinstance(stock, str):
            raise RecordRejected(f"stock must be text, got {stock!r}"[:200])
        base.stock_level(stock or "")
        return MachineRecord(
            provider_machine_id=identifier,
            gpu_type=base.gpu_type(item["gpu_type"], gpu_types),
            gpu_count=count,
            free_gpus=base.free_gpus(item["free_gpus"], count),
            memory_mib=base.memory_mib(item.get("memory_mib")),
            available=base.flag(item["available"], "available"),
            country=base.country(item.get("country")),
            region=base.region(item.get("region")),
            price_per_gpu_hour=price,
            interruptible=interruptible,
            **base.market_terms(item, price, interruptible),
            reliability=reliability,
            reliability_measures=measures,
            stock=stock.strip().casefold() if stock else "",
            booking_limit_hours=base.booking_limit_hours(item.get("booking_limit_hours")),
            site=base.site(item.get("site")),
            interconnect=link[0],
            interconnect_gbps=link[1],
        )


def _id_of(item) -> str | None:
    if not isinstance(item, dict):
        return None
    try:
        return base.machine_id(item.get("id"))
    except RecordRejected:
        return None


def _timestamp(value) -> datetime | None:
    # Informational only: a missing or odd generated_at does not make the machines wrong.
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
