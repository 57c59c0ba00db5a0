from django.apps import AppConfig


class WatchesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "nodelodge.watches"
    verbose_name = "Watches"
