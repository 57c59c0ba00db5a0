from django.urls import path

from . import views

app_name = "refresh"

urlpatterns = [
    path("feeds/demo/<slug:slug>.json", views.demo_feed, name="demo_feed"),
]
