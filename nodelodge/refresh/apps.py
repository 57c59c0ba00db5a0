from django.apps import AppConfig


class RefreshConfig(AppConfig):
    name = "nodelodge.refresh"
    label = "refresh"
    verbose_name = "Provider refresh"
