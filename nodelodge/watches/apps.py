from django.apps import AppConfig


class WatchesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "nodelodge.watches"
    verbose_name = "Watches"

    def ready(self):
        from nodelodge.launches.my_launches import add_part

        add_part("nodelodge.watches.views.list_context")  # the watches listed on My launches
