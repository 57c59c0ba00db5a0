"""What the marketplaces' formats share: reading their documents, one record at a time, into the
console's machine records (`base.MachineRecord`).

An adapter turns each record of its format into machines with `machine_record`; `read_records` runs it
over the document so a record that cannot be read is refused alone, with its reason and its place in
the feed, while every other record goes on.
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import TypeVar

from catalog.gpu_names import gpu_name_key

from . import base
from .base import FeedError, GpuTypeIndex, MachineRecord, ParsedFeed, RecordRejected, RejectedRecord

# A region named "us-…" is in the United States at every cloud that names regions so (AWS, GCP, Lambda).
# Other region names are not read as countries: the console does not guess a location.
US_REGION_PREFIX = "us-"
Record = TypeVar("Record")  # one record of a feed as its format gives it (a JSON value, a CSV row)


def json_document(body: bytes):
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FeedError(f"the feed is not valid JSON: {error}") from error


def json_object(body: bytes) -> dict:
    """A JSON document that must be an object (a marketplace's answer); FeedError otherwise."""
    document = json_document(body)
    if not isinstance(document, dict):
        raise FeedError(f"the answer must be a JSON object, got {type(document).__name__}")
    return document


def csv_rows(body: bytes, required: tuple[str, ...]) -> list[tuple[str, dict[str, str]]]:
    """The rows of a CSV document with a header line, each with its line number ("line 2" is the first
    row); FeedError when it is not UTF-8 or lacks a required column."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FeedError(f"the catalog is not UTF-8 text: {error}") from error
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns = reader.fieldnames or []
    missing = [name for name in required if name not in columns]
    if missing:
        listed = ", ".join(columns)[:200]
        raise FeedError(f"the catalog has no {', '.join(missing)} column (its columns: {listed})")
    try:
        return [(f"line {reader.line_num}", row) for row in reader]
    except csv.Error as error:
        raise FeedError(f"the catalog is not valid CSV at line {reader.line_num}: {error}") from error


def read_records(
    items: Iterable[tuple[str, Record]],
    read: Callable[[Record], list[MachineRecord]],
    id_of: Callable[[Record], object],
) -> ParsedFeed:
    """Reads each (place, record) with `read` (a record may describe several machines, or none); a
    record `read` refuses is listed with its reason, id (`id_of`, when usable) and place. An id seen
    twice keeps its first machine."""
    parsed = ParsedFeed()
    seen: set[str] = set()
    for where, item in items:
        try:
            machines = read(item)
            for machine in machines:
                if machine.provider_machine_id in seen:
                    raise RecordRejected("the id appears more than once in the feed")
        except RecordRejected as rejection:
            parsed.rejected.append(RejectedRecord(_usable_id(item, id_of), str(rejection), where))
            continue
        seen.update(machine.provider_machine_id for machine in machines)
        parsed.records.extend(machines)
    return parsed


def _usable_id(item: Record, id_of: Callable[[Record], object]) -> str | None:
    try:
        return base.machine_id(id_of(item))
    except (RecordRejected, AttributeError, KeyError, TypeError):
        return None


def mapping(value, label: str) -> dict:
    if not isinstance(value, dict):
        raise RecordRejected(f"{label} must be a JSON object, got {type(value).__name__}")
    return value


def names(*values) -> list[str]:
    """The GPU names a record gives, in the order to try them; blanks and repeats left out."""
    found: dict[str, str] = {}
    for value in values:
        if isinstance(value, str) and value.strip():
            found.setdefault(gpu_name_key(value), value.strip())
    return list(found.values())


def country_of_region(region: str) -> str:
    return "US" if region.strip().casefold().startswith(US_REGION_PREFIX) else ""


def machine_record(
    *,
    machine_id: str,
    gpu_names: list[str],
    gpu_types: GpuTypeIndex,
    gpu_count: int,
    memory_mib: int,
    price_per_gpu_hour: Decimal,
    available: bool,
    free_gpus: int | None,
    country: str = "",
    region: str = "",
    interruptible: bool = False,
    interruptible_price_per_gpu_hour: Decimal | None = None,
    reliability: Decimal | None = None,
    reliability_measures: str = "",
    stock: str = "",
    booking_limit_hours: int | None = None,
) -> MachineRecord:
    """One machine in the console's terms. `free_gpus` None: the feed does not count free GPUs, so an
    available offer offers its whole count (and one not available none)."""
    if not gpu_names:
        raise RecordRejected("the GPU name is missing")
    reported = free_gpus is not None
    free = (gpu_count if available else 0) if free_gpus is None else base.free_gpus(free_gpus, gpu_count)
    return MachineRecord(
        provider_machine_id=base.machine_id(machine_id),
        gpu_type=gpu_types.resolve(gpu_names, memory_mib),
        gpu_count=gpu_count,
        free_gpus=free if available else 0,
        memory_mib=memory_mib,
        available=available,
        country=country,
        region=base.region(region),
        price_per_gpu_hour=price_per_gpu_hour,
        interruptible=interruptible,
        booking_limit_hours=booking_limit_hours,
        interruptible_price_per_gpu_hour=interruptible_price_per_gpu_hour,
        reliability=reliability,
        reliability_measures=reliability_measures if reliability is not None else "",
        stock=stock,
        free_gpus_reported=reported,
    )
