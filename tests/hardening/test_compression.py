"""Responses compressed for clients that accept gzip (`nodelodge.compression`): at zlib's fastest level,
with Django's rules kept (a random file name in the header, Vary, a weakened ETag, small or streamed
bodies left to Django)."""
from __future__ import annotations

import gzip

import pytest
from django.http import HttpResponse, StreamingHttpResponse
from django.test import RequestFactory

from nodelodge.compression import FAST_LEVEL, GZipMiddleware, compressed

BODY = ("<tr><td>H100 SXM</td><td>80 GiB</td><td>$2.49/h</td></tr>\n" * 400).encode()


def answered(body=BODY, accept="gzip, deflate", response=None, **headers):
    request = RequestFactory().get("/", HTTP_ACCEPT_ENCODING=accept)
    response = response or HttpResponse(body, **headers)
    return GZipMiddleware(lambda request: response)(request)


def test_a_client_that_accepts_gzip_gets_the_same_bytes_compressed_at_the_fastest_level():
    response = answered(headers={"ETag": '"abc"'})
    assert response["Content-Encoding"] == "gzip"
    assert gzip.decompress(response.content) == BODY
    assert int(response["Content-Length"]) == len(response.content) < len(BODY) // 10
    # The deflate stream after the header and its random file name is zlib's at the fastest level.
    assert response.content.endswith(gzip.compress(BODY, compresslevel=FAST_LEVEL, mtime=0)[10:])
    assert response["ETag"] == 'W/"abc"'
    assert "Accept-Encoding" in response["Vary"]


def test_the_header_names_a_random_file_so_the_length_varies():
    lengths = {len(compressed(BODY, 100)) for _ in range(40)}
    assert len(lengths) > 5
    header = compressed(BODY, 100)
    assert header[3] & gzip.FNAME
    name = header[10:header.index(b"\x00", 10)]
    assert 1 <= len(name) <= 100 and name.isalpha()
    assert compressed(BODY, 0) == gzip.compress(BODY, compresslevel=FAST_LEVEL, mtime=0)


@pytest.mark.parametrize("accept", ["", "br", "identity"])
def test_a_client_that_does_not_accept_gzip_gets_the_body_as_it_is(accept):
    response = answered(accept=accept)
    assert response.content == BODY and not response.has_header("Content-Encoding")
    assert "Accept-Encoding" in response["Vary"]


def test_short_bodies_encoded_ones_and_streams_are_left_to_django():
    assert answered(b"short").content == b"short"
    encoded = HttpResponse(BODY)
    encoded["Content-Encoding"] = "br"
    assert answered(response=encoded).content == BODY
    streamed = answered(response=StreamingHttpResponse(iter([BODY])))
    assert gzip.decompress(b"".join(streamed.streaming_content)) == BODY
