"""Display helpers: sizes are computed in bytes and rounded only here."""
from decimal import InvalidOperation

from django import template

from sizing.countries import country_name as _country_name
from sizing.units import gib_display, money_text, round_half_up

register = template.Library()


@register.filter
def gib(n_bytes) -> str:
    try:
        return gib_display(int(n_bytes))
    except (TypeError, ValueError):
        return ""


@register.filter
def gib2(value) -> str:
    """A GiB figure (already in GiB) with two decimals."""
    try:
        return f"{round_half_up(float(value)):,}"
    except (TypeError, ValueError, InvalidOperation):
        return ""


@register.filter
def money(value) -> str:
    try:
        return money_text(value)
    except (InvalidOperation, TypeError, ValueError):
        return ""


@register.filter
def country_name(code) -> str:
    return _country_name(code) if code else "Unknown location"

