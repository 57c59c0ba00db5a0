"""The engine's words: why a machine fits, its limits, what a budget covers, why an answer is
empty, and the constraints applied. Figures are rounded for display by `sizing.units`; words and
figures are in the active language (`sizing.i18n`).

Modules: `common` (shared words and helpers), `machine` (one machine), `empty` (an empty answer and
its hints), `constraints` (the constraints applied).
"""
from .common import (
    MEMORY_SOURCE_SHORT,
    MEMORY_SOURCE_WORDS,
    TIER_WORDS,
    per_hour,
)
from .constraints import constraints_applied
from .empty import (
    EmptyAnswer,
    Hint,
    empty_answer,
    limit_hint,
    market_words,
    relax_layers_words,
    relax_size_words,
    relaxed_words,
    settable,
    silent_fleet_words,
)
from .machine import BudgetCover, break_words, budget_cover, limits, memory_flag_words, why_it_fits

__all__ = [
    "MEMORY_SOURCE_SHORT",
    "MEMORY_SOURCE_WORDS",
    "TIER_WORDS",
    "BudgetCover",
    "EmptyAnswer",
    "Hint",
    "break_words",
    "budget_cover",
    "constraints_applied",
    "empty_answer",
    "limit_hint",
    "limits",
    "market_words",
    "memory_flag_words",
    "per_hour",
    "relax_layers_words",
    "relax_size_words",
    "relaxed_words",
    "settable",
    "silent_fleet_words",
    "why_it_fits",
]
