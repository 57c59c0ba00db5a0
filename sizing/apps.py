import functools
from decimal import Decimal

from django.apps import AppConfig


class SizingConfig(AppConfig):
    name = "sizing"
    verbose_name = "Sizing"

    def ready(self) -> None:
        # The engine is pure Python; under Django its words and figures follow the active language.
        from django.utils import numberformat, translation
        from django.utils.formats import get_format

        from . import i18n

        @functools.cache
        def separators(language: str) -> dict[int, str] | None:
            """The active language's separators as a translation of the English figure, or None where
            its grouping is not plain threes (then Django's general formatter is used)."""
            if get_format("NUMBER_GROUPING") != 3:
                return None
            thousands, decimal = get_format("THOUSAND_SEPARATOR"), get_format("DECIMAL_SEPARATOR")
            return str.maketrans({",": thousands, ".": decimal})

        def format_number(value: int | Decimal, places: int | None = None, grouping: bool = True) -> str:
            # Figures are formatted by the thousand on a page: the English figure with the language's
            # separators swapped in costs a fraction of Django's general formatter, same result.
            table = separators(i18n.language())
            if table is not None:
                return i18n.english_number(value, places, grouping).translate(table)
            return numberformat.format(
                value,
                get_format("DECIMAL_SEPARATOR"),
                decimal_pos=places,
                grouping=get_format("NUMBER_GROUPING") if grouping else 0,
                thousand_sep=get_format("THOUSAND_SEPARATOR"),
                force_grouping=grouping,
                use_l10n=True,
            )

        i18n.install(
            gettext=translation.gettext,
            ngettext=translation.ngettext,
            pgettext=translation.pgettext,
            format_number=format_number,
            language=translation.get_language,
        )
