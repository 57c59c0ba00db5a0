"""The nodelodge-v1 reader: each bad record is rejected with its reason, the others go on."""
import json
import urllib.error
from decimal import Decimal

import pytest

from nodelodge.refresh.feeds import adapter_for
from nodelodge.refresh.feeds.base import FeedError
from nodelodge.refresh.fetching import fetch_feed
from tests.feeds import GPU_TYPES, feed, record


def parse(document) -> object:
    body = document if isinstance(document, bytes) else json.dumps(document).encode()
    return adapter_for("nodelodge-v1").parse(body, provider_slug="acme", gpu_types=GPU_TYPES)


BAD_RECORDS = [
    (record("m-1", memory_mib=-1), "memory_mib must be positive"),
    (record("m-1", memory_mib=0), "memory_mib must be positive"),
    (record("m-1", memory_mib=5_000_000), "is absurd"),
    (record("m-1", memory_mib=80.5), "memory_mib must be a whole number"),
    (record("m-1", memory_mib="81559"), "memory_mib must be a whole number"),
    (record("m-1", gpu_type="Imaginary 9000"), "unknown GPU type 'Imaginary 9000'"),
    (record("m-1", free_gpus=9), "free_gpus (9) exceeds gpu_count (8)"),
    (record("m-1", free_gpus=-1), "free_gpus cannot be negative"),
    (record("m-1", gpu_count=0), "gpu_count must be between 1 and 16"),
    (record("m-1", gpu_count=17), "gpu_count must be between 1 and 16"),
    (record("m-1", country="XX"), "country 'XX' is not an ISO 3166 alpha-2 code"),
    (record("m-1", country="DEU"), "is not an ISO 3166 alpha-2 code"),
    (record("m-1", country=49), "country must be an ISO 3166 alpha-2 code"),
    (record("m-1", price_per_gpu_hour="0"), "price_per_gpu_hour must be above zero"),
    (record("m-1", price_per_gpu_hour="-2"), "price_per_gpu_hour must be above zero"),
    (record("m-1", price_per_gpu_hour="NaN"), "must be a finite number"),
    (record("m-1", price_per_gpu_hour="20000"), "is above 10000"),
    (record("m-1", price_per_gpu_hour="cheap"), "is not a decimal number"),
    (record("m-1", booking_limit_hours=0), "booking_limit_hours must be at least 1"),
    (record("m-1", booking_limit_hours="72"), "booking_limit_hours must be a whole number"),
    (record("m-1", available="yes"), "available must be true or false"),
    (record("m-1", interruptible=1), "interruptible must be true or false"),
    (record("m-1", gpu_count=True), "gpu_count must be a whole number"),
    ({k: v for k, v in record("m-1").items() if k != "price_per_gpu_hour"}, "price_per_gpu_hour is missing"),
]


@pytest.mark.parametrize(("bad", "reason"), BAD_RECORDS, ids=[reason for _, reason in BAD_RECORDS])
def test_bad_record_is_rejected_with_its_reason_and_the_others_go_on(bad, reason):
    parsed = parse(feed("acme", [record("good-1"), bad, record("good-2")]))

    assert [r.provider_machine_id for r in parsed.records] == ["good-1", "good-2"]
    assert len(parsed.rejected) == 1
    assert parsed.rejected[0].machine_id == "m-1"
    assert reason in parsed.rejected[0].reason


@pytest.mark.parametrize("bad_id", [None, "", "   ", True, ["m-1"]])
def test_record_without_a_usable_id_is_rejected_without_one(bad_id):
    parsed = parse(feed("acme", [record(bad_id), record("good-1")]))

    assert [r.provider_machine_id for r in parsed.records] == ["good-1"]
    assert parsed.rejected[0].machine_id is None
    assert parsed.rejected[0].reason == "id is missing"


def test_a_machine_listed_twice_keeps_the_first_record():
    parsed = parse(feed("acme", [record("m-1", free_gpus=1), record("m-1", free_gpus=2)]))

    assert [(r.provider_machine_id, r.free_gpus) for r in parsed.records] == [("m-1", 1)]
    assert parsed.rejected[0].reason == "the id appears more than once in the feed"


def test_a_good_record_reads_into_checked_values():
    raw = record(
        "m-1", gpu_type="h100-sxm-80gb", country="de", price_per_gpu_hour=2.5, memory_mib=None,
        booking_limit_hours=None, region=None, some_vendor_field={"ignored": True},
    )
    del raw["interruptible"]

    (machine,) = parse(feed("acme", [raw])).records

    assert machine.gpu_type.name == "H100 SXM 80GB"  # found by slug too
    assert machine.country == "DE"
    assert machine.price_per_gpu_hour == Decimal("2.5000")
    assert machine.memory_mib is None
    assert machine.booking_limit_hours is None
    assert machine.region == ""
    assert machine.interruptible is False


def test_blank_or_null_country_means_unknown():
    parsed = parse(feed("acme", [record("a", country=None), record("b", country="")]))

    assert [r.country for r in parsed.records] == ["", ""]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"provider": "acme", "machines": [', "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[]", "must be a JSON object"),
        (json.dumps({"provider": "acme", "machines": {"m-1": {}}}).encode(), 'no "machines" list'),
        (json.dumps({"provider": "acme"}).encode(), 'no "machines" list'),
        (json.dumps(feed("someone-else", [])).encode(), "is for provider 'someone-else', expected 'acme'"),
    ],
)
def test_an_unusable_feed_fails_as_a_whole(body, message):
    with pytest.raises(FeedError, match=message.replace("(", r"\(")):
        parse(body)


def test_an_unknown_feed_format_is_a_feed_error():
    with pytest.raises(FeedError, match="no reader for feed format 'csv-v9'") as raised:
        adapter_for("csv-v9")
    assert raised.value.__cause__ is None and raised.value.__suppress_context__  # the lookup miss is noise


def test_a_feed_error_keeps_the_failure_it_comes_from():
    with pytest.raises(FeedError, match="the feed is not valid JSON") as raised:
        parse(b"{broken")
    assert isinstance(raised.value.__cause__, json.JSONDecodeError)
    with pytest.raises(FeedError, match="could not reach the feed") as raised:
        fetch_feed("http://127.0.0.1:9/feed.json", timeout_seconds=5)
    assert isinstance(raised.value.__cause__, urllib.error.URLError)
