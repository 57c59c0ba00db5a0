from django.apps import AppConfig


class HardeningConfig(AppConfig):
    name = "nodelodge.hardening"
    label = "hardening"
    verbose_name = "Hardening"

    def ready(self):
        from . import checks  # noqa: F401  (registers the settings checks)
