"""The Celery application: the worker and beat refresh provider feeds."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodelodge.settings")

app = Celery("nodelodge")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Threads that never imported this module (a threaded dev server) still find this app.
app.set_default()
