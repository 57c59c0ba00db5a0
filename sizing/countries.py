"""Countries a machine may run in: ISO 3166 alpha-2 codes, with "EU" standing for every member state."""

from __future__ import annotations

import gettext as _gettext_module
from collections.abc import Iterable
from functools import cache

import pycountry

from .errors import SizingError
from .i18n import TranslatedWords, gettext, gettext_noop, language

# The 27 member states of the European Union. ISO 3166 writes Greece as GR (the EU's own "EL" is not ISO).
EU_MEMBERS: frozenset[str] = frozenset(
    "AT BE BG CY CZ DE DK EE ES FI FR GR HR HU IE IT LT LU LV MT NL PL PT RO SE SI SK".split()
)

EU_CODE = "EU"
# Every ISO 3166 alpha-2 code: "outside the chosen countries" is this set without them.
ALL_CODES: frozenset[str] = frozenset(country.alpha_2 for country in pycountry.countries)


def is_country_code(code: str) -> bool:
    """The one check of a country code: an ISO 3166 alpha-2 code, upper case (DE, US; not UK)."""
    well_formed = len(code) == 2 and code.isascii() and code.isalpha()
    return well_formed and pycountry.countries.get(alpha_2=code) is not None


def expand_countries(codes: Iterable[str]) -> tuple[frozenset[str] | None, tuple[str, ...]]:
    """Turn what the user typed into the set of ISO codes a machine must be in.

    Returns (expanded codes, the normalised input for display). No codes at all means anywhere:
    the expanded set is then None. An unknown code raises SizingError on the "countries" field.
    """
    typed: list[str] = []
    expanded: set[str] = set()
    for raw in codes:
        code = (raw or "").strip().upper()
        if not code:
            continue
        if code == EU_CODE:
            expanded |= EU_MEMBERS
        elif is_country_code(code):
            expanded.add(code)
        else:
            raise SizingError("countries", gettext("Unknown country code: %(code)s") % {"code": raw.strip()})
        if code not in typed:
            typed.append(code)
    if not typed:
        return None, ()
    return frozenset(expanded), tuple(typed)


# Codes people type that ISO 3166 spells otherwise.
COMMON_MISTAKES = {"UK": "GB", "EL": "GR", "KO": "KR", "SW": "SE"}


def country_hint(typed: str) -> str | None:
    """The ISO code someone typing `typed` probably meant (UK -> GB, DEU -> DE, Germany -> DE), or None."""
    text = (typed or "").strip()
    code = text.upper()
    if code in COMMON_MISTAKES:
        return COMMON_MISTAKES[code]
    if not text.isascii() or len(text) > 60:
        return None
    if len(code) == 3 and code.isalpha():
        country = pycountry.countries.get(alpha_3=code)
        if country is not None:
            return country.alpha_2
    if len(text) > 3:
        try:
            return pycountry.countries.lookup(text).alpha_2
        except LookupError:
            return None
    return None


def country_name(code: str) -> str:
    """The country's common name ("Germany" for DE, "Deutschland" in German); "European Union" for EU;
    the code itself if unknown."""
    code = (code or "").strip().upper()
    if code == EU_CODE:
        return gettext("European Union")
    country = pycountry.countries.get(alpha_2=code) if len(code) == 2 else None
    if country is None:
        return code
    english = getattr(country, "common_name", None) or country.name
    return _country_names(language()).gettext(english)


@cache
def _country_names(language_code: str) -> _gettext_module.NullTranslations:
    """ISO 3166 names in one language, from the translations pycountry ships (English: as they are)."""
    base = (language_code or "en").split("-")[0].lower()
    if base == "en":
        return _gettext_module.NullTranslations()
    return _gettext_module.translation(
        "iso3166-1", pycountry.LOCALES_DIR, languages=[base], fallback=True
    )


# Places that providers' feeds name in English and that German (the console's other language) names
# otherwise; a place not listed here is shown as the feed writes it (Frankfurt, Texas, Turin).
PLACE_NAMES = TranslatedWords({
    place: gettext_noop(place)
    for place in (
        "Bavaria", "Cologne", "Copenhagen", "Lisbon", "Milan", "Munich", "Naples", "Prague", "Rome",
        "Singapore", "Tokyo", "Vienna", "Warsaw", "Zurich", "Geneva", "Brussels", "Lower Saxony",
        "North Rhine-Westphalia", "Hesse", "Saxony", "Athens", "Bucharest", "Belgrade", "Moscow",
    )
}, context="place")


def place_name(place: str | None) -> str | None:
    """A region or city as the feed names it, in the active language where it has its own name."""
    if not place:
        return place
    return PLACE_NAMES[place] if place in PLACE_NAMES else place

