"""What the answer says of each machine it shows: its fit in words, confidence, budget cover, limits,
measured speeds and price per million tokens. The matching engine (`sizing.matching`) decides which
machines are shown; this describes them."""
from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar, cast

from . import wording
from .breakdown import Breakdown
from .calculators.llamacpp_inference import gpu_layers_setting
from .calculators.vllm_interconnect import interconnect_of_gpu
from .confidence import confidence
from .engine_support import SGLANG, VLLM, alternative_words, gpu_architecture, refusal_words
from .i18n import gettext
from .markets import INTERRUPTIBLE, offer_markets, terms_text
from .offers import MachineOffer, MeasuredSpeed, Preferences
from .results import MarketRow, RecommendedMachine
from .speeds import price_per_million_tokens, speed_for

if TYPE_CHECKING:
    from .fit import Fit
    from .matching import _Candidate

_Built = TypeVar("_Built")


def serves_tokens(breakdown: Breakdown) -> bool:
    """Whether the answer speaks of tokens per second (a language model run to serve)."""
    capabilities = breakdown.capabilities
    return capabilities is not None and capabilities.serves_tokens


def speeds_price_the_answer(breakdown: Breakdown) -> bool:
    """Whether a speed measured on a machine prices this answer (a price per million tokens, the price per
    million sort, a throughput plan). Speeds are measured with the whole model on the machine's GPUs: an
    answer that keeps layers in host memory runs them on the CPU, slower by an amount no measurement
    gives, so none prices it. The one rule the page, the API and the CLI read."""
    return serves_tokens(breakdown) and not breakdown.layers_on_host


def measured_speeds_note(breakdown: Breakdown) -> str | None:
    """What a row's measured speeds say where they do not price the answer because layers sit on the CPU
    (`speeds_price_the_answer`); None elsewhere."""
    if not serves_tokens(breakdown) or not breakdown.layers_on_host:
        return None
    return gettext(
        "Measured with every layer on the GPUs: this answer keeps layers on the CPU, which run slower, so "
        "these speeds overstate it and price no million tokens.")


def plan_refusal(breakdown: Breakdown) -> str | None:
    """Why no throughput plan answers this need: a plan adds up measured speeds, and none was measured as
    an answer with layers on the CPU runs (`speeds_price_the_answer`); None where a plan may be asked."""
    if not serves_tokens(breakdown) or not breakdown.layers_on_host:
        return None
    return gettext(
        "A throughput plan adds up speeds measured with every layer on the GPUs; with %(setting)s some "
        "layers run on the CPU, slower by an amount no measurement gives. Leave gpu_layers empty (every "
        "layer) to plan, or leave the throughput empty."
    ) % {"setting": gpu_layers_setting(breakdown.inputs.get("engine", ""), breakdown.inputs["gpu_layers"])}


def machine_price_per_million(
    breakdown: Breakdown, offer: MachineOffer, price_per_gpu_hour: Decimal | None = None
) -> Decimal | None:
    """The price per million tokens at the speed measured on this machine for the model and
    precision sized, at the price used (`price_per_gpu_hour`, default the listed price); None without
    one, or where tokens do not apply or no measured speed prices the answer (`speeds_price_the_answer`)."""
    if not offer.measured_speeds or not speeds_price_the_answer(breakdown):
        return None
    speed = speed_for(offer.measured_speeds, breakdown.inputs.get("model"), breakdown.precision)
    if speed is None:
        return None
    price = offer.price_per_gpu_hour if price_per_gpu_hour is None else price_per_gpu_hour
    return price_per_million_tokens(price, speed.value, speed.gpus)



class Describer:
    """Words for one recommendation call. Many machines share the same shape, so the words are cached
    by the few fields they depend on."""

    def __init__(self, breakdown: Breakdown, preferences: Preferences):
        self.breakdown = breakdown
        self.preferences = preferences
        self.model_slug = breakdown.inputs.get("model")
        self.speeds_note = measured_speeds_note(breakdown)
        self._cache: dict[tuple[object, ...], object] = {}

    def _cached(self, key: tuple[object, ...], build: Callable[[], _Built]) -> _Built:
        if key not in self._cache:
            self._cache[key] = build()
        return cast(_Built, self._cache[key])  # each key's first word names what it caches

    def machine(self, candidate: _Candidate) -> RecommendedMachine:
        offer, fit = candidate.offer, candidate.fit
        level, reasons = self._cached(
            ("confidence", offer.memory_source, offer.memory_flag, fit),
            lambda: confidence(self.breakdown, offer, fit),
        )
        # A machine priced in the interruptible market can be taken back, listed so or not.
        interruptible = candidate.market == INTERRUPTIBLE
        limit_key = (offer.memory_source, offer.memory_flag, offer.tier, interruptible,
                     offer.booking_limit_hours, fit)
        return RecommendedMachine(
            offer=offer,
            fit=fit,
            hourly_price=candidate.hourly_price,
            market=candidate.market,
            price_per_gpu_hour=candidate.price_per_gpu_hour,
            budget_covers=self._budget_cover(candidate.hourly_price, offer.booking_limit_hours),
            why_it_fits=self._cached(
                ("why", offer.memory_source, offer.free_gpus, fit), lambda: wording.why_it_fits(offer, fit)
            ),
            limits=self._cached(("limits", *limit_key), lambda: wording.limits(offer, fit, interruptible)),
            confidence=level,
            confidence_reasons=tuple(reasons),
            measured_speed=self._speeds(offer),
            measured_speeds_note=self.speeds_note,
            serves_tokens=serves_tokens(self.breakdown),
            price_per_million_tokens=machine_price_per_million(
                self.breakdown, offer, candidate.price_per_gpu_hour
            ),
            **self._cached(("capacity", fit.gpus_used, fit.memory_per_gpu_bytes, offer.gpu_type,
                            offer.gpu_architecture, offer.gpu_compute_capability),
                           lambda: self._capacity(fit, offer)),
            markets=self._cached(
                ("markets", offer_markets(offer), fit.gpus_used, offer.booking_limit_hours),
                lambda: self._markets(offer, fit.gpus_used),
            ),
            breaks=candidate.breaks,
            breaks_text=tuple(
                wording.break_words(code, offer, candidate.hourly_price, self.preferences)
                for code in candidate.breaks
            ),
        )

    def _budget_cover(
        self, hourly_price: Decimal, booking_limit_hours: int | None
    ) -> wording.BudgetCover | None:
        """What the budget covers at `hourly_price`, worded once per price and booking limit: a row's
        own cover is also that of the market it is priced in."""
        budget = self.preferences.budget
        if budget is None:
            return None
        return self._cached(("budget", hourly_price, booking_limit_hours),
                            lambda: wording.budget_cover(budget, hourly_price, booking_limit_hours))

    def _markets(self, offer: MachineOffer, gpus: int) -> tuple[MarketRow, ...]:
        """Each market the machine is offered in at `gpus` GPUs: its hourly price and what the budget
        covers there."""
        found = []
        for price in offer_markets(offer):
            hourly = price.price_per_gpu_hour * gpus
            found.append(MarketRow(price, hourly, self._budget_cover(hourly, offer.booking_limit_hours),
                                   terms_text(price)))
        return tuple(found)

    def _capacity(self, fit: Fit, offer: MachineOffer) -> dict[str, Any]:
        """What the machine holds at the GPUs it uses (`sizing.capacity`), against the same memory its
        fit read, with the command that starts it on its GPU, or why none does and what runs there
        instead (`sizing.engine_support`); nothing where not asked."""
        capacity = getattr(self.breakdown, "capacity", None)
        if capacity is None:
            return {}
        gpu = gpu_architecture(offer.gpu_architecture, offer.gpu_compute_capability)
        held = capacity.on_machine(fit.gpus_used, fit.memory_per_gpu_bytes, gpu,
                                   interconnect_of_gpu(offer.gpu_type))
        words = None
        if held.runs_on_gpu is False:
            alternative = held.alternative
            choice = None if alternative is None else (alternative.precision, alternative.kv_bits)
            engine = SGLANG if capacity.engine == SGLANG else VLLM
            words = (refusal_words(engine, offer.gpu_type, gpu, held.refused) + " "
                     + alternative_words(choice, alternative is not None and alternative.half))
        return {"max_requests_at_context": held.max_requests_at_context,
                "max_context_at_requests": held.max_context_at_requests, "command": held.command,
                "runs_on_gpu": held.runs_on_gpu, "gpu_support_text": words, "alternative": held.alternative,
                "quantization": held.quantization, "gguf_file": held.gguf_file,
                "gguf_published": held.gguf_published}

    def _speeds(self, offer: MachineOffer) -> tuple[MeasuredSpeed, ...]:
        if not offer.measured_speeds or self.model_slug is None:
            return ()
        found = [
            speed
            for speed in offer.measured_speeds
            if speed.model_slug == self.model_slug and speed.precision == self.breakdown.precision
        ]
        return tuple(sorted(found, key=lambda speed: (speed.unit, speed.measured_at, speed.value)))
