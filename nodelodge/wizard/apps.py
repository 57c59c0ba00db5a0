from django.apps import AppConfig


class WizardConfig(AppConfig):
    name = "nodelodge.wizard"
    label = "wizard"
    verbose_name = "Launch by workload"

    def ready(self):
        from nodelodge import long_lived

        long_lived.connect()
