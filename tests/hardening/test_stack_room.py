"""Room on the frame stack for a request (nodelodge/stack_room.py): a loop whose calls sit on the edge
of one of CPython's frame-stack chunks maps and unmaps a chunk on every call; inside `call_with_room`
no depth a request reaches does. Page faults are counted, not seconds: each chunk mapped anew faults
at least once when a frame is written to it."""
from __future__ import annotations

import io
import resource

from nodelodge import stack_room, wsgi

CALLS = 500
# Depths (frames of `_loop_at`, about 130 bytes each) over several 16 KiB chunks: at least one of them
# leaves a call on a chunk's edge.
DEPTHS = range(0, 600)


def _leaf() -> int:
    return 1


def _loop_at(depth: int, calls: int) -> int:
    """Recurses `depth` frames deep, then calls a small function `calls` times: the page faults that
    loop caused."""
    if depth:
        return _loop_at(depth - 1, calls)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        _leaf()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_without_room_some_depth_maps_a_chunk_per_call():
    """The control: the fault the room guards against, on our Python (3.11). On a Python that keeps a
    spare chunk this fails, and the room is no longer needed."""
    worst = max(_loop_at(depth, CALLS) for depth in DEPTHS)
    assert worst >= CALLS  # one new chunk, so at least one fault, per call


def test_inside_the_room_no_depth_maps_a_chunk_per_call():
    worst = max(stack_room.call_with_room(_loop_at, depth, CALLS) for depth in DEPTHS)
    assert worst < CALLS / 10


def test_the_room_passes_arguments_and_the_answer_through():
    assert stack_room.call_with_room(divmod, 17, 5) == (3, 2)


def test_the_wsgi_application_serves_each_request_inside_the_room(monkeypatch):
    """What gunicorn calls (nodelodge.wsgi.application) runs Django's handler through the room: a loop
    at any depth inside a request maps no chunk per call."""
    worst = []

    def handler(environ, start_response):
        worst.append(max(_loop_at(depth, CALLS) for depth in DEPTHS))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    monkeypatch.setattr(wsgi, "django_application", handler)
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/", "wsgi.input": io.BytesIO()}
    body = wsgi.application(environ, lambda status, headers: None)
    assert list(body) == [b"ok"]
    assert worst[0] < CALLS / 10
