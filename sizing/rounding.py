"""The one rounding policy for everything shown (`sizing.units` describes where each figure is rounded):
halves away from zero, as people round, never Python's round-half-even. Imports nothing of sizing's, so
`sizing.i18n` (numbers in the active language) and `sizing.units` both build on it."""
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction


def round_half_up(value: float | int | Decimal | Fraction, places: int = 2) -> Decimal:
    """Display rounding as people do it (15.625 → 15.63), not Python's round-half-even. A Fraction is
    rounded exactly (1/3 → 0.33), a float as it reads (its shortest repr)."""
    step = Decimal(1).scaleb(-places)
    if isinstance(value, Fraction):
        scaled = abs(value) * 10**places
        whole = scaled.numerator // scaled.denominator
        if scaled - whole >= Fraction(1, 2):
            whole += 1
        return (Decimal(-whole if value < 0 else whole) * step).quantize(step)
    return Decimal(str(value)).quantize(step, rounding=ROUND_HALF_UP)
