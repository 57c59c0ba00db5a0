from django.urls import path

from . import views

app_name = "wizard"
urlpatterns = [
    path("", views.wizard, name="start"),
    path("cluster/", views.cluster, name="cluster"),
    path("machine/", views.machine, name="machine"),
    path("secure-and-community/", views.tiers, name="tiers"),
    path("calculators/", views.calculators, name="calculators"),
    path("gpus/<slug:slug>/history/", views.gpu_history, name="gpu_history"),
]
