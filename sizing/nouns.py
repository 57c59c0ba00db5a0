"""Counted nouns of the formulas and assumptions ("1 layer", "32 layers"), in the active language.

Each is one `ngettext` call so that the catalogue can give every language its own plural forms.
"""
from __future__ import annotations

from fractions import Fraction

from .i18n import ngettext
from .units import fmt_int, general_number


def tokens(count: int) -> str:
    return ngettext("%(count)s token", "%(count)s tokens", count) % {"count": fmt_int(count)}


def requests(count: int) -> str:
    return ngettext("%(count)s request", "%(count)s requests", count) % {"count": fmt_int(count)}


def layers(count: int) -> str:
    return ngettext("%(count)s layer", "%(count)s layers", count) % {"count": fmt_int(count)}


def kv_heads(count: int) -> str:
    return ngettext("%(count)s KV head", "%(count)s KV heads", count) % {"count": fmt_int(count)}


def beams(count: int) -> str:
    return ngettext("%(count)s beam", "%(count)s beams", count) % {"count": fmt_int(count)}


def streams(count: int) -> str:
    return ngettext("%(count)s stream", "%(count)s streams", count) % {"count": fmt_int(count)}


def audio_streams(count: int) -> str:
    return ngettext("%(count)s audio stream", "%(count)s audio streams", count) % {"count": fmt_int(count)}


def linear_attention_layers(count: int) -> str:
    return ngettext(
        "%(count)s linear-attention layer", "%(count)s linear-attention layers", count
    ) % {"count": fmt_int(count)}


def byte_count(value: int | Fraction) -> str:
    """"1 byte", "2 bytes", "0.5 bytes" (a value's width in memory)."""
    singular = value == 1
    return ngettext("%(count)s byte", "%(count)s bytes", 1 if singular else 2) % {
        "count": general_number(value)
    }
