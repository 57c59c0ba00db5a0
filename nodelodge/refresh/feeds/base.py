"""What every feed format turns a provider's answer into, and the checks every record must pass.

A feed adapter parses one format. It raises FeedError when the whole answer is unusable (nothing
changes for the provider); a record that fails a check is rejected with its reason while the other
records go on.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from catalog.gpu_names import gpu_name_key
from sizing.countries import is_country_code
from sizing.limits import MAX_GPUS_PER_MACHINE, MAX_PRICE_PER_GPU_HOUR
from sizing.markets import market_problems
from sizing.offers import MEASUREMENT_TEXT_LENGTHS

MAX_GPU_COUNT = MAX_GPUS_PER_MACHINE
# 1 TiB per GPU: far beyond any GPU sold; a larger figure is a unit mix-up or garbage.
MAX_MEMORY_MIB = 1_048_576
PRICE_STEP = Decimal("0.0001")  # Machine.price_per_gpu_hour keeps four decimals
MAX_ID_LENGTH = 120
MAX_REGION_LENGTH = 120
MAX_SITE_LENGTH = 120
# The interconnects a machine may name (Machine.Interconnect) and "none", the default.
INTERCONNECTS = ("none", "ethernet", "infiniband", "roce")
NO_INTERCONNECT = "none"
# 100 Tb/s per machine: far beyond any network card sold; a larger figure is a unit mix-up (b/s, Mb/s).
MAX_INTERCONNECT_GBPS = 100_000
# No GPU serves a million output tokens per second; a larger figure is a unit mix-up or garbage.
MAX_TOKENS_PER_SECOND_PER_GPU = Decimal("1000000")
SPEED_STEP = Decimal("0.001")  # MeasuredSpeed.value keeps three decimals
MAX_SPEED_TEXT = MEASUREMENT_TEXT_LENGTHS
MAX_SPEED_COUNT = 10_000_000  # concurrency and token lengths
PRECISIONS = (16, 8, 4)
# A measurement dated later than this after the feed was read comes from a wrong clock.
FUTURE_SKEW = timedelta(hours=1)


# Control characters (NUL included, which PostgreSQL refuses in text) and lone surrogates (halves of
# a UTF-16 pair, which no UTF-8 database can store): no id, place or name contains them.
_UNSTORABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


class FeedError(Exception):
    """The whole feed is unusable: nothing changes for the provider."""


class RecordRejected(Exception):  # noqa: N818 - a verdict, not a programming error
    """One record fails a check; the reason is shown to staff."""


@dataclass(frozen=True)
class GpuTypeRef:
    id: int
    name: str
    datasheet_memory_mib: int


class GpuTypeIndex:
    """GPU types looked up by name, slug or alias, each compared by its key (`catalog.gpu_names`: case,
    spaces, hyphens and underscores ignored). A name is first a catalog name or slug; else an alias,
    which may stand for several types told apart by their memory (`resolve`)."""

    def __init__(
        self, gpu_types: list[GpuTypeRef], slugs: dict[str, int], aliases: dict[str, list[int]] | None = None
    ):
        self._by_key: dict[str, GpuTypeRef] = {}
        by_id = {gpu.id: gpu for gpu in gpu_types}
        for gpu in gpu_types:
            self._by_key.setdefault(gpu_name_key(gpu.name), gpu)
        for slug, gpu_id in slugs.items():
            self._by_key.setdefault(gpu_name_key(slug), by_id[gpu_id])
        self._aliases: dict[str, tuple[GpuTypeRef, ...]] = {
            key: tuple(sorted({by_id[pk] for pk in ids}, key=_by_memory))
            for key, ids in (aliases or {}).items()
        }

    def candidates(self, name: str) -> tuple[GpuTypeRef, ...]:
        """The GPU types `name` may mean: its catalog type, else its alias's types (smallest memory first)."""
        key = gpu_name_key(name)
        found = self._by_key.get(key)
        return (found,) if found is not None else self._aliases.get(key, ())

    def find(self, name: str) -> GpuTypeRef | None:
        """The one GPU type `name` means, or None (unknown, or an alias of several types)."""
        found = self.candidates(name)
        return found[0] if len(found) == 1 else None

    def resolve(self, names: list[str], memory_mib: int | None) -> GpuTypeRef:
        """The GPU type of the first of `names` the catalog knows; among an alias's several types, the
        one whose datasheet memory is nearest `memory_mib` (the smaller on a tie). RecordRejected when
        no name is known, or one needs a memory the record does not give."""
        for name in names:
            found = self.candidates(name)
            if len(found) == 1:
                return found[0]
            if found:
                if memory_mib is None:
                    types = " or ".join(gpu.name for gpu in found)
                    raise RecordRejected(
                        f"GPU name {name.strip()[:80]!r} may be {types}; the record gives no memory"
                    )
                return min(found, key=lambda gpu: abs(gpu.datasheet_memory_mib - memory_mib))
        shown = " / ".join(repr(name.strip()[:80]) for name in names) or "''"
        raise RecordRejected(f"unknown GPU name {shown} (no GPU type or alias has it)")


def _by_memory(gpu: GpuTypeRef) -> tuple[int, str]:
    return gpu.datasheet_memory_mib, gpu.name


@dataclass(frozen=True)
class SpeedRecord:
    """One speed measured on the machine, as the feed's optional `measured_speeds` gives it."""

    model_slug: str
    precision: int
    tokens_per_second: Decimal  # over `gpus` GPUs used together
    gpus: int
    engine: str
    engine_version: str
    concurrency: int | None
    input_tokens: int | None
    output_tokens: int | None
    measured_at: datetime
    measured_by: str


@dataclass(frozen=True)
class MachineRecord:
    """One machine as the feed describes it, every value checked."""

    provider_machine_id: str
    gpu_type: GpuTypeRef
    gpu_count: int
    free_gpus: int
    memory_mib: int | None  # as the feed reports it; None = not reported
    available: bool
    country: str  # ISO 3166 alpha-2, "" = unknown
    region: str
    price_per_gpu_hour: Decimal
    interruptible: bool
    booking_limit_hours: int | None
    # None: the feed left the section out, so the machine keeps the speeds it has.
    measured_speeds: tuple[SpeedRecord, ...] | None = None
    # What a cluster of machines needs: the datacenter ("" = not said) and the network between machines
    # there ("none" with no speed, or a kind with its speed in Gb/s).
    site: str = ""
    interconnect: str = NO_INTERCONNECT
    interconnect_gbps: int | None = None
    # The markets besides the listed price and their terms (`sizing.markets`), reliability and stock,
    # stored on the machine. None / "" = the feed does not say.
    interruptible_price_per_gpu_hour: Decimal | None = None
    reliability: Decimal | None = None  # 0 to 1, as the feed measures it
    stock: str = ""  # the feed's stock word, lower case ("high", "medium", "low", "available", "none")
    interruption_notice_seconds: int | None = None
    interruption_frequency: str = ""
    reserved_price_per_gpu_hour: Decimal | None = None
    reserved_term_days: int | None = None
    reliability_measures: str = ""  # what `reliability` measures, as the feed defines it
    # Whether the feed says how many GPUs are free; when it does not, free_gpus is the whole count of
    # an offer in stock (or 0), the console's reading of "available".
    free_gpus_reported: bool = True


@dataclass(frozen=True)
class RejectedRecord:
    machine_id: str | None  # None when the record carries no usable id
    reason: str
    where: str = ""  # where the record is in the feed ("line 7", "offers[3]"), shown when it has no id

    def as_dict(self) -> dict:
        found = {"id": self.machine_id, "reason": self.reason}
        return found | {"where": self.where} if self.where else found

    @property
    def label(self) -> str:
        """The record as staff find it: its id, else its place in the feed."""
        return self.machine_id or self.where or "?"


@dataclass
class ParsedFeed:
    records: list[MachineRecord] = field(default_factory=list)
    rejected: list[RejectedRecord] = field(default_factory=list)
    # Measured speeds refused one by one; their machines and other speeds were applied.
    rejected_speeds: list[RejectedRecord] = field(default_factory=list)
    generated_at: datetime | None = None
    # The feed says the provider has no machines at all: only then may an empty list mark them gone.
    declared_empty: bool = False
    # Records read into another record's machine rather than a machine of their own (Prime's prepaid
    # offers, each its machine's reserved price): received, neither a machine nor refused.
    merged: int = 0

    @property
    def received(self) -> int:
        return len(self.records) + len(self.rejected) + self.merged


class FeedAdapter(Protocol):
    format: str  # Provider.feed_format's value
    short_name: str  # as `import_offers --format` names it

    def parse(
        self,
        body: bytes,
        *,
        provider_slug: str,
        gpu_types: GpuTypeIndex,
        models: frozenset[str] = frozenset(),
        tier: str = "secure",
    ) -> ParsedFeed:
        """The feed's records, each validated; raises FeedError when the whole feed is unusable.
        `models`: the slugs of the catalog's language models, which measured speeds must name; `tier`:
        the provider's (a feed listing both clouds' prices is read for the provider's own)."""
        ...


# --- Checks shared by every format ----------------------------------------------------------------


def storable(text: str, label: str) -> str:
    """`text`, or RecordRejected naming the first character no database can keep in it."""
    found = _UNSTORABLE.search(text)
    if found is not None:
        char = found.group()
        kind = "a lone surrogate" if "\ud800" <= char <= "\udfff" else "a control character"
        raise RecordRejected(f"{label} contains U+{ord(char):04X}, {kind}, which is not allowed in text")
    return text


def machine_id(value) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise RecordRejected("id is missing")
    text = str(value).strip()
    if not text:
        raise RecordRejected("id is missing")
    if len(text) > MAX_ID_LENGTH:
        raise RecordRejected(f"id is longer than {MAX_ID_LENGTH} characters")
    return storable(text, "id")


def whole_number(value, label: str) -> int:
    # JSON true/false are ints to Python; a flag where a count belongs is a broken record.
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordRejected(f"{label} must be a whole number, got {value!r}")
    return value


def gpu_type(value, index: GpuTypeIndex) -> GpuTypeRef:
    if not isinstance(value, str) or not value.strip():
        raise RecordRejected("gpu_type is missing")
    found = index.find(value)
    if found is None:
        raise RecordRejected(f"unknown GPU type {value.strip()[:80]!r}")
    return found


def gpu_count(value) -> int:
    count = whole_number(value, "gpu_count")
    if not 1 <= count <= MAX_GPU_COUNT:
        raise RecordRejected(f"gpu_count must be between 1 and {MAX_GPU_COUNT}, got {count}")
    return count


def free_gpus(value, count: int) -> int:
    free = whole_number(value, "free_gpus")
    if free < 0:
        raise RecordRejected(f"free_gpus cannot be negative, got {free}")
    if free > count:
        raise RecordRejected(f"free_gpus ({free}) exceeds gpu_count ({count})")
    return free


def memory_mib(value) -> int | None:
    if value is None:
        return None
    memory = whole_number(value, "memory_mib")
    if memory <= 0:
        raise RecordRejected(f"memory_mib must be positive, got {memory}")
    if memory > MAX_MEMORY_MIB:
        raise RecordRejected(f"memory_mib {memory:,} is absurd (above {MAX_MEMORY_MIB:,} MiB per GPU)")
    return memory


def flag(value, label: str) -> bool:
    if not isinstance(value, bool):
        raise RecordRejected(f"{label} must be true or false, got {value!r}")
    return value


def country(value) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RecordRejected(f"country must be an ISO 3166 alpha-2 code, got {value!r}")
    code = value.strip().upper()
    if not code:
        return ""
    if not is_country_code(code):
        raise RecordRejected(f"country {value[:20]!r} is not an ISO 3166 alpha-2 code")
    return code


def _short_text(value, name: str, longest: int) -> str:
    """An optional line of text (absent: empty), trimmed, at most `longest` characters, storable."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RecordRejected(f"{name} must be text, got {value!r}")
    text = value.strip()
    if len(text) > longest:
        raise RecordRejected(f"{name} is longer than {longest} characters")
    return storable(text, name)


def region(value) -> str:
    return _short_text(value, "region", MAX_REGION_LENGTH)


def site(value) -> str:
    return _short_text(value, "site", MAX_SITE_LENGTH)


def interconnect(kind, gbps) -> tuple[str, int | None]:
    """The network between this machine and the others at its site, and its speed in Gb/s: a speed
    exactly when there is an interconnect (left out: none)."""
    if kind is None:
        kind = NO_INTERCONNECT
    if not isinstance(kind, str) or kind.strip().casefold() not in INTERCONNECTS:
        kinds = ", ".join(INTERCONNECTS)
        raise RecordRejected(f"interconnect must be one of {kinds}, got {str(kind)[:30]!r}")
    kind = kind.strip().casefold()
    if gbps is not None:
        gbps = whole_number(gbps, "interconnect_gbps")
        if not 1 <= gbps <= MAX_INTERCONNECT_GBPS:
            raise RecordRejected(
                f"interconnect_gbps must be between 1 and {MAX_INTERCONNECT_GBPS:,}, got {gbps}"
            )
    if kind == NO_INTERCONNECT and gbps is not None:
        raise RecordRejected(
            "interconnect_gbps is given but interconnect is none (or left out); name the interconnect"
        )
    if kind != NO_INTERCONNECT and gbps is None:
        raise RecordRejected(f"interconnect {kind} needs interconnect_gbps, its speed in Gb/s")
    return kind, gbps


def price(value) -> Decimal:
    # Strings are preferred (exact); numbers are accepted. Floats go through str() so 2.49 stays 2.49.
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RecordRejected(f"price_per_gpu_hour must be a decimal number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise RecordRejected("price_per_gpu_hour must be a finite number")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise RecordRejected(f"price_per_gpu_hour {str(value)[:30]!r} is not a decimal number") from None
    return price_amount(amount, "price_per_gpu_hour", value)


def price_amount(amount: Decimal, label: str, given) -> Decimal:
    """A price per GPU-hour in USD as the console keeps it: finite, above zero once kept to four places
    (half to even), at most MAX_PRICE_PER_GPU_HOUR. `label` and `given` name the feed's field and value."""
    if not amount.is_finite():
        raise RecordRejected(f"{label} must be a finite number")
    if amount > MAX_PRICE_PER_GPU_HOUR:
        raise RecordRejected(f"{label} {amount} is above {MAX_PRICE_PER_GPU_HOUR}")
    amount = amount.quantize(PRICE_STEP)
    if amount <= 0:
        raise RecordRejected(f"{label} must be above zero, got {given}")
    return amount


def booking_limit_hours(value) -> int | None:
    if value is None:
        return None
    hours = whole_number(value, "booking_limit_hours")
    if hours < 1:
        raise RecordRejected(f"booking_limit_hours must be at least 1 (or null for none), got {hours}")
    return hours


# --- Markets, reliability and stock (optional fields of a machine) --------------------------------

MAX_NOTICE_SECONDS = 366 * 24 * 3600  # a year: a longer notice is a unit mix-up (ms written as s)
MAX_TERM_DAYS = 3660  # ten years: no provider reserves longer
MAX_TERMS_LENGTH = 120  # Machine.interruption_frequency
MAX_MEASURES_LENGTH = 200  # Machine.reliability_measures
# A feed's stock words and the level the console keeps for each (`Machine.Stock`).
STOCK_LEVELS = {
    "high": "high", "medium": "medium", "low": "low", "available": "in_stock", "in_stock": "in_stock",
    "none": "out", "unavailable": "out", "out of stock": "out", "out": "out",
}


def optional_price(value, label: str) -> Decimal | None:
    """A price per GPU-hour the feed may leave out (null or absent), checked as the listed price."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RecordRejected(f"{label} must be a decimal number, got {value!r}")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise RecordRejected(f"{label} {str(value)[:30]!r} is not a decimal number") from None
    return price_amount(amount, label, value)


def bounded_count(value, label: str, lowest: int, highest: int) -> int | None:
    if value is None:
        return None
    number = whole_number(value, label)
    if not lowest <= number <= highest:
        raise RecordRejected(f"{label} must be between {lowest} and {highest:,}, got {number}")
    return number


def reliability(value, measures) -> tuple[Decimal | None, str]:
    """(reliability from 0 to 1, what it measures): both or neither."""
    text = _short_text(measures, "reliability_measures", MAX_MEASURES_LENGTH)
    if value is None:
        if text:
            raise RecordRejected("reliability_measures is given without reliability")
        return None, ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RecordRejected(f"reliability must be a number from 0 to 1, got {value!r}")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise RecordRejected(f"reliability {str(value)[:30]!r} is not a number") from None
    if not amount.is_finite() or not 0 <= amount <= 1:
        raise RecordRejected(f"reliability must be between 0 and 1, got {value}")
    if not text:
        raise RecordRejected("reliability needs reliability_measures: what the figure measures")
    return amount.quantize(RELIABILITY_STEP), text


RELIABILITY_STEP = Decimal("0.0001")  # Machine.reliability keeps four decimals


def stock_level(word: str) -> str:
    """The console's stock level for a feed's stock word ("" stays "": not reported)."""
    if not word:
        return ""
    level = STOCK_LEVELS.get(word.strip().casefold())
    if level is None:
        raise RecordRejected(f"stock {word[:30]!r} is not a stock word (high, medium, low, available, none)")
    return level


def market_terms(item: dict, price_per_gpu_hour: Decimal, interruptible: bool) -> dict:
    """The markets' fields of a machine in the Node Lodge feed, checked one by one and against each
    other (`sizing.markets.market_problems`, the admin's rules)."""
    terms: dict[str, Any] = {
        "interruptible_price_per_gpu_hour": optional_price(
            item.get("interruptible_price_per_gpu_hour"), "interruptible_price_per_gpu_hour"
        ),
        "interruption_notice_seconds": bounded_count(
            item.get("interruption_notice_seconds"), "interruption_notice_seconds", 0, MAX_NOTICE_SECONDS
        ),
        "interruption_frequency": _short_text(
            item.get("interruption_frequency"), "interruption_frequency", MAX_TERMS_LENGTH
        ),
        "reserved_price_per_gpu_hour": optional_price(
            item.get("reserved_price_per_gpu_hour"), "reserved_price_per_gpu_hour"
        ),
        "reserved_term_days": bounded_count(
            item.get("reserved_term_days"), "reserved_term_days", 1, MAX_TERM_DAYS
        ),
    }
    problems = market_problems(price_per_gpu_hour=price_per_gpu_hour, interruptible=interruptible, **terms)
    if problems:
        field, problem = next(iter(problems.items()))
        raise RecordRejected(f"{field}: {problem}")
    return terms


# --- Measured speeds (optional section of a machine) ----------------------------------------------


def _optional_count(value, label: str) -> int | None:
    if value is None:
        return None
    number = whole_number(value, label)
    if not 1 <= number <= MAX_SPEED_COUNT:
        raise RecordRejected(f"{label} must be between 1 and {MAX_SPEED_COUNT:,}, got {number}")
    return number


def _text(value, label: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RecordRejected(f"{label} must be text, got {value!r}")
    text = value.strip()
    if len(text) > MAX_SPEED_TEXT[label]:
        raise RecordRejected(f"{label} is longer than {MAX_SPEED_TEXT[label]} characters")
    return storable(text, label)


def measured_speed(item, *, gpu_count: int, models: frozenset[str], now: datetime) -> SpeedRecord:
    """One entry of a machine's `measured_speeds`, every value checked; RecordRejected otherwise."""
    if not isinstance(item, dict):
        raise RecordRejected(f"a measured speed must be a JSON object, got {type(item).__name__}")
    model = item.get("model")
    if not isinstance(model, str) or not model.strip():
        raise RecordRejected("model is missing")
    model = model.strip().lower()
    if model not in models:
        raise RecordRejected(f"unknown model {model[:80]!r}")
    precision = whole_number(item.get("precision"), "precision")
    if precision not in PRECISIONS:
        raise RecordRejected(f"precision must be 16, 8 or 4, got {precision}")
    gpus = whole_number(item.get("gpus", 1), "gpus")
    if not 1 <= gpus <= gpu_count:
        raise RecordRejected(f"gpus must be between 1 and the machine's {gpu_count}, got {gpus}")
    raw = item.get("tokens_per_second")
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise RecordRejected(f"tokens_per_second must be a number, got {raw!r}")
    try:
        speed = Decimal(str(raw).strip())
    except InvalidOperation:
        raise RecordRejected(f"tokens_per_second {str(raw)[:30]!r} is not a number") from None
    if not speed.is_finite():
        raise RecordRejected("tokens_per_second must be a finite number")
    if speed <= 0:
        raise RecordRejected(f"tokens_per_second must be above zero, got {raw}")
    if speed > MAX_TOKENS_PER_SECOND_PER_GPU * gpus:
        raise RecordRejected(
            f"tokens_per_second {speed:,} is absurd (above {MAX_TOKENS_PER_SECOND_PER_GPU:,} per GPU)"
        )
    speed = speed.quantize(SPEED_STEP)
    if speed <= 0:
        raise RecordRejected(f"tokens_per_second must be above zero, got {raw}")
    measured_at = item.get("measured_at")
    if not isinstance(measured_at, str):
        raise RecordRejected("measured_at is missing (ISO 8601)")
    try:
        when = datetime.fromisoformat(measured_at.strip().replace("Z", "+00:00"))
    except ValueError:
        raise RecordRejected(f"measured_at {measured_at[:40]!r} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        raise RecordRejected("measured_at needs a time zone (e.g. Z)")
    if when > now + FUTURE_SKEW:
        raise RecordRejected(f"measured_at {measured_at[:40]} is in the future")
    return SpeedRecord(
        model_slug=model,
        precision=precision,
        tokens_per_second=speed,
        gpus=gpus,
        engine=_text(item.get("engine"), "engine"),
        engine_version=_text(item.get("engine_version"), "engine_version"),
        concurrency=_optional_count(item.get("concurrency"), "concurrency"),
        input_tokens=_optional_count(item.get("input_tokens"), "input_tokens"),
        output_tokens=_optional_count(item.get("output_tokens"), "output_tokens"),
        measured_at=when,
        measured_by=_text(item.get("measured_by"), "measured_by"),
    )
