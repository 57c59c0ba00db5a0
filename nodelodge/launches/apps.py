from django.apps import AppConfig


class LaunchesConfig(AppConfig):
    name = "nodelodge.launches"
    label = "launches"
    verbose_name = "Launches"
