from django.apps import AppConfig


class SizingConfig(AppConfig):
    name = "sizing"
    verbose_name = "Sizing"

    def ready(self):
        # The engine is pure Python; under Django its words and figures follow the active language.
        from django.utils import numberformat, translation
        from django.utils.formats import get_format

        from . import i18n

        def format_number(value, places=None, grouping=True):
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
