from django.contrib import admin
from django.urls import include, path

from nodelodge.launches.views import signup, signup_confirm
from nodelodge.wizard.api import api

urlpatterns = [
    path("", include("nodelodge.wizard.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("accounts/signup/", signup, name="signup"),
    path("accounts/signup/confirm/<uidb64>/<token>/", signup_confirm, name="signup_confirm"),
    path("", include("nodelodge.launches.urls")),
    path("api/v1/", api.urls),
    path("", include("nodelodge.refresh.urls")),
]

handler404 = "nodelodge.hardening.errors.not_found"
handler500 = "nodelodge.hardening.errors.server_error"
