from django.conf.urls.i18n import i18n_patterns
from django.contrib import admin
from django.urls import include, path

from nodelodge.i18n import switch_language
from nodelodge.launches.views import signup, signup_confirm
from nodelodge.wizard.api import api

# Pages: English at /…, German at /de/… (README, "Languages"). The API, the admin, the demo feeds
# and the language switch have one address for every language.
urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("language/<str:code>/", switch_language, name="switch_language"),
    path("", include("nodelodge.refresh.urls")),
]
urlpatterns += i18n_patterns(
    path("", include("nodelodge.wizard.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("accounts/signup/", signup, name="signup"),
    path("accounts/signup/confirm/<uidb64>/<token>/", signup_confirm, name="signup_confirm"),
    path("", include("nodelodge.launches.urls")),
    prefix_default_language=False,
)

handler404 = "nodelodge.hardening.errors.not_found"
handler500 = "nodelodge.hardening.errors.server_error"
