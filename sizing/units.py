"""Units, and the one rounding policy for everything shown (sizes, speeds and money are exact until
here). Halves are rounded up (away from zero), as people round; never Python's round-half-even.

- Sizes: bytes in, GiB out with two decimals (15.625 → 15.63).
- Figures of a formula (speeds, the plan's tokens/s): up to two decimals, no trailing zeros
  (12.345 → 12.35, 56,250); the same figure in JSON is a float of two decimals.
- Percentages: one decimal, a whole percent without it (93.8 %, 100 %).
- Money: prices are kept to four places; an amount is shown with the digits it has, at least two
  and at most four ($0.098 stays $0.098, $2.50 stays $2.50), halves rounded up at the fourth.
- Bounds, rounded towards the safe side: the time a budget covers is rounded down (never promised
  longer than it lasts), an amount to set a limit to is rounded up to whole cents (it always reaches).

Words and values are kept apart: the `*_display`, `*_text` and `fmt_*` functions write for people, in
the active language (19,55 GiB, 0,098 $ in German; `sizing.i18n`); `gib_number`, `figure_number` and
`money_string` are values for JSON, URLs and forms, the same in every language.
"""
import functools
import re
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import cast

from .i18n import format_number, pgettext
from .rounding import round_half_up

GIB = 2**30
MIB = 2**20

MONEY_PLACES = 4  # the catalog keeps prices to 4 places
_CENTS = Decimal("0.01")
_MONEY_STEP = Decimal(1).scaleb(-MONEY_PLACES)


def _gib_decimal(n_bytes: int | float) -> Decimal:
    if float(n_bytes).is_integer():
        exact = Decimal(int(n_bytes)) / Decimal(GIB)
    else:
        exact = Decimal(str(n_bytes / GIB))
    return exact.quantize(_CENTS, rounding=ROUND_HALF_UP)


def gib_display(n_bytes: int | float) -> str:
    """Bytes as GiB with two decimals, rounded only here, for display."""
    return format_number(_gib_decimal(n_bytes))


@functools.lru_cache(maxsize=4096)
def gib_number(n_bytes: int | float) -> float:
    """Bytes as GiB, two decimals, for JSON (same rounding as the page)."""
    return float(_gib_decimal(n_bytes))


def fmt_gib(n_bytes: float) -> str:
    return f"{gib_display(n_bytes)} GiB"


def fmt_int(n: int) -> str:
    """A whole number for people: 8,030,261,248 (8.030.261.248 in German)."""
    return format_number(n)


def general_number(value: Decimal | Fraction | float | int, significant: int | None = None) -> str:
    """A figure as Python's "g" format writes it (0.5, 2, 4.127), with the active language's decimal
    mark and no thousands separators: for bytes and bits per value in formulas."""
    if isinstance(value, Decimal):
        text = f"{value:g}" if significant is None else f"{value:.{significant}g}"
    else:
        text = f"{float(value):g}" if significant is None else f"{float(value):.{significant}g}"
    return format_number(Decimal(text), grouping=False)


def decimal_text(value: float | int | Decimal, places: int = 2) -> str:
    """A figure for people with `places` decimals, halves rounded up: 14.96 (14,96 in German)."""
    return format_number(round_half_up(value, places), places)


def exact_text(number: Decimal) -> str:
    """An exact Decimal for people, with thousands separators and no trailing zeros (56,250, 2.1,
    21.01): figures the simpler calculators show as they are, never rounded."""
    normalized = number.normalize()
    if normalized == normalized.to_integral_value():
        return format_number(int(normalized))
    return format_number(normalized)


def figure_text(value: Fraction | Decimal | int) -> str:
    """A figure of a formula for people: thousands separators, up to two decimals, no trailing zeros
    (56,250; 12.35; 2.1)."""
    figure = round_half_up(value, 2)
    if figure == figure.to_integral_value():
        return format_number(int(figure))
    return format_number(figure.normalize())


def figure_number(value: Fraction | Decimal | int | float) -> float:
    """The same figure for JSON: a float of two decimals, rounded as `figure_text` rounds it."""
    return float(round_half_up(value, 2))


def one_decimal_text(value: Decimal | Fraction | float) -> str:
    """A figure with one decimal, halves up: 52.6 (52,6 in German)."""
    return format_number(round_half_up(value, 1))


def percent_text(fraction: float | Decimal | Fraction) -> str:
    """A share as a percentage with one decimal, a whole percent without it: "93.8 %", "100 %"."""
    value = round_half_up(fraction * 100, 1)
    shown: Decimal | int = int(value) if value == value.to_integral_value() else value
    return f"{format_number(shown, grouping=False)} %"


def whole_down(value: Decimal) -> int:
    """A count that must not be overstated (the minutes a budget covers): the whole part."""
    return int(value.to_integral_value(rounding=ROUND_DOWN))


def hundredths_down(value: Decimal) -> Decimal:
    """Hours or days a budget covers, two places, rounded down: never longer than it lasts."""
    return value.quantize(_CENTS, rounding=ROUND_DOWN)


def cents_up(amount: Decimal) -> Decimal:
    """An amount a price limit or budget can be set to (whole cents), at least `amount`."""
    return amount.quantize(_CENTS, rounding=ROUND_CEILING)


def money_amount(amount: Decimal | int | str) -> Decimal:
    """An amount with the digits it has: at least cents, at most four places (halves up)."""
    value = Decimal(amount).quantize(_MONEY_STEP, rounding=ROUND_HALF_UP)
    trimmed = value.normalize()
    if cast(int, trimmed.as_tuple().exponent) > -2:  # a finite amount: a whole exponent
        trimmed = value.quantize(_CENTS)
    return trimmed


@functools.lru_cache(maxsize=4096)
def money_string(amount: Decimal | int | str) -> str:
    """A JSON/API money value: a decimal string with the amount's own digits ("0.098", "2.50"). Kept per
    process by value (equal amounts are written alike: each is first set to four places), as an answer
    writes the same few hundred prices row after row; sizes and memory alike (`gib_number`)."""
    return format(money_amount(amount), "f")


def money_text(amount: Decimal | int | str) -> str:
    """Money for people: "$1,020.40", "$0.098"; in German "1.020,40 $", "0,098 $" (the amount, a space,
    the dollar sign, as the catalogue's translation of the pattern says). A price per hour is this
    followed by "/h": "$0.098/h", "0,098 $/h"."""
    return pgettext("money", "$%(amount)s") % {"amount": format_number(money_amount(amount))}


# --- numbers as people type them -------------------------------------------------------------------
#
# A page reads a typed number in its language (12.50 and 1,000.50 in English; 12,50 and 1.000,50 in
# German). Spaces, and "_", group thousands in every language. Where the page's reading fails and the
# other language's succeeds, the number can only mean that ("12,50" on the English page is 12.50, "1.5"
# on the German one 1.5, as Django reads it there); where both readings succeed ("1,000", "1.000"),
# the page's language decides. Anything else is refused, never read as another number.

_SPACES = " _\u00a0\u202f\u2009"
_TYPED_NUMBER = re.compile("([+-]?)([0-9.,_ \u00a0\u202f\u2009]+?)(?:[eE]([+-]?[0-9]{1,12}))?")
_MARK = re.compile("([.,_ \u00a0\u202f\u2009])")


class NumberNotRead(ValueError):
    """The text is not a number in either reading."""


def _reading(mantissa: str, decimal_mark: str, group_marks: str) -> str | None:
    """The mantissa as plain digits with a "." before the decimals, or None when it cannot be read
    with these marks: one decimal mark at most, after every group; groups of exactly three digits."""
    runs = _MARK.split(mantissa)
    digits, marks = runs[0::2], runs[1::2]
    if any(mark not in group_marks and mark != decimal_mark for mark in marks):
        return None
    if marks.count(decimal_mark) > 1 or (decimal_mark in marks and marks[-1] != decimal_mark):
        return None
    whole, decimals = (digits[:-1], digits[-1]) if decimal_mark in marks else (digits, None)
    if decimals is None and whole[0] == "":
        return None
    if len(whole) > 1 and not (1 <= len(whole[0]) <= 3 and all(len(group) == 3 for group in whole[1:])):
        return None
    if whole[0] == "" and len(whole) > 1:
        return None
    text = "".join(whole) or "0"
    return text if decimals is None else f"{text}.{decimals}"


def read_number(text: str, decimal_mark: str = ".", group_mark: str = ",") -> Decimal:
    """A number as a person typed it on a page whose language writes `decimal_mark` before decimals
    and `group_mark` between thousands; NumberNotRead otherwise. An exponent (7e9) is taken as typed."""
    match = _TYPED_NUMBER.fullmatch((text or "").strip())
    if not match or not any(character.isdigit() for character in match.group(2)):
        raise NumberNotRead(text)
    sign, mantissa, exponent = match.groups()
    plain = _reading(mantissa, decimal_mark, group_mark + _SPACES)
    if plain is None:
        plain = _reading(mantissa, group_mark, decimal_mark + _SPACES)
    if plain is None:
        raise NumberNotRead(text)
    return Decimal(f"{sign}{plain}" + (f"E{exponent}" if exponent else ""))
