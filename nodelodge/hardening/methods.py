"""HEAD is answered wherever GET is, as GET without its body.

Monitors and link checkers ask with HEAD; Django's views (`require_GET`, django-ninja's GET
operations) refuse it with 405, so a monitor saw the console as down. The request runs as a GET,
and the answer keeps GET's status and headers (Content-Length included) and drops the body.
"""
from __future__ import annotations


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
