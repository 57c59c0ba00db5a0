"""Plain values the matching engine works on: machines on offer and the user's preferences."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Literal

Tier = Literal["secure", "community"]
TierChoice = Literal["secure", "community", "both"]  # what a user asks for
MemorySource = Literal["datacenter", "datasheet", "host", "unknown"]


@dataclass(frozen=True)
class MeasuredSpeed:
    """A speed measured on the machine (never estimated): `value` over `gpus` GPUs used together."""

    model_slug: str
    precision: int
    value: Decimal | float
    unit: str  # "tokens/s" or "images/min"
    measured_at: datetime
    gpus: int = 1
    engine: str = ""
    engine_version: str = ""
    concurrency: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    measured_by: str = ""
    source: str = ""  # "feed" or "staff"


# The record of a measured speed, written once: how it was measured (beside the figure), in the order
# it is shown, and the longest text each text field holds. The catalog's model, the feeds' checks, the
# kept latest speeds, the admin, the answer and the API read these.
MEASUREMENT_FIELDS = (
    "engine", "engine_version", "concurrency", "input_tokens", "output_tokens", "measured_at", "measured_by",
)
MEASUREMENT_TEXT_LENGTHS = {"engine": 60, "engine_version": 40, "measured_by": 120}
# Every field of the record (`MeasuredSpeed`'s, the catalog model's columns alike), in the order shown.
SPEED_RECORD_FIELDS = ("model_slug", "precision", "value", "unit", "gpus", *MEASUREMENT_FIELDS, "source")


@dataclass(frozen=True)
class MachineOffer:
    id: int
    provider: str
    tier: Tier
    provider_machine_id: str
    gpu_type: str
    gpu_count: int
    free_gpus: int
    memory_per_gpu_mib: int | None
    memory_source: MemorySource
    country: str | None  # ISO 3166 alpha-2; None when unknown
    region: str
    price_per_gpu_hour: Decimal
    interruptible: bool
    booking_limit_hours: int | None
    last_seen: datetime | None
    datasheet_memory_mib: int | None = None
    memory_flag: str | None = None  # host-reported memory far from the datasheet, in words
    measured_speeds: tuple[MeasuredSpeed, ...] = ()
    # The GPU type's architecture and (NVIDIA) compute capability, as the catalog records them ("" where
    # it does not): which start commands run on it (`sizing.engine_support.gpu_architecture`).
    gpu_architecture: str = ""
    gpu_slug: str = ""  # the GPU type's address in the catalog (its price history page)
    gpu_compute_capability: str = ""
    # What the availability rule reads besides the fields above (`sizing.availability`).
    is_available: bool = True
    provider_active: bool = True
    gone: bool = False
    # The markets besides the listed price and their terms (`sizing.markets`), and the reliability and
    # stock the provider reports (None / "" where it does not: shown "not reported", never estimated).
    interruptible_price_per_gpu_hour: Decimal | None = None
    interruption_notice_seconds: int | None = None
    interruption_frequency: str = ""
    reserved_price_per_gpu_hour: Decimal | None = None
    reserved_term_days: int | None = None
    reliability: Decimal | None = None
    reliability_measures: str = ""
    stock: str = ""


@dataclass(frozen=True)
class Preferences:
    budget: Decimal | None = None
    max_price_per_hour: Decimal | None = None
    tier: TierChoice = "both"
    # The lowest reliability (0 to 1, two places) a machine's feed must report; None = any, reported or not.
    min_reliability: Decimal | None = None
    # The markets a machine's price may come from (`sizing.markets.MARKET_CHOICES`): "on_demand" (the listed
    # price, as before markets were a choice), "interruptible" (allowed) or "any" (reserved too).
    market: str = "on_demand"
    countries: frozenset[str] | None = None  # expanded ISO codes; None = anywhere
    countries_input: tuple[str, ...] = ()  # as the user typed them (e.g. "EU"), for display
    sort: str = "price"  # "price" (cheapest per hour first) or "price_per_million_tokens"
