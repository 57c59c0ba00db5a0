from django.urls import path

from nodelodge.accounts import views as accounts

from . import views

app_name = "watches"
urlpatterns = [
    path("watches/", views.create, name="create"),
    path("watches/<int:pk>/<str:action>/", views.act, name="act"),
    path("watches/tokens/", accounts.token_create, name="token_create"),
    path("watches/tokens/<int:pk>/revoke/", accounts.token_revoke, name="token_revoke"),
    path("watches/unsubscribe/<str:token>/", views.unsubscribe, name="unsubscribe"),
    path("watches/feed/<str:token>.atom", views.feed, name="feed"),
]
