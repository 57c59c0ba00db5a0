"""Room on Python's frame stack for a whole request.

CPython 3.11 keeps a thread's frames in chunks of 16 KiB. A call that does not fit in the current
chunk maps a new one, and its return unmaps it again, so a loop whose calls cross that edge maps and
unmaps a chunk on every call (CPython gh-142183, fixed in 2026 by keeping one spare chunk, in 3.13 and
later only). The result page served by gunicorn sat on such an edge: its templates' loops mapped and
unmapped about 2,800 chunks per request, 5,000 page faults, about 40 ms of a 100 ms page that the test
client (whose stack starts at another depth) served in 55 ms. Where the edge falls moves with every
change to the code, so rather than avoid it, `call_with_room` runs the request in a chunk large enough
for any request: its frame declares a large evaluation stack (which CPython reserves and never
touches), so CPython maps one chunk of 512 KiB for it and the request's frames follow it in the other
256 KiB: room for about two thousand frames of ordinary size, twice Python's recursion limit. One
mapping per request, and only the pages the request uses are touched.
"""
from __future__ import annotations

# Words of evaluation stack the calling frame declares. CPython sizes a new chunk to at least
# 8 × (frame + 1,000) bytes, rounded up to a power of two of 16 KiB: 31,769 words is the least that
# makes the chunk 512 KiB, leaving about 256 KiB after the frame.
ROOM_WORDS = 31_769


def call_with_room(function, *args):
    """`function(*args)`, its frames in a chunk of their own with room for any request."""
    return function(*args)


call_with_room.__code__ = call_with_room.__code__.replace(co_stacksize=ROOM_WORDS)
