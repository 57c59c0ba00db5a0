from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog"

    def ready(self):
        from django.db.backends.signals import connection_created

        from catalog import checks  # noqa: F401  (registers the system checks)
        from catalog.database import use_fast_timestamps

        connection_created.connect(use_fast_timestamps, dispatch_uid="catalog_fast_timestamps")
