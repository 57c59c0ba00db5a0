"""Why a machine is not recommended, in the order answers list them; and the preference codes.

The first five come from the availability rule (`sizing.availability`), the rest from the engine.
Each reason string is also its words.
"""
OFFLINE = "offline or out of stock"
STALE = "not heard from recently"
OUTSIDE_COUNTRIES = "outside the chosen countries"
MEMORY_UNKNOWN = "memory unknown"
NO_FREE_GPUS = "no free GPUs"
TOO_SMALL = "too small"
OTHER_TIER = "other tier"
OVER_PRICE = "over the price limit"
BUDGET_UNDER_HOUR = "budget covers under an hour"
EXCLUDED_REASONS: tuple[str, ...] = (
    OFFLINE,
    STALE,
    OUTSIDE_COUNTRIES,
    MEMORY_UNKNOWN,
    NO_FREE_GPUS,
    TOO_SMALL,
    OTHER_TIER,
    OVER_PRICE,
    BUDGET_UNDER_HOUR,
)

# Codes of the preferences an alternative breaks; an alternative is counted under its first one.
BREAK_TIER, BREAK_MAX_PRICE, BREAK_BUDGET = "tier", "max_price", "budget"
BREAK_REASON = {BREAK_TIER: OTHER_TIER, BREAK_MAX_PRICE: OVER_PRICE, BREAK_BUDGET: BUDGET_UNDER_HOUR}
