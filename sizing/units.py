from decimal import ROUND_HALF_UP, Decimal

GIB = 2**30
MIB = 2**20
GB = 10**9


def gib(n_bytes: float) -> float:
    return n_bytes / GIB


def round_half_up(value: float | int | Decimal, places: int = 2) -> Decimal:
    """Display rounding as people do it (15.625 → 15.63), not Python's round-half-even."""
    return Decimal(str(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def gib_display(n_bytes: int | float) -> str:
    """Bytes as GiB with two decimals, rounded only here, for display."""
    if float(n_bytes).is_integer():
        exact = Decimal(int(n_bytes)) / Decimal(GIB)
    else:
        exact = Decimal(str(n_bytes / GIB))
    return f"{exact.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):,}"


def fmt_gib(n_bytes: float) -> str:
    return f"{gib_display(n_bytes)} GiB"


def fmt_int(n: int) -> str:
    return f"{n:,}"
