"""Which language a request is answered in, and the switch between English and German.

Pages carry their language in the address: English at `/…`, German at `/de/…` (Django's
`i18n_patterns`, whose LocaleMiddleware reads the prefix). An unprefixed page asked for by a browser
whose remembered choice (the language cookie) or, with no choice yet, whose Accept-Language prefers
German is sent to its `/de/` address. The JSON API stays at `/api/v1/` and answers its messages in
the language of Accept-Language (English without one); the admin follows the choice or the browser.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpResponseRedirect
from django.urls import translate_url
from django.utils import translation
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import trans_real
from django.views.decorators.http import require_GET

API_PREFIX = "/api/"
ADMIN_PREFIX = "/admin/"


def language_from_header(request) -> str:
    """The first supported language of Accept-Language; the default language without one."""
    header = request.META.get("HTTP_ACCEPT_LANGUAGE", "")
    for code, _quality in trans_real.parse_accept_lang_header(header):
        if code == "*":
            break
        try:
            return translation.get_supported_language_variant(code)
        except LookupError:
            continue
    return settings.LANGUAGE_CODE


def wanted_language(request) -> str:
    """The remembered choice, else the browser's preference, else the default."""
    chosen = request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME)
    if chosen:
        try:
            return translation.get_supported_language_variant(chosen)
        except LookupError:
            pass
    return language_from_header(request)


def address_in(url: str, language: str) -> str:
    """The same page (path and query string) in another language; unchanged when it has none."""
    current = translation.get_language_from_path(urlsplit(url).path) or settings.LANGUAGE_CODE
    with translation.override(current):
        return translate_url(url, language)


class LanguageChoiceMiddleware:
    """After LocaleMiddleware, which reads the page's prefix: the API and the admin, which have no
    prefix, get their language here, and an unprefixed page goes to its German address when German
    is wanted. An unprefixed page is English otherwise (a request without Accept-Language too)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        path = request.path_info
        language = None
        if path.startswith(API_PREFIX):
            language = language_from_header(request)
        elif path.startswith(ADMIN_PREFIX):
            language = wanted_language(request)
        elif (
            request.method in ("GET", "HEAD")
            and "HTTP_HX_REQUEST" not in request.META
            and translation.get_language_from_path(path) is None
            and wanted_language(request) != settings.LANGUAGE_CODE
        ):
            full_path = request.get_full_path()
            target = address_in(full_path, wanted_language(request))
            if target != full_path:
                response = HttpResponseRedirect(target)
                patch_vary_headers(response, ("Accept-Language", "Cookie"))
                return response
        if language is not None:
            translation.activate(language)
            request.LANGUAGE_CODE = language
        response = self.get_response(request)
        if path.startswith(API_PREFIX):
            patch_vary_headers(response, ("Accept-Language",))
        elif translation.get_language_from_path(path) is None and not path.startswith(ADMIN_PREFIX):
            # An unprefixed page answers differently by the choice and the browser's language.
            patch_vary_headers(response, ("Accept-Language", "Cookie"))
        return response


@require_GET
def switch_language(request, code: str):
    """The top bar's English | Deutsch links: the same page and query string in the chosen language,
    the choice remembered in the language cookie. A plain link, so it works without JavaScript."""
    if code not in dict(settings.LANGUAGES):
        code = settings.LANGUAGE_CODE
    next_url = request.GET.get("next") or "/"
    if not url_has_allowed_host_and_scheme(next_url, {request.get_host()}, request.is_secure()):
        next_url = "/"
    response = HttpResponseRedirect(address_in(next_url, code))
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        code,
        max_age=settings.LANGUAGE_COOKIE_AGE or 365 * 24 * 3600,
        path=settings.LANGUAGE_COOKIE_PATH,
        samesite="Lax",
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
    )
    return response
