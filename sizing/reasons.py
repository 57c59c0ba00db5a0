"""Why a machine is not recommended, in the order answers list them; and the preference codes.

The first five come from the availability rule (`sizing.availability`), the rest from the engine.
Each reason string is also its English words, and stays so wherever it is a value (the keys of an
answer's "excluded", in every language); `reason_words` gives the words in the active language.
"""
from .i18n import gettext, gettext_noop

OFFLINE = gettext_noop("offline or out of stock")
STALE = gettext_noop("not heard from recently")
OUTSIDE_COUNTRIES = gettext_noop("outside the chosen countries")
MEMORY_UNKNOWN = gettext_noop("memory unknown")
NO_FREE_GPUS = gettext_noop("no free GPUs")
TOO_SMALL = gettext_noop("too small")
OTHER_TIER = gettext_noop("other tier")
OVER_PRICE = gettext_noop("over the price limit")
BUDGET_UNDER_HOUR = gettext_noop("budget covers under an hour")
BELOW_RELIABILITY = gettext_noop("reliability under the minimum or not reported")
EXCLUDED_REASONS: tuple[str, ...] = (
    OFFLINE,
    STALE,
    OUTSIDE_COUNTRIES,
    MEMORY_UNKNOWN,
    NO_FREE_GPUS,
    TOO_SMALL,
    OTHER_TIER,
    BELOW_RELIABILITY,
    OVER_PRICE,
    BUDGET_UNDER_HOUR,
)
# Reasons an answer lists only where their preference is set: answers without it keep the keys they had.
LISTED_WHEN_CHOSEN: dict[str, str] = {BELOW_RELIABILITY: "min_reliability"}

# Codes of the preferences an alternative breaks; an alternative is counted under its first one.
BREAK_TIER, BREAK_MAX_PRICE, BREAK_BUDGET = "tier", "max_price", "budget"
BREAK_RELIABILITY = "min_reliability"
BREAK_REASON = {
    BREAK_TIER: OTHER_TIER, BREAK_RELIABILITY: BELOW_RELIABILITY, BREAK_MAX_PRICE: OVER_PRICE,
    BREAK_BUDGET: BUDGET_UNDER_HOUR,
}


def reason_words(reason: str) -> str:
    """A reason of EXCLUDED_REASONS in the active language."""
    return gettext(reason)
