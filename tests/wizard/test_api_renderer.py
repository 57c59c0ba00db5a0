"""The API's JSON renderer (nodelodge/wizard/api.py `ConsoleRenderer`); touches no database."""
import json
from datetime import UTC, datetime
from decimal import Decimal

from ninja.responses import NinjaJSONEncoder

from nodelodge.wizard.api import ConsoleRenderer


def test_the_api_writes_json_that_reads_as_pythons_and_falls_back_past_64_bit_integers():
    """The API's renderer (orjson) writes values that read back as Python's json writes them with
    ninja's encoder: decimals, dates and times as before, other scripts' letters as UTF-8; a value orjson
    refuses (an integer past 64 bits) is written by Python's json instead of failing the answer."""
    renderer = ConsoleRenderer()
    data = {
        "price": Decimal("0.0620"),
        "seen": datetime(2026, 12, 6, 18, 45, 24, 7102, tzinfo=UTC),
        "words": "Holds 1 request · 6,834 tokens; Über",
        "rows": [{"gib": 19.95, "bytes": 8_030_261_248, "none": None, "flag": True}],
    }
    written = renderer.render(None, data, response_status=200)
    assert json.loads(written) == json.loads(json.dumps(data, cls=NinjaJSONEncoder))
    assert json.loads(written)["seen"] == "2026-12-06T18:45:24.007Z"  # as Django's encoder writes it
    assert "·".encode() in written and b"\\u00b7" not in written
    huge = {"bytes": 2**70}
    assert json.loads(renderer.render(None, huge, response_status=200)) == huge
