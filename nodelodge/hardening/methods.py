"""HTTP methods: HEAD answered wherever GET is; OPTIONS and methods a path does not take answered
before its view runs.

Monitors and link checkers ask with HEAD; Django's views (`require_GET`, django-ninja's GET
operations) refuse it with 405, so a monitor saw the console as down. The request runs as a GET,
and the answer keeps GET's status and headers (Content-Length included) and drops the body.
"""
from __future__ import annotations

import functools
import inspect

from django.http import HttpResponse, HttpResponseNotAllowed
from django.urls import Resolver404, get_resolver
from ninja.operation import PathView


class HeadAsGetMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method != "HEAD":
            return self.get_response(request)
        request.method = "GET"
        try:
            response = self.get_response(request)
        finally:
            request.method = "HEAD"
        if response.streaming:
            response.streaming_content = []
        else:
            length = len(response.content)
            response.content = b""
            response["Content-Length"] = str(length)
        return response


# Every view states the methods it takes: a class-based view by its handlers, an API path by its
# operations, a function view by Django's `require_GET`, `require_POST` or `require_http_methods`.
# One that states none (the admin's views, the API's schema and docs pages) takes these.
UNSTATED_PAGE_METHODS = ("GET", "POST")
UNSTATED_API_METHODS = ("GET",)


def _stated_by_decorators(view) -> list[str] | None:
    """The methods Django's `require_http_methods` (require_GET, require_POST) lets through, found
    in the closure of its wrapper anywhere down the view's chain of decorators (`__wrapped__`)."""
    seen = set()
    while view is not None and id(view) not in seen:
        seen.add(id(view))
        try:
            names = inspect.getclosurevars(view).nonlocals
        except TypeError:  # a partial or another callable that is not a function
            names = {}
        if isinstance(names.get("request_method_list"), (list, tuple, set, frozenset)):
            return [str(method).upper() for method in names["request_method_list"]]
        path_view = names.get("self")
        if isinstance(path_view, PathView):  # an API path: its operations' methods
            return [method for operation in path_view.operations for method in operation.methods]
        view = getattr(view, "__wrapped__", None)
    return None


def _stated_methods(view) -> tuple[str, ...] | None:
    try:
        return _stated_methods_kept(view)
    except TypeError:  # a view that cannot be a key
        return _stated_methods_of(view)


def _stated_methods_of(view) -> tuple[str, ...] | None:
    view_class = getattr(view, "view_class", None)
    methods: list[str] | None
    if view_class is not None:
        methods = [method.upper() for method in view_class.http_method_names
                   if method not in ("head", "options") and hasattr(view_class, method)]
    else:
        methods = _stated_by_decorators(view)
    return None if methods is None else tuple(dict.fromkeys(methods))


_stated_methods_kept = functools.cache(_stated_methods_of)  # the URL patterns' views do not change


def allowed_methods(view, *, api: bool) -> list[str]:
    """What the `Allow` header says for a view: its methods, HEAD wherever GET is (HeadAsGetMiddleware),
    and OPTIONS, answered for every path (MethodsMiddleware)."""
    stated = _stated_methods(view)
    methods = list(stated if stated is not None else UNSTATED_API_METHODS if api else UNSTATED_PAGE_METHODS)
    if "GET" in methods:
        methods.append("HEAD")
    methods.append("OPTIONS")
    return list(dict.fromkeys(methods))


class MethodsMiddleware:
    """OPTIONS is answered for every page and API path with its `Allow`, without running the view (it
    rendered the whole page before); a method the path does not take (TRACE, PUT on a page, DELETE
    on a GET operation) is answered 405 with `Allow` before the view runs, JSON under /api/
    (errors.ApiMethodNotAllowedMiddleware). A path that names no view goes on to its 404.

    After LocaleMiddleware, so a German page's /de/ address resolves; HEAD arrives here as GET."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            match = get_resolver(getattr(request, "urlconf", None)).resolve(request.path_info)
        except Resolver404:
            return self.get_response(request)
        methods = allowed_methods(match.func, api=request.path_info.startswith("/api/"))
        if request.method == "OPTIONS":
            response = HttpResponse(status=204)
            response["Allow"] = ", ".join(methods)
            return response
        if request.method not in methods:
            return HttpResponseNotAllowed(methods)
        return self.get_response(request)
