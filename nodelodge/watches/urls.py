from django.urls import path

from . import views

app_name = "watches"
urlpatterns = [
    path("watches/", views.create, name="create"),
    path("watches/<int:pk>/<str:action>/", views.act, name="act"),
    path("watches/unsubscribe/<str:token>/", views.unsubscribe, name="unsubscribe"),
    path("watches/feed/<str:token>.atom", views.feed, name="feed"),
]
