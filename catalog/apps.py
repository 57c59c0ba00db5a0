from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog"

    def ready(self):
        from catalog import checks  # noqa: F401  (registers the system checks)
