"""Responses compressed for clients that accept gzip, at zlib's fastest level.

Django's GZipMiddleware compresses a whole body at level 6: about 5 ms for a 90 KB result panel and
10 ms for a 220 KB API answer on this project's 2-core machines, a fifth to a quarter of computing the
answer, and again for every answer served from the cache. Level 1 takes about half of that (a quarter
for JSON) for a body about a quarter larger (docs/benchmarks-log.md). The rest is Django's middleware as
it is: which responses it compresses (streamed ones by Django itself), the random file name in the gzip
header against BREACH, Vary, the weakened ETag and Content-Length."""
from __future__ import annotations

import gzip
import secrets
import string

from django.middleware import gzip as django_gzip
from django.utils.cache import patch_vary_headers

FAST_LEVEL = 1
_LETTERS = string.ascii_letters.encode()


def compressed(data: bytes, max_random_bytes: int) -> bytes:
    """`data` gzipped at FAST_LEVEL, its header naming a random file of 1 to `max_random_bytes` letters
    (a body's compressed length then says less of what it holds, as Django's own does)."""
    body = gzip.compress(data, compresslevel=FAST_LEVEL, mtime=0)
    if not max_random_bytes:
        return body
    header = bytearray(body[:10])
    header[3] = gzip.FNAME
    name = bytes(secrets.choice(_LETTERS) for _ in range(secrets.randbelow(max_random_bytes) + 1))
    return bytes(header) + name + b"\x00" + body[10:]


class GZipMiddleware(django_gzip.GZipMiddleware):
    def process_response(self, request, response):
        if response.streaming or response.has_header("Content-Encoding") or len(response.content) < 200:
            return super().process_response(request, response)
        patch_vary_headers(response, ("Accept-Encoding",))
        if not django_gzip.re_accepts_gzip.search(request.META.get("HTTP_ACCEPT_ENCODING", "")):
            return response
        body = compressed(response.content, self.max_random_bytes)
        if len(body) >= len(response.content):
            return response
        response.content = body
        response.headers["Content-Length"] = str(len(body))
        etag = response.get("ETag")
        if etag and etag.startswith('"'):  # a strong ETag no longer names these bytes (RFC 9110 8.8.1)
            response.headers["ETag"] = "W/" + etag
        response.headers["Content-Encoding"] = "gzip"
        return response
