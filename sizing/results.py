"""The engine's answer as values, and the one way a machine row is written out.

`machine_row` is the machine row of every surface: the result panel, the refusal page, the JSON API
and the CLI all read these keys, so a field cannot be spelled two ways.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

from . import nouns
from .breakdown import Breakdown
from .countries import country_name
from .engine_support import RunnableAlternative
from .fit import Fit
from .i18n import gettext, gettext_noop, ngettext
from .markets import MarketPrice, market_name, reliability_text, stock_text
from .offers import MEASUREMENT_FIELDS, MachineOffer, MeasuredSpeed
from .rounding import round_half_up
from .units import decimal_text, gib_number, money_string, money_text
from .wording import MEMORY_SOURCE_SHORT, MEMORY_SOURCE_WORDS, BudgetCover, EmptyAnswer, per_hour


@dataclass(frozen=True)
class MarketRow:
    """One market a shown machine is offered in, at the GPUs the answer uses: its price per GPU-hour,
    hourly price, what the budget covers there, and its terms in words (`sizing.markets`)."""

    price: MarketPrice
    hourly_price: Decimal
    budget_covers: BudgetCover | None
    terms: str


@dataclass(frozen=True)
class RecommendedMachine:
    """A machine that fits. `breaks` is empty for a recommendation and names the preferences an
    alternative breaks (codes "tier", "max_price", "budget"; `breaks_text` in words, same order)."""

    offer: MachineOffer
    fit: Fit
    hourly_price: Decimal
    budget_covers: BudgetCover | None
    why_it_fits: tuple[str, ...]
    limits: tuple[str, ...]
    confidence: str
    confidence_reasons: tuple[str, ...]
    measured_speed: tuple[MeasuredSpeed, ...]
    breaks: tuple[str, ...] = ()
    breaks_text: tuple[str, ...] = ()
    # Language-model inference only: what a million tokens cost at the speed measured on this
    # machine (`sizing.speeds.price_per_million_tokens`); None without a measured speed.
    serves_tokens: bool = False
    price_per_million_tokens: Decimal | None = None
    # Where the answer keeps layers on the CPU: that the measured speeds were measured with every layer on
    # the GPUs and price nothing here (`sizing.describing.measured_speeds_note`); None elsewhere.
    measured_speeds_note: str | None = None
    # Inference only (`sizing.capacity`): the most requests at the asked context, the longest context at
    # the asked requests, and under vLLM the command that starts it; None elsewhere.
    max_requests_at_context: int | None = None
    max_context_at_requests: int | None = None
    command: str | None = None
    # Under vLLM (`sizing.engine_support`): whether the asked weights and KV cache run on the machine's GPU
    # (None where not asked); where not, why, and what runs there and fits instead, with its command.
    runs_on_gpu: bool | None = None
    gpu_support_text: str | None = None
    alternative: RunnableAlternative | None = None
    # Every market the machine is offered in (`sizing.markets`), in the markets' order.
    markets: tuple[MarketRow, ...] = ()
    # The market of the price used (`hourly_price` is this price per GPU-hour times the GPUs used): the
    # listed price's unless the market preference let a cheaper one in (`sizing.markets.offer_price`).
    market: str = "on_demand"
    price_per_gpu_hour: Decimal | None = None  # None: the listed price
    # Under llama.cpp or Ollama: the GGUF type and file the row assumes, and whether that file is published.
    quantization: str | None = None
    gguf_file: str | None = None
    gguf_published: bool | None = None

    @property
    def requests_per_dollar(self) -> Decimal | None:
        """Requests at the asked context per dollar per hour (the "most requests per dollar" sort)."""
        if self.max_requests_at_context is None or not self.hourly_price:
            return None
        return Decimal(self.max_requests_at_context) / self.hourly_price

    @property
    def speeds_left_unpriced(self) -> bool:
        """Whether the row has measured speeds that price nothing here (its answer keeps layers on the
        CPU)."""
        return self.measured_speeds_note is not None and bool(self.measured_speed)

    def to_dict(self) -> dict[str, Any]:
        return machine_row(self)


# What the rows of one answer share, by what each depends on (see `_shared`).
SharedWords = dict[tuple[object, ...], Any]


def _shared(words: SharedWords | None, key: tuple[object, ...], build: Callable[[], Any]) -> Any:
    """Words many rows of one answer share (a country's name, a capacity), worded once per value
    when the caller keeps them in `words` (one dict per answer and language), else each time."""
    if words is None:
        return build()
    if key not in words:
        words[key] = build()
    return words[key]


def market_row(row: MarketRow) -> dict[str, Any]:
    """One market of a machine row, as plain JSON values (money as exact decimal strings)."""
    cover = row.budget_covers
    return {
        "market": row.price.market,
        "market_text": market_name(row.price.market),
        "price_per_gpu_hour": money_string(row.price.price_per_gpu_hour),
        "price_per_hour": money_string(row.hourly_price),
        "notice_seconds": row.price.notice_seconds,
        "frequency": row.price.frequency or None,
        "term_days": row.price.term_days,
        "terms_text": row.terms or None,
        "budget_text": cover.text if cover else None,
    }


# What a row says only in its details (the API's every row; the result panel's rows load them when
# opened, from the machine's own page): left out of a row written without `details`.
DETAIL_FIELDS = ("confidence_reasons", "why_it_fits", "limits", "measured_speeds",
                 "measured_speeds_note", "command",
                 "gpu_support_text", "alternative", "quantization", "gguf_file", "gguf_published")


def machine_row(machine: RecommendedMachine, words: SharedWords | None = None, *,
                details: bool = True) -> dict[str, Any]:
    """A recommended machine or alternative as plain JSON values (money as exact decimal strings).
    `words`: what the rows of one answer share, worded once (`_shared`); without `details`, the row as
    the result panel's table lists it: no DETAIL_FIELDS (the keys keep their order either way)."""
    offer, fit = machine.offer, machine.fit
    cover = machine.budget_covers
    per_million = machine.price_per_million_tokens
    source = offer.memory_source
    data = {
        "id": offer.id,
        "provider": offer.provider,
        "tier": offer.tier,
        "provider_machine_id": offer.provider_machine_id,
        "gpu_type": offer.gpu_type,
        "gpu_count": offer.gpu_count,
        "free_gpus": offer.free_gpus,
        "gpus_used": fit.gpus_used,
        "memory_per_gpu_gib": gib_number(fit.memory_per_gpu_bytes),
        "need_per_gpu_gib": gib_number(fit.need_per_gpu_bytes),
        "headroom_gib": gib_number(fit.headroom_bytes),
        "headroom_percent": float(round_half_up(fit.headroom_fraction * 100, 1)),
        "tight_margin": fit.tight,
        "why_gpus": fit.why_gpus,
        "memory_source": source,
        "memory_source_short": _shared(words, ("short", source),
                                       lambda: MEMORY_SOURCE_SHORT.get(source, source)),
        "memory_source_words": _shared(words, ("words", source),
                                       lambda: MEMORY_SOURCE_WORDS.get(source, source)),
        "memory_flag": offer.memory_flag,
        "country": offer.country,
        "country_name": _shared(
            words, ("country", offer.country), lambda: country_name(offer.country) if offer.country else None
        ),
        "region": offer.region,
        # The price used, in the market named beside it (the listed price unless the market preference
        # let a cheaper one in; every market's price is under "markets").
        "price_per_gpu_hour": money_string(
            offer.price_per_gpu_hour if machine.price_per_gpu_hour is None else machine.price_per_gpu_hour
        ),
        "price_per_hour": money_string(machine.hourly_price),
        "market": machine.market,
        "market_text": _shared(words, ("market", machine.market), lambda: market_name(machine.market)),
        "budget_hours": float(cover.hours) if cover and cover.hours is not None else None,
        "budget_days": float(cover.days) if cover and cover.days is not None else None,
        "budget_text": cover.text if cover else None,
        "budget_capped_by_booking_limit": cover.capped_by_booking_limit if cover else False,
        "booking_limit_hours": offer.booking_limit_hours,
        "interruptible": offer.interruptible,
        "markets": [market_row(row) for row in machine.markets],
        "reliability": None if offer.reliability is None else format(offer.reliability, "f"),
        "reliability_measures": offer.reliability_measures or None,
        "reliability_text": _shared(words, ("reliability", offer.reliability, offer.reliability_measures),
                                    lambda: reliability_text(offer.reliability, offer.reliability_measures)),
        "stock": offer.stock or None,
        "stock_text": _shared(words, ("stock", offer.stock), lambda: stock_text(offer.stock)),
        "confidence": machine.confidence,
    }
    if details:
        data.update(
            confidence_reasons=list(machine.confidence_reasons),
            why_it_fits=list(machine.why_it_fits),
            limits=list(machine.limits),
            measured_speeds=[speed_row(speed) for speed in machine.measured_speed],
            measured_speeds_note=machine.measured_speeds_note if machine.speeds_left_unpriced else None,
        )
    data.update({
        "price_per_million_tokens": None if per_million is None else money_string(per_million),
        # Without a price, the words ("no measured speed") are the same on every row.
        "price_per_million_tokens_text": (
            price_per_million_text(machine) if per_million is not None
            else _shared(words, ("no price", machine.serves_tokens, machine.speeds_left_unpriced),
                         lambda: price_per_million_text(machine))
        ),
        "last_seen": offer.last_seen.isoformat() if offer.last_seen else None,
        "max_requests_at_context": machine.max_requests_at_context,
        "max_context_at_requests": machine.max_context_at_requests,
        "capacity_text": _shared(
            words, ("capacity", machine.max_requests_at_context, machine.max_context_at_requests),
            lambda: capacity_text(machine),
        ),
    })
    if details:
        data["command"] = machine.command
    data["runs_on_gpu"] = machine.runs_on_gpu
    if details:
        data["gpu_support_text"] = machine.gpu_support_text
        data["alternative"] = machine.alternative.to_dict() if machine.alternative is not None else None
        if machine.gguf_file is not None:
            data.update(quantization=machine.quantization, gguf_file=machine.gguf_file,
                        gguf_published=machine.gguf_published)
    if machine.breaks:
        data["breaks"] = list(machine.breaks)
        data["breaks_text"] = list(machine.breaks_text)
    return data


def capacity_text(machine: RecommendedMachine) -> str | None:
    """"Holds 58 requests at 8,192 tokens · 131,072 tokens at 1 request", or None where not asked."""
    if machine.max_requests_at_context is None:
        return None
    return gettext("Holds %(requests)s at the asked context · %(tokens)s at the asked requests") % {
        "requests": nouns.requests(machine.max_requests_at_context),
        "tokens": nouns.tokens(cast(int, machine.max_context_at_requests)),  # asked with the requests
    }


NO_MEASURED_SPEED = gettext_noop("no measured speed")
# Speeds are measured with every layer on the GPUs; this answer runs some on the CPU.
NO_PRICE_WITH_LAYERS_ON_CPU = gettext_noop("none: layers on the CPU")


def price_per_million_text(machine: RecommendedMachine) -> str | None:
    """"$0.2823" per million tokens, "no measured speed" (never an estimate), "none: layers on the CPU"
    where the row's measured speeds price nothing as the answer keeps layers there, or None where tokens do
    not apply (images, speech, fine-tuning, notebooks)."""
    if not machine.serves_tokens:
        return None
    if machine.speeds_left_unpriced:
        return gettext(NO_PRICE_WITH_LAYERS_ON_CPU)
    if machine.price_per_million_tokens is None:
        return gettext(NO_MEASURED_SPEED)
    return money_text(machine.price_per_million_tokens)


def speed_row(speed: MeasuredSpeed) -> dict[str, Any]:
    """One measured speed, with how it was measured."""
    row = {"model": speed.model_slug, "precision": speed.precision, "value": float(speed.value),
           "unit": speed.unit, "gpus": speed.gpus}
    row.update((field, getattr(speed, field)) for field in MEASUREMENT_FIELDS)
    row["measured_at"] = speed.measured_at.isoformat()
    row["source"] = speed.source
    return row


@dataclass(frozen=True)
class PrecisionAlternative:
    precision: int
    total_gib: float
    machines_fitting: int  # machines that fit at this precision and meet every preference
    more_machines: int  # machines_fitting minus the machines recommended at the chosen precision
    cheapest_hourly_price: Decimal | None
    cheapest_offer_id: int | None

    @property
    def text(self) -> str:
        words = gettext("%(bits)s-bit needs %(memory)s GiB") % {
            "bits": self.precision, "memory": decimal_text(self.total_gib)
        }
        if self.more_machines > 0:
            words += ngettext(
                " and opens %(count)s more machine", " and opens %(count)s more machines", self.more_machines
            ) % {"count": self.more_machines}
        if self.cheapest_hourly_price is not None:
            words += gettext("; the cheapest costs %(price)s") % {
                "price": per_hour(self.cheapest_hourly_price)
            }
        return words

    def to_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "total_gib": float(round_half_up(self.total_gib)),
            "machines_fitting": self.machines_fitting,
            "more_machines": self.more_machines,
            "cheapest_price_per_hour": (
                money_string(self.cheapest_hourly_price) if self.cheapest_hourly_price is not None else None
            ),
            "cheapest_machine_id": self.cheapest_offer_id,
            "text": self.text,
        }


@dataclass(frozen=True)
class Recommendation:
    breakdown: Breakdown
    machines: tuple[RecommendedMachine, ...]  # the first `machines_shown`, cheapest first
    alternatives: tuple[RecommendedMachine, ...]  # the first ALTERNATIVES_SHOWN, same order as machines
    alternatives_total: int
    precision_alternatives: tuple[PrecisionAlternative, ...]
    constraints: tuple[tuple[str, str], ...]
    # reason -> machines not recommended for it, in EXCLUDED_REASONS order. Every machine passed in (and every
    # one the catalog left out before) is counted once: here or in `machines`. Alternatives count under the
    # first preference they break ("other tier", "over the price limit", "budget covers under an hour").
    excluded: dict[str, int] = field(default_factory=dict)
    empty: EmptyAnswer | None = None  # why no machine is listed, and what to change
    machines_total: int = 0  # every machine that fits and meets every preference
    fleet_silent: bool = False  # no machine anywhere has reported within the staleness window
    # The most memory per GPU among the machines the rule let through (None: none): what any need can fit.
    largest_memory_mib: int | None = None

    @property
    def empty_reason(self) -> str | None:
        return self.empty.text if self.empty is not None else None

    def to_dict(self, *, details: bool = True) -> dict[str, Any]:
        """The answer as the API writes it; without `details`, its rows as the result panel's table
        lists them (`machine_row`)."""
        words: SharedWords = {}  # what the rows share, worded once (`machine_row`)
        return {
            "memory": self.breakdown.as_dict(),
            "machines": [machine_row(machine, words, details=details) for machine in self.machines],
            "alternatives": [machine_row(machine, words, details=details) for machine in self.alternatives],
            "machines_total": self.machines_total,
            "alternatives_total": self.alternatives_total,
            "precision_alternatives": [alt.to_dict() for alt in self.precision_alternatives],
            "constraints": [{"label": label, "value": value} for label, value in self.constraints],
            "excluded": dict(self.excluded),
            "empty_reason": self.empty_reason,
            "relax": [hint.to_dict() for hint in self.empty.hints] if self.empty is not None else [],
            "fleet_silent": self.fleet_silent,
        }
