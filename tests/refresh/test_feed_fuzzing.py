"""Random and malformed feed documents, served over HTTP on loopback: the refresh never crashes
and never changes a machine it should not."""
import json
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from catalog.models import Machine
from nodelodge.refresh.models import SyncRun
from nodelodge.refresh.services import refresh_provider
from tests.factories import H100_MIB, make_machine
from tests.feeds import feed, record

pytestmark = pytest.mark.django_db

FIELDS = ("gpu_type_id", "gpu_count", "free_gpus", "memory_per_gpu_mib", "memory_source", "country", "region",
          "price_per_gpu_hour", "interruptible", "booking_limit_hours", "is_available", "gone_at")

hostile_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["NaN", "inf", "-1", "0", "1e309", "H100 SXM 80GB", "XX", "de", "", "\x00", "2.49"]),
)
json_values = st.recursive(
    hostile_scalars, lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children,
                                                                                        max_size=4),
    max_leaves=12,
)
FIELD_NAMES = ["id", "gpu_type", "gpu_count", "free_gpus", "memory_mib", "available", "country", "region",
               "price_per_gpu_hour", "interruptible", "booking_limit_hours"]


@st.composite
def damaged_records(draw):
    """A record of the feed: a valid one with some fields replaced, dropped or added."""
    values = record(draw(st.sampled_from(["m-1", "m-2", "m-3"])))
    for name in draw(st.lists(st.sampled_from(FIELD_NAMES), max_size=4, unique=True)):
        if draw(st.booleans()):
            values[name] = draw(json_values)
        else:
            values.pop(name, None)
    if draw(st.booleans()):
        values[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
    return values


feed_documents = st.one_of(
    json_values,  # anything at all
    st.builds(lambda machines: feed("acme-secure", machines), st.lists(damaged_records(), max_size=5)),
    st.builds(lambda machines: {"provider": "acme-secure", "machines": machines}, json_values),
)


def snapshot(machine_ids):
    return {m.provider_machine_id: tuple(getattr(m, f) for f in FIELDS)
            for m in Machine.objects.filter(provider_machine_id__in=machine_ids)}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=feed_documents, raw=st.booleans())
def test_malformed_feeds_never_crash_and_never_change_what_they_should_not(
    document, raw, feed_server, gpu_types, providers
):
    provider = providers["secure"]
    Machine.objects.filter(provider=provider).delete()  # examples share the test's database
    for machine_id in ("m-1", "m-2"):
        make_machine(provider, gpu_types["h100"], provider_machine_id=machine_id, gpu_count=8, free_gpus=8, memory_per_gpu_mib=H100_MIB, price_per_gpu_hour=Decimal("2.00"))
    before = snapshot(["m-1", "m-2"])
    body = json.dumps(document, allow_nan=True).encode()
    if raw:
        body = body[: max(1, len(body) // 2)]  # cut short: broken JSON more often than not
    provider.feed_url = feed_server.serve_bytes("fuzz", body)
    provider.save()

    run = refresh_provider(provider.pk)
    event(f"status {run.status}")

    assert run.status in {SyncRun.Status.OK, SyncRun.Status.PARTIAL, SyncRun.Status.FAILED}
    after = snapshot(["m-1", "m-2", "m-3"])
    if run.status == SyncRun.Status.FAILED:
        assert {k: after[k] for k in before} == before and "m-3" not in after
    rejected = {r.get("machine_id") for r in run.rejected_details}
    for machine_id, values in before.items():
        if machine_id in rejected:
            assert after[machine_id] == values, f"a rejected record changed {machine_id}"
    for machine in Machine.objects.filter(provider=provider):
        machine.full_clean()  # whatever was stored passes the catalog's own validation
        assert 0 <= machine.free_gpus <= machine.gpu_count
