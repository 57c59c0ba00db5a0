"""A feed record that contradicts running bookings (fewer GPUs than they hold, another GPU type or
memory, the machine missing from the feed) never rewrites the booked machine: the bookings and the
machine's booked shape are kept, it offers no GPU, the rest of the record is applied, the sync history
says what was held back and why, the admin flags the machine and My launches tells the booking's
owner. Once the bookings end, the next record applies in full. Feeds come from a server on loopback."""
from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from django.urls import reverse

from catalog.models import Machine, Provider
from nodelodge.launches import booking as launching
from nodelodge.launches.holding import stop
from nodelodge.launches.models import Booking
from nodelodge.launches.refusals import LaunchRefused
from nodelodge.refresh.models import FeedConflict, SyncRun
from nodelodge.refresh.services import refresh_provider
from tests.factories import H100_MIB, T4_MIB, make_gpu_type, make_language_model, make_user
from tests.feeds import feed, record
from tests.helpers import LLAMA_8B as QUERY

pytestmark = pytest.mark.django_db

A100_MIB = 81_920
# Llama 3.1 8B at 16-bit (19.55 GiB) takes two T4s: a single booking of 2 GPUs.
T4 = {"gpu_type": "T4", "memory_mib": T4_MIB, "price_per_gpu_hour": "0.40"}
# The cluster: two whole 8 × A100 machines at one site on InfiniBand.
A100_SITE = {"gpu_type": "A100 SXM 80GB", "memory_mib": A100_MIB, "gpu_count": 8, "free_gpus": 8,
             "site": "osl-1", "interconnect": "infiniband", "interconnect_gbps": 400}


class ProviderFeed:
    """A Secure provider whose feed the test sets, record by record, and refreshes."""

    def __init__(self, feed_server):
        self.server = feed_server
        self.provider = Provider.objects.create(name="Fjord Compute", slug="fjord-compute", tier="secure")
        self.serial = 0

    def refresh(self, *records) -> SyncRun:
        self.serial += 1
        self.provider.feed_url = self.server.serve_json(f"fjord-{self.serial}", feed(self.provider.slug, list(records)))
        self.provider.save()
        return refresh_provider(self.provider.pk)

    def machine(self, machine_id: str) -> Machine:
        return Machine.objects.select_related("gpu_type").get(provider=self.provider, provider_machine_id=machine_id)


@pytest.fixture
def fjord(feed_server):
    make_language_model()
    make_gpu_type()  # the H100
    make_gpu_type("T4", memory_mib=T4_MIB)
    make_gpu_type("A100 SXM 80GB", memory_mib=A100_MIB)
    return ProviderFeed(feed_server)


def launch(user, machine: Machine, gpus: int) -> Booking:
    price = machine.price_per_gpu_hour * gpus
    return launching.launch(
        user, machines=[(machine.pk, gpus)], shown_price_per_hour=price, query_string=QUERY,
        idempotency_key=uuid.uuid4().hex,
    ).booking


def launch_cluster(user, *machines: Machine):
    return launching.launch(
        user, machines=[(m.pk, m.gpu_count) for m in machines],
        shown_price_per_hour=sum(m.price_per_gpu_hour * m.gpu_count for m in machines),
        query_string=QUERY, idempotency_key=uuid.uuid4().hex, kind="cluster",
    ).group


def held(machine: Machine) -> int:
    return sum(Booking.objects.filter(machine=machine, status="running").values_list("gpus", flat=True))


@pytest.fixture
def shrunk_t4(fjord):
    """A 4 × T4 machine booked 2 GPUs by one booking, then reported by its feed with 1 GPU (and a new
    price and region): the provider, the machine, the booking and the run."""
    assert fjord.refresh(record("osl-t4-00", gpu_count=4, free_gpus=4, **T4)).status == "ok"
    owner = make_user("ada")
    booking = launch(owner, fjord.machine("osl-t4-00"), 2)
    assert booking.gpus == 2
    run = fjord.refresh(record("osl-t4-00", **T4 | {
        "gpu_count": 1, "free_gpus": 1, "price_per_gpu_hour": "0.45", "region": "Oslo", "country": "NO",
    }))
    return fjord, fjord.machine("osl-t4-00"), booking, run


def test_a_record_with_fewer_gpus_than_a_running_booking_holds_keeps_the_booked_machine(shrunk_t4):
    fjord, machine, booking, run = shrunk_t4

    assert (run.status, run.updated, run.held_back) == ("partial", 1, 1), run.error
    # The booked shape stays, no GPU is offered; the rest of the record is applied.
    assert (machine.gpu_count, machine.gpu_type.name, machine.memory_per_gpu_mib) == (4, "T4", T4_MIB)
    assert machine.free_gpus == 0 and machine.gpu_count >= held(machine) == 2
    assert (machine.price_per_gpu_hour, machine.region, machine.country) == (Decimal("0.45"), "Oslo", "NO")
    booking.refresh_from_db()
    assert booking.status == "running"
    with pytest.raises(LaunchRefused) as refused:
        launch(make_user(), machine, 2)
    assert refused.value.code == LaunchRefused.TAKEN
    # The same record again holds back the same and changes nothing more; the flag keeps its first date.
    first = FeedConflict.objects.get()
    again = fjord.refresh(record("osl-t4-00", **T4 | {
        "gpu_count": 1, "free_gpus": 1, "price_per_gpu_hour": "0.45", "region": "Oslo", "country": "NO",
    }))
    assert (again.status, again.unchanged, again.held_back) == ("partial", 1, 1)
    flag = FeedConflict.objects.get()
    assert (flag.machine_id, flag.since) == (machine.pk, first.since)
    assert flag.last_reported_at > first.last_reported_at


def test_a_record_with_fewer_gpus_than_a_running_cluster_holds_keeps_the_cluster_running(fjord):
    assert fjord.refresh(record("fjd-osl-a100-00", **A100_SITE), record("fjd-osl-a100-01", **A100_SITE)).status == "ok"
    group = launch_cluster(make_user(), fjord.machine("fjd-osl-a100-00"), fjord.machine("fjd-osl-a100-01"))

    run = fjord.refresh(
        record("fjd-osl-a100-00", **A100_SITE | {"gpu_count": 1, "free_gpus": 1}),
        record("fjd-osl-a100-01", **A100_SITE),  # the feed does not know of the booking: all 8 free
    )

    assert (run.status, run.held_back) == ("partial", 1), run.error
    assert [d["machine_id"] for d in run.held_back_details] == ["fjd-osl-a100-00"]
    shrunk, other = fjord.machine("fjd-osl-a100-00"), fjord.machine("fjd-osl-a100-01")
    assert (shrunk.gpu_count, shrunk.free_gpus, held(shrunk)) == (8, 0, 8)
    assert (other.gpu_count, other.free_gpus, held(other)) == (8, 0, 8)
    assert group.is_running and group.bookings.filter(status="running").count() == 2
    assert list(FeedConflict.objects.values_list("machine__provider_machine_id", "reported_gpu_count")) == [
        ("fjd-osl-a100-00", 1)
    ]


@pytest.mark.parametrize(("change", "words"), [
    ({"gpu_type": "A100 SXM 80GB", "memory_mib": A100_MIB}, "GPU type A100 SXM 80GB instead of H100 SXM 80GB"),
    ({"memory_mib": 40_960}, "40,960 MiB per GPU instead of 81,559 MiB per GPU"),
])
def test_a_record_with_another_gpu_type_or_memory_under_a_booking_keeps_what_it_was_booked_on(
    fjord, change, words
):
    assert fjord.refresh(record("osl-h100-00", gpu_count=8, free_gpus=8)).status == "ok"
    booking = launch(make_user(), fjord.machine("osl-h100-00"), 1)

    run = fjord.refresh(record("osl-h100-00", gpu_count=8, free_gpus=7, **change))

    assert (run.status, run.held_back) == ("partial", 1), run.error
    assert words in run.held_back_details[0]["reason"]
    machine = fjord.machine("osl-h100-00")
    assert (machine.gpu_type.name, machine.memory_per_gpu_mib, machine.gpu_count) == ("H100 SXM 80GB", H100_MIB, 8)
    assert machine.free_gpus == 0  # its GPUs are in doubt: none offered until a record applies in full
    booking.refresh_from_db()
    assert booking.status == "running"


def test_a_booked_machine_missing_from_the_feed_keeps_its_booking_and_is_flagged(fjord):
    assert fjord.refresh(record("osl-h100-00", gpu_count=8, free_gpus=8), record("osl-h100-01")).status == "ok"
    booking = launch(make_user(), fjord.machine("osl-h100-00"), 1)

    run = fjord.refresh(record("osl-h100-01"))

    assert (run.status, run.gone, run.held_back) == ("partial", 1, 1), run.error
    assert run.held_back_details == [{
        "machine_id": "osl-h100-00",
        "reason": "Missing from the feed while running bookings hold 1 GPU: marked gone (offered to nobody); "
                  "the bookings keep running on the shape they were booked on.",
    }]
    machine = fjord.machine("osl-h100-00")
    assert machine.gone_at is not None and (machine.gpu_count, machine.gpu_type.name) == (8, "H100 SXM 80GB")
    booking.refresh_from_db()
    assert booking.status == "running"
    assert FeedConflict.objects.get(machine=machine).missing
    # Once the booking ends the flag goes; the machine stays gone until its feed lists it again.
    stop(booking.user, booking.pk)
    assert fjord.refresh(record("osl-h100-01")).held_back == 0
    assert not FeedConflict.objects.exists()


def test_once_the_booking_ends_the_next_record_applies_in_full(shrunk_t4):
    fjord, machine, booking, _run = shrunk_t4

    stop(booking.user, booking.pk)
    machine.refresh_from_db()
    assert machine.free_gpus == 0  # what the machine really has is in doubt until its feed says again

    run = fjord.refresh(record("osl-t4-00", **T4 | {"gpu_count": 1, "free_gpus": 1, "price_per_gpu_hour": "0.45"}))

    assert (run.status, run.updated, run.held_back, run.held_back_details) == ("ok", 1, 0, [])
    machine.refresh_from_db()
    assert (machine.gpu_count, machine.free_gpus) == (1, 1)
    assert not FeedConflict.objects.exists()


def test_the_sync_history_records_what_was_held_back_and_why(shrunk_t4, admin_client):
    _fjord, _machine, _booking, run = shrunk_t4

    reason = (
        "The feed reported 1 GPU, fewer than the 2 held by running bookings. Kept 4 × T4 as booked (2 GPUs "
        "held) and offered none until the bookings end; the rest of the record was applied."
    )
    assert SyncRun.objects.get(pk=run.pk).held_back_details == [{"machine_id": "osl-t4-00", "reason": reason}]
    listing = admin_client.get(reverse("admin:refresh_syncrun_changelist")).content.decode()
    assert "held back" in listing.lower()
    page = admin_client.get(reverse("admin:refresh_syncrun_change", args=[run.pk])).content.decode()
    assert "osl-t4-00" in page and "fewer than the 2 held by running bookings" in page


def test_the_admin_flags_and_lists_machines_kept_as_booked(shrunk_t4, admin_client):
    _fjord, machine, _booking, _run = shrunk_t4
    changelist = reverse("admin:catalog_machine_changelist")

    flagged = admin_client.get(changelist, {"feed_conflict": "yes"})
    assert [m.pk for m in flagged.context["cl"].result_list] == [machine.pk]
    assert "Kept as booked" in flagged.content.decode()
    assert admin_client.get(changelist, {"feed_conflict": "no"}).context["cl"].result_count == 0
    page = admin_client.get(reverse("admin:catalog_machine_change", args=[machine.pk])).content.decode()
    assert "fewer than the 2 held by running bookings" in page
    conflicts = admin_client.get(reverse("admin:refresh_feedconflict_changelist"))
    assert conflicts.status_code == 200 and conflicts.context["cl"].result_count == 1
    assert "osl-t4-00" in conflicts.content.decode()


def test_my_launches_tells_the_owner_the_booking_keeps_the_shape_it_was_booked_on(shrunk_t4, client):
    _fjord, _machine, booking, _run = shrunk_t4
    client.force_login(booking.user)

    english = client.get(reverse("launches:list")).content.decode()
    german = client.get("/de/launches/").content.decode()

    assert ("The provider now reports this machine as 1 × T4. Your booking keeps the 2 × T4 it was booked "
            "on until it ends.") in english
    assert ("Der Anbieter meldet diese Maschine jetzt als 1 × T4. Ihre Buchung behält die 2 × T4, auf denen "
            "sie gebucht wurde, bis sie endet.") in german


def test_my_launches_tells_a_clusters_owner_which_machine_keeps_its_shape(fjord, client):
    assert fjord.refresh(record("fjd-osl-a100-00", **A100_SITE), record("fjd-osl-a100-01", **A100_SITE)).status == "ok"
    owner = make_user("ada")
    launch_cluster(owner, fjord.machine("fjd-osl-a100-00"), fjord.machine("fjd-osl-a100-01"))
    fjord.refresh(record("fjd-osl-a100-00", **A100_SITE | {"gpu_count": 1, "free_gpus": 1}),
                  record("fjd-osl-a100-01", **A100_SITE))
    client.force_login(owner)

    page = client.get(reverse("launches:list")).content.decode()

    groups = page[page.index('data-testid="running-groups"'):]
    note = "The provider now reports this machine as 1 × A100 SXM 80GB. Your booking keeps the 8 × A100 SXM 80GB"
    assert groups.count(note) == 1
    assert groups.index("fjd-osl-a100-00") < groups.index(note) < groups.index("fjd-osl-a100-01")
