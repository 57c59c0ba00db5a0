"""Country choices: ISO alpha-2 codes, "EU" for every member state, nothing for anywhere."""

import pytest

from sizing.countries import EU_MEMBERS, country_name, expand_countries
from sizing.errors import SizingError


def test_the_eu_has_27_members_with_greece_as_gr():
    assert len(EU_MEMBERS) == 27
    assert "GR" in EU_MEMBERS
    assert "EL" not in EU_MEMBERS
    assert {"DE", "FR", "IE", "CY", "MT"} <= EU_MEMBERS
    assert not {"GB", "CH", "NO"} & EU_MEMBERS


def test_eu_expands_to_its_members_case_insensitively_plus_other_codes():
    expanded, typed = expand_countries(["eu", "ch", " US "])
    assert expanded == EU_MEMBERS | {"CH", "US"}
    assert typed == ("EU", "CH", "US")


def test_no_codes_means_anywhere():
    assert expand_countries([]) == (None, ())
    assert expand_countries(["", "  "]) == (None, ())


def test_repeated_codes_are_listed_once():
    expanded, typed = expand_countries(["DE", "de", "EU"])
    assert typed == ("DE", "EU")
    assert expanded == EU_MEMBERS


@pytest.mark.parametrize("code", ["XX", "EL", "DEU", "1A", "UK"])
def test_an_unknown_code_is_an_error_on_the_countries_field(code):
    with pytest.raises(SizingError) as error:
        expand_countries(["DE", code])
    assert error.value.field == "countries"
    assert error.value.message == f"Unknown country code: {code}"


def test_country_names():
    assert country_name("DE") == "Germany"
    assert country_name("gr") == "Greece"
    assert country_name("EU") == "European Union"
    assert country_name("XX") == "XX"
