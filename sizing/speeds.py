"""Measured speeds as a plan and a price per million tokens read them: which measurement counts on a
machine, and what a million tokens cost at it."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Protocol, TypeVar


class MeasuredSpeed(Protocol):
    """A measurement as `speed_for` reads it (the catalog's speed rows and models)."""

    @property
    def unit(self) -> str: ...
    @property
    def model_slug(self) -> str | None: ...
    @property
    def precision(self) -> int | None: ...
    @property
    def measured_at(self) -> datetime: ...
    @property
    def value(self) -> Decimal | float: ...
    @property
    def gpus(self) -> int: ...


_Speed = TypeVar("_Speed", bound=MeasuredSpeed)

SECONDS_PER_HOUR = 3_600
TOKENS_PER_MILLION = 1_000_000
TOKENS_PER_SECOND = "tokens/s"


def speed_for(speeds: Iterable[_Speed], model_slug: str | None, precision: int | None) -> _Speed | None:
    """The measured speed a plan and a price per million tokens use on one machine: tokens/s for
    this model and precision, the latest measurement (ties: the lower figure); None when none."""
    found = [
        speed
        for speed in speeds
        if speed.unit == TOKENS_PER_SECOND and speed.model_slug == model_slug and speed.precision == precision
    ]
    if not found:
        return None
    return min(found, key=lambda s: (-s.measured_at.timestamp(), Decimal(str(s.value)) / s.gpus, s.gpus))


def price_per_million_tokens(
    price_per_gpu_hour: Decimal, measured_tokens_per_s: Decimal | float, measured_gpus: int
) -> Decimal:
    """Price per hour of the measured GPUs ÷ (tokens per second × 3,600) × 10^6, exact to 4 places
    (rounded half up, as money is): what a million tokens cost at the measured speed."""
    hourly = price_per_gpu_hour * measured_gpus
    tokens_per_hour = Decimal(str(measured_tokens_per_s)) * SECONDS_PER_HOUR
    return (hourly * TOKENS_PER_MILLION / tokens_per_hour).quantize(
        Decimal("0.0001"), rounding=ROUND_HALF_UP
    )
