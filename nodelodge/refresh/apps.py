from django.apps import AppConfig


class RefreshConfig(AppConfig):
    name = "nodelodge.refresh"
    label = "refresh"
    verbose_name = "Provider refresh"

    def ready(self):
        # The admin's autodiscovery has run by now (django.contrib.admin is listed first), so the
        # catalog's Provider admin, when registered, can be given the "refresh now" action here
        # without the catalog app knowing about this one.
        from .admin import attach_refresh_action_to_provider_admin

        attach_refresh_action_to_provider_admin()
