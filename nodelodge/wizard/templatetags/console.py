"""Display helpers: sizes are computed in bytes and rounded only here, and shown in the page's
language (19.55 in English, 19,55 in German)."""
from decimal import Decimal, InvalidOperation

from django import template
from django.utils.formats import number_format
from django.utils.translation import get_language, gettext, pgettext_lazy

from nodelodge.i18n import address_in
from nodelodge.wizard import list_controls as written_controls
from nodelodge.wizard.machine_rows import machine_rows as written_rows
from sizing.countries import country_name as _country_name
from sizing.countries import place_name as _place_name
from sizing.units import decimal_text, gib_display, money_text

register = template.Library()

CONFIDENCE_WORDS = {
    "high": pgettext_lazy("confidence", "high"),
    "medium": pgettext_lazy("confidence", "medium"),
    "low": pgettext_lazy("confidence", "low"),
}


@register.filter
def gib(n_bytes) -> str:
    try:
        return gib_display(int(n_bytes))
    except (TypeError, ValueError):
        return ""


@register.filter
def gib2(value) -> str:
    """A GiB figure (already in GiB) with two decimals."""
    return decimals(value, 2)


@register.filter
def decimals(value, places=2) -> str:
    """A figure with `places` decimals, halves rounded up, grouped as the page's language writes it
    (`sizing.units.decimal_text`): every figure a page shows is rounded by that one rule."""
    try:
        return decimal_text(float(value), int(places))
    except (TypeError, ValueError, InvalidOperation):
        return ""


@register.filter
def localize_number(value) -> str:
    """A number kept as text for the API ("75", "12.5") as the page's language writes it."""
    try:
        return number_format(Decimal(str(value)), force_grouping=True)
    except (TypeError, ValueError, InvalidOperation):
        return value


@register.filter
def money(value) -> str:
    try:
        return money_text(value)
    except (InvalidOperation, TypeError, ValueError):
        return ""


@register.filter
def confidence_word(code) -> str:
    return str(CONFIDENCE_WORDS.get(code, code))


@register.filter
def country_name(code) -> str:
    return _country_name(code) if code else gettext("Unknown location")


@register.filter
def place_name(place) -> str:
    """A region or city from a provider's feed, in the page's language where it has its own name."""
    return _place_name(place) or ""


@register.filter
def in_current_language(url) -> str:
    """A page's address (as stored, e.g. a booking's result) in the language of the page showing it."""
    return address_in(url, get_language()) if url else url


@register.simple_tag(takes_context=True)
def machine_rows(context, machines, columns, whole=False):
    """The machine table's rows (`wizard.machine_rows`), each Launch form carrying the page's query;
    `whole`: each row's details written in it, open (a machine's own page)."""
    return written_rows(machines, int(columns), context.get("query_string") or "", whole=bool(whole))


@register.simple_tag
def field_error(name, message):
    """The message beside a form field (`wizard.list_controls.field_error`), hidden while it has none."""
    return written_controls.field_error(name, message)


@register.simple_tag(takes_context=True)
def list_controls(context):
    """The machine list's sort, filters and grouping (`wizard.list_controls`), over the page's values and
    errors; the GPU models are those of the machines looked at (none where the query has errors)."""
    result = context.get("result")
    return written_controls.list_controls(
        context.get("values") or {}, context.get("errors") or {}, context.get("sorts") or (),
        context.get("confidence_filters") or (), context.get("groups") or (),
        result.listing.gpu_types if result else (),
    )


@register.filter
def percent(fraction) -> str:
    """A share (0 to 1) as a whole percentage, halves rounded up: "67%" ("67 %" in German)."""
    try:
        return gettext("%(percent)s%%") % {"percent": decimal_text(Decimal(str(fraction)) * 100, 0)}
    except (TypeError, ValueError, InvalidOperation):
        return ""
