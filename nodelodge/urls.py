from django.conf.urls.i18n import i18n_patterns
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from nodelodge.accounts.views import signup, signup_confirm
from nodelodge.hardening.mail_limit import password_reset_rate_limited
from nodelodge.i18n import switch_language
from nodelodge.wizard.api import api

# Pages: English at /…, German at /de/… (docs/guides/languages.md). The API, the admin, the demo feeds
# and the language switch have one address for every language.
urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("language/<str:code>/", switch_language, name="switch_language"),
    path("", include("nodelodge.refresh.urls")),
]
urlpatterns += i18n_patterns(
    path("", include("nodelodge.wizard.urls")),
    # Password reset mails any address typed: limited per client and per address (mail_limit.py).
    path("accounts/password_reset/", password_reset_rate_limited(auth_views.PasswordResetView.as_view()),
         name="password_reset"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("accounts/signup/", signup, name="signup"),
    path("accounts/signup/confirm/<uidb64>/<token>/", signup_confirm, name="signup_confirm"),
    path("", include("nodelodge.launches.urls")),
    path("", include("nodelodge.watches.urls")),
    prefix_default_language=False,
)

handler404 = "nodelodge.hardening.errors.not_found"
handler500 = "nodelodge.hardening.errors.server_error"
