"""Numbers as typed: in the page's language (12,50 and 1.000 on the German page), or plain dot
decimals for the API, the commands and the addresses the console writes."""
from __future__ import annotations

from decimal import Decimal

from django import forms
from django.core.exceptions import ValidationError
from django.utils.formats import get_format

from sizing.units import NumberNotRead, read_number


def number_marks(language: str) -> tuple[str, str]:
    """The decimal mark and the thousands separator of a language ("." and "," in English)."""
    return get_format("DECIMAL_SEPARATOR", language), get_format("THOUSAND_SEPARATOR", language)


def typed_number(text: str, language: str | None) -> Decimal:
    """A number as typed on a page in `language` (`sizing.units.read_number`: 12,50 and 1.000 in
    German, 12.50 and 1,000 in English), or, with no language (the API, the commands, the addresses
    this module writes), a plain decimal with a dot: 12.50, 1000. NumberNotRead otherwise."""
    if language is None:
        try:
            number = Decimal(str(text).strip())
        except ArithmeticError:
            raise NumberNotRead(text) from None
        if not number.is_finite():
            raise NumberNotRead(text)
        return number
    return read_number(str(text), *number_marks(language))


class TypedDecimalField(forms.DecimalField):
    """A decimal field that reads numbers as the page's language writes them (`language`, set by the
    form); without one it reads them as Django does (the API and the commands stay dot-decimal)."""

    language: str | None = None

    def to_python(self, value):
        if self.language is None or value in self.empty_values:
            return super().to_python(value)
        try:
            return typed_number(value, self.language)
        except NumberNotRead:
            raise ValidationError(self.error_messages["invalid"], code="invalid") from None

    def run_validators(self, value):
        """Each message once: a figure past the limit fails the limit and the count of its digits,
        which say the same sentence."""
        try:
            super().run_validators(value)
        except ValidationError as error:
            raise ValidationError(list(dict.fromkeys(error.messages))) from None


class TypedIntegerField(forms.IntegerField):
    """A whole-number field that reads 4.096 on a German page and 4,096 on an English one as 4096."""

    language: str | None = None
    WHOLE_DIGITS = 18  # more is past every limit: refused before it is made a Python int

    def to_python(self, value):
        if self.language is None or value in self.empty_values:
            return super().to_python(value)
        try:
            number = typed_number(value, self.language)
        except NumberNotRead:
            raise ValidationError(self.error_messages["invalid"], code="invalid") from None
        if number.adjusted() > self.WHOLE_DIGITS:
            raise ValidationError(
                self.error_messages["max_value"], code="max_value", params={"limit_value": self.max_value}
            )
        if number != number.to_integral_value():
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return int(number)
