"""One machine's words: why it fits, its limits, which preference it breaks, what a budget covers."""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, cast

from ..fit import TIGHT_HEADROOM_FRACTION, Fit
from ..i18n import format_number, gettext, ngettext
from ..markets import reliability_percent
from ..offers import MachineOffer, Preferences
from ..reasons import BREAK_MAX_PRICE, BREAK_RELIABILITY, BREAK_TIER
from ..units import (
    fmt_gib,
    hundredths_down,
    money_text,
    one_decimal_text,
    percent_text,
)

if TYPE_CHECKING:
    pass
from .common import (
    MEMORY_SOURCE_WORDS,
    TIER_WORDS,
    count_text,
    minutes,
    per_hour,
)

_ONE_HOUR = Decimal(1)


@dataclass(frozen=True)
class BudgetCover:
    hours: Decimal | None  # two places, rounded down; None on a machine that costs nothing
    days: Decimal | None
    capped_by_booking_limit: bool
    booking_limit_hours: int | None
    text: str

    @property
    def hours_of_one_booking(self) -> Decimal | None:
        """The hours one booking runs on the budget: what it covers, cut at the booking limit."""
        if self.hours is None or self.booking_limit_hours is None:
            return self.hours
        return min(self.hours, Decimal(self.booking_limit_hours))


def budget_cover(
    budget: Decimal | None, hourly_price: Decimal, booking_limit_hours: int | None
) -> BudgetCover | None:
    """How long `budget` lasts at `hourly_price` (exact, as priced); None when no budget was given."""
    if budget is None:
        return None
    if hourly_price <= 0:
        return BudgetCover(
            None, None, False, booking_limit_hours,
            gettext("this machine costs nothing per hour; %(budget)s is not spent") % {
                "budget": money_text(budget)
            },
        )
    exact_hours = budget / hourly_price
    hours = hundredths_down(exact_hours)
    days = hundredths_down(exact_hours / 24)
    values = {"budget": money_text(budget), "price": per_hour(hourly_price)}
    if exact_hours < _ONE_HOUR:
        count = minutes(budget, hourly_price)
        text = ngettext(
            "%(budget)s covers %(minutes)s minute at %(price)s",
            "%(budget)s covers %(minutes)s minutes at %(price)s",
            count,
        ) % {**values, "minutes": count_text(count)}
    elif exact_hours < 24:
        text = gettext("%(budget)s covers %(hours)s hours at %(price)s") % {
            **values, "hours": one_decimal_text(exact_hours)
        }
    else:
        text = gettext("%(budget)s covers %(hours)s hours (%(days)s days) at %(price)s") % {
            **values, "hours": one_decimal_text(exact_hours), "days": one_decimal_text(exact_hours / 24)
        }
    capped = booking_limit_hours is not None and exact_hours > booking_limit_hours
    if capped and booking_limit_hours is not None:
        text += gettext("; the booking limit of %(hours)s h cuts a single booking shorter") % {
            "hours": format_number(booking_limit_hours)
        }
    return BudgetCover(hours, days, capped, booking_limit_hours, text)


def why_it_fits(offer: MachineOffer, fit: Fit) -> tuple[str, ...]:
    source_words = MEMORY_SOURCE_WORDS.get(offer.memory_source, offer.memory_source)
    return (
        gettext("%(memory)s of memory per GPU (%(source)s)") % {
            "memory": fmt_gib(fit.memory_per_gpu_bytes), "source": source_words
        },
        gettext("uses %(used)s of %(free)s free GPUs: %(why)s") % {
            "used": count_text(fit.gpus_used), "free": count_text(offer.free_gpus), "why": fit.why_gpus
        },
        gettext("needs %(need)s per GPU, leaving %(headroom)s (%(percent)s) headroom on each") % {
            "need": fmt_gib(fit.need_per_gpu_bytes),
            "headroom": fmt_gib(fit.headroom_bytes),
            "percent": percent_text(fit.headroom_fraction),
        },
    )


# How `catalog.fleets.memory_flag_for` words a host's memory figure far from the datasheet (stored
# with the machine, in English, as data).
_MEMORY_FLAG = re.compile(
    r"^Reported ([\d,]+) MiB per GPU; the (.+) datasheet figure is ([\d,]+) MiB \(([+-]\d+(?:\.\d+)?)%\)\.$"
)


def memory_flag_words(flag: str) -> str:
    """A machine's memory flag in the active language (as stored when not of the usual form)."""
    match = _MEMORY_FLAG.match(flag)
    if match is None:
        return flag
    reported, gpu, datasheet, deviation = match.groups()
    return gettext(
        "Reported %(reported)s MiB per GPU; the %(gpu)s datasheet figure is %(datasheet)s MiB "
        "(%(deviation)s%%)."
    ) % {
        "reported": format_number(int(reported.replace(",", ""))),
        "gpu": gpu,
        "datasheet": format_number(int(datasheet.replace(",", ""))),
        "deviation": deviation[0] + format_number(Decimal(deviation[1:])),
    }


def limits(offer: MachineOffer, fit: Fit, interruptible: bool | None = None) -> tuple[str, ...]:
    """The row's limits; `interruptible`: whether the price used is an interruptible one (default:
    whether the machine is listed interruptible)."""
    found = []
    if offer.memory_source == "host":
        found.append(gettext("GPU memory is what the host's machine reports; Node Lodge has not checked it"))
    if offer.memory_flag:
        found.append(memory_flag_words(offer.memory_flag))
    if fit.tight:
        found.append(
            gettext(
                "tight margin: %(headroom)s (%(percent)s) left on the fullest GPU; a margin is tight when "
                "less than %(tight)s of the GPU's memory stays free. Servers that reserve a fixed share of "
                "the GPU up front (vLLM) or training scripts that keep extra copies may not fit"
            ) % {
                "headroom": fmt_gib(fit.headroom_bytes),
                "percent": percent_text(fit.headroom_fraction),
                "tight": percent_text(TIGHT_HEADROOM_FRACTION),
            }
        )
    if offer.booking_limit_hours is not None:
        found.append(
            gettext("booking limit: a single booking ends after %(hours)s h") % {
                "hours": format_number(offer.booking_limit_hours)
            }
        )
    if offer.interruptible if interruptible is None else interruptible:
        found.append(gettext("can be interrupted: save checkpoints"))
    if offer.tier == "community":
        found.append(gettext("runs on the host's own hardware; the host can read the session's memory"))
    return tuple(found)


def break_words(code: str, offer: MachineOffer, hourly_price: Decimal, preferences: Preferences) -> str:
    if code == BREAK_TIER:
        return gettext("%(tier)s tier; you chose %(chosen)s") % {
            "tier": TIER_WORDS[offer.tier], "chosen": TIER_WORDS[preferences.tier]
        }
    if code == BREAK_RELIABILITY:
        minimum = reliability_percent(cast(Decimal, preferences.min_reliability))  # broken only where set
        if offer.reliability is None:
            return gettext("reliability not reported; you chose at least %(minimum)s") % {"minimum": minimum}
        return gettext("reliability %(reliability)s; you chose at least %(minimum)s") % {
            "reliability": reliability_percent(offer.reliability), "minimum": minimum
        }
    if code == BREAK_MAX_PRICE:
        limit = cast(Decimal, preferences.max_price_per_hour)  # broken only where it is set
        return gettext("over your price limit: %(price)s > %(limit)s") % {
            "price": per_hour(hourly_price), "limit": per_hour(limit)
        }
    budget = cast(Decimal, preferences.budget)  # the one preference left: broken only where it is set
    count = minutes(budget, hourly_price)
    return ngettext(
        "budget covers under an hour: %(budget)s at %(price)s lasts %(minutes)s minute",
        "budget covers under an hour: %(budget)s at %(price)s lasts %(minutes)s minutes",
        count,
    ) % {
        "budget": money_text(budget), "price": per_hour(hourly_price),
        "minutes": count_text(count),
    }
