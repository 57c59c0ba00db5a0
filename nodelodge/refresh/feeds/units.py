"""Figures as marketplaces' feeds write them, turned into the console's units exactly.

Every number goes through Decimal by its text (a JSON float 0.1 is read as "0.1", never as the binary
fraction), so no conversion rounds by surprise; the console keeps whole MiB of GPU memory per GPU and
USD per GPU-hour to four places (`base.price_amount`). Each function raises RecordRejected naming the
feed's own field.
"""
from __future__ import annotations

from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal, InvalidOperation

from . import base
from .base import RecordRejected

MIB_PER_GIB = 1024
CENTS_PER_DOLLAR = 100
SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 86_400
# No GPU sold has less than 1 GiB; a smaller figure is a unit mix-up (GiB written in a MiB field).
MIN_MEMORY_MIB = 1024
# A marketplace's stock words and whether each means "can be rented now". Anything else is refused.
STOCK_WORDS = {
    "high": True, "medium": True, "low": True, "available": True,
    "none": False, "unavailable": False, "out of stock": False,
}


def number(value, label: str) -> Decimal:
    """A finite number from a JSON number or a numeric text (CSV cells are text)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RecordRejected(f"{label} must be a number, got {value!r}"[:200])
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise RecordRejected(f"{label} {str(value)[:30]!r} is not a number") from None
    if not amount.is_finite():
        raise RecordRejected(f"{label} must be a finite number")
    return amount


def optional_number(value, label: str) -> Decimal | None:
    """`number`, or None where the feed leaves the figure out (null, absent or an empty cell)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return number(value, label)


def whole(value, label: str) -> int:
    """A whole number, written as one (8) or as a float with no fraction (8.0, "8.0" in a CSV)."""
    amount = number(value, label)
    if amount != amount.to_integral_value():
        raise RecordRejected(f"{label} must be a whole number, got {value}")
    return int(amount)


def gpu_count(value, label: str) -> int:
    """GPUs of one offer: a whole number from 1 to the console's most per machine."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise RecordRejected(f"{label} is missing")
    count = whole(value, label)
    if not 1 <= count <= base.MAX_GPU_COUNT:
        raise RecordRejected(f"{label} must be between 1 and {base.MAX_GPU_COUNT}, got {count}")
    return count


def memory_mib(amount: Decimal | None, label: str, unit: str) -> int:
    """GPU memory per GPU in whole MiB from a figure in `unit` ("MiB" or "GiB"), rounded to the nearest
    MiB (half to even); refused when missing or beyond any GPU sold."""
    if amount is None:
        raise RecordRejected(f"GPU memory is missing ({label})")
    factor = {"MiB": 1, "GiB": MIB_PER_GIB}[unit]
    mib = int((amount * factor).to_integral_value(rounding=ROUND_HALF_EVEN))
    if mib < MIN_MEMORY_MIB:
        raise RecordRejected(f"{label} {amount} {unit} is below 1 GiB per GPU (a unit mix-up?)")
    if mib > base.MAX_MEMORY_MIB:
        raise RecordRejected(f"{label} {amount} {unit} is above {base.MAX_MEMORY_MIB:,} MiB per GPU")
    return mib


def price_per_gpu_hour(total: Decimal | None, gpus: int, label: str) -> Decimal:
    """The console's price per GPU-hour from the feed's price per hour of `gpus` GPUs together (1 where
    the feed prices each GPU): divided exactly, then kept to four places."""
    if total is None:
        raise RecordRejected(f"{label} is missing")
    if total <= 0:
        raise RecordRejected(f"{label} must be above zero, got {total}")
    return base.price_amount(total / gpus, label, total)


def optional_price_per_gpu_hour(total: Decimal | None, gpus: int, label: str) -> Decimal | None:
    """An interruptible price, which no feed must give: None where it is absent or zero (not offered)."""
    if total is None or total == 0:
        return None
    return price_per_gpu_hour(total, gpus, label)


def dollars_from_cents(cents: Decimal) -> Decimal:
    return cents / CENTS_PER_DOLLAR


def whole_hours(seconds: Decimal | None, label: str) -> int | None:
    """A booking limit in whole hours from seconds, rounded down (an hour begun is not an hour offered);
    None where the feed gives none. Under an hour is refused: nothing could be booked."""
    if seconds is None:
        return None
    hours = int((seconds / SECONDS_PER_HOUR).to_integral_value(rounding=ROUND_FLOOR))
    if hours < 1:
        raise RecordRejected(f"{label} {seconds} s is under an hour")
    return hours


def whole_days(value, label: str) -> int:
    """A term in whole days from seconds, exactly: refused unless it is a whole number of days from 1 to
    the console's longest term (`base.MAX_TERM_DAYS`). A term is never rounded: 1.5 days is no term the
    console can name."""
    seconds = number(value, label)
    if seconds <= 0:
        raise RecordRejected(f"{label} must be above zero, got {value}")
    days = seconds / SECONDS_PER_DAY
    if days > base.MAX_TERM_DAYS:
        raise RecordRejected(f"{label} {seconds} s is above {base.MAX_TERM_DAYS:,} days")
    if days != days.to_integral_value():
        raise RecordRejected(f"{label} {seconds} s is not a whole number of days")
    return int(days)


def reliability(value, label: str) -> Decimal | None:
    """A reliability figure from 0 to 1 as the feed gives it, or None."""
    amount = optional_number(value, label)
    if amount is not None and not 0 <= amount <= 1:
        raise RecordRejected(f"{label} must be between 0 and 1, got {amount}")
    return amount


def stock(value, label: str) -> tuple[str, bool]:
    """(the stock word in lower case, whether it means in stock); null means none in stock."""
    if value is None:
        return "none", False
    if not isinstance(value, str) or value.strip().casefold() not in STOCK_WORDS:
        raise RecordRejected(f"{label} {str(value)[:30]!r} is not a stock word (High, Medium, Low, …)")
    word = value.strip().casefold()
    return word, STOCK_WORDS[word]


def figure(record: dict, name: str) -> Decimal | None:
    """The number in `record`'s field `name` (`optional_number`, labelled with the field's name)."""
    return optional_number(record.get(name), name)
