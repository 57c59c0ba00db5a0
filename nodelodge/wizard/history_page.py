"""A GPU type's price and stock history page: its filters (also the API's) and its chart, drawn on the
server as SVG from the series `nodelodge.refresh.selectors.gpu_type_history` reads."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django import forms
from django.utils.formats import date_format
from django.utils.translation import gettext, gettext_lazy

from catalog.markets import Market
from nodelodge.refresh.selectors import HISTORY_HOURS, GpuTypeHistory
from sizing.countries import country_name, is_country_code
from sizing.units import money_text


class HistoryFilterForm(forms.Form):
    """The market (default on-demand) and the country (empty: every country) of a history."""

    market = forms.ChoiceField(label=gettext_lazy("Market"), choices=Market.choices, required=False)
    country = forms.CharField(label=gettext_lazy("Country"), required=False, max_length=2,
                              error_messages={"max_length": gettext_lazy(
                                  "Enter a two-letter country code such as DE or US.")})

    def clean_market(self) -> str:
        return self.cleaned_data["market"] or Market.ON_DEMAND

    def clean_country(self) -> str:
        code = (self.cleaned_data["country"] or "").strip().upper()
        if code and not is_country_code(code):
            raise forms.ValidationError(gettext("Enter a two-letter country code such as DE or US."))
        return code

    def errors_by_field(self) -> dict[str, str]:
        return {name: " ".join(str(text) for text in messages) for name, messages in self.errors.items()}


# The chart's frame (SVG user units): the prices above, the share of refreshes with stock below.
WIDTH, LEFT, RIGHT = 760, 64, 12
PRICE_TOP, PRICE_BOTTOM = 12, 196
STOCK_TOP, STOCK_BOTTOM = 216, 266
HEIGHT = 292
PLOT_WIDTH = WIDTH - LEFT - RIGHT
STEP = PLOT_WIDTH / HISTORY_HOURS  # one hour's width


@dataclass(frozen=True)
class Tick:
    at: str  # the coordinate, as SVG writes it
    label: str


@dataclass(frozen=True)
class Chart:
    cheapest_path: str
    median_path: str
    stock_path: str  # one bar per hour, as one path (a path per bar cost the page a template loop of 720)
    price_ticks: tuple[Tick, ...]
    day_ticks: tuple[Tick, ...]
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right_edge: int = WIDTH - RIGHT
    price_bottom: int = PRICE_BOTTOM
    stock_top: int = STOCK_TOP
    stock_bottom: int = STOCK_BOTTOM


def _n(value: float) -> str:
    """A coordinate with one decimal: enough for the screen, short in the page (coordinates are
    floats: they place marks, they are not figures anyone reads)."""
    return f"{value:.1f}"


def _price_ceiling(highest: Decimal) -> Decimal:
    """The price axis' top: the highest price rounded up to a step of 1, 2 or 5 times a power of ten
    per quarter, so the four ticks are round figures."""
    quarter = highest / 4
    scale = Decimal(10) ** (quarter.adjusted() if quarter > 0 else 0)
    for step in (1, 2, 5, 10):
        if quarter <= step * scale:
            return 4 * step * scale
    return highest  # not reached: 10 × scale exceeds a quarter by construction


def draw(history: GpuTypeHistory) -> Chart | None:
    """The series as SVG paths over the window (a gap where an hour has no row), None without rows."""
    if not history.hours:
        return None
    ceiling = _price_ceiling(max(max(h.cheapest, h.median) for h in history.hours))
    scale = (PRICE_BOTTOM - PRICE_TOP) / float(ceiling)

    def y(price: Decimal) -> float:
        return PRICE_BOTTOM - scale * float(price)

    cheapest: list[str] = []
    median: list[str] = []
    bars: list[str] = []
    stock_span = STOCK_BOTTOM - STOCK_TOP
    bar_width = _n(STEP)
    previous = None
    # One formatted string per mark and no helper calls: this loop runs 720 times per page.
    for hour in history.hours:
        index = int((hour.hour - history.since).total_seconds() // 3600)
        move = "L" if previous is not None and index == previous + 1 else "M"
        left = LEFT + STEP * index
        middle = left + STEP / 2
        cheapest.append(f"{move}{middle:.1f} {PRICE_BOTTOM - scale * float(hour.cheapest):.1f}")
        median.append(f"{move}{middle:.1f} {PRICE_BOTTOM - scale * float(hour.median):.1f}")
        if hour.refreshes_with_stock:
            height = stock_span * hour.refreshes_with_stock / hour.refreshes
            bars.append(f"M{left:.1f} {STOCK_BOTTOM}v-{height:.1f}h{bar_width}v{height:.1f}z")
        previous = index
    price_ticks = tuple(
        Tick(_n(y(ceiling * part / 4)), money_text(ceiling * part / 4)) for part in range(5)
    )
    day_ticks = tuple(
        Tick(_n(LEFT + STEP * 24 * day),
             date_format(history.since + timedelta(days=day), "SHORT_DATE_FORMAT"))
        for day in range(0, HISTORY_HOURS // 24, 5)
    )
    return Chart(" ".join(cheapest), " ".join(median), "".join(bars), price_ticks, day_ticks)


def country_choices(history: GpuTypeHistory) -> list[tuple[str, str]]:
    """The country filter's options: every country, then those with history (and the one asked)."""
    codes = sorted({*history.countries, *([history.country] if history.country else [])})
    return [("", gettext("Every country"))] + [(code, f"{country_name(code)} ({code})") for code in codes]
