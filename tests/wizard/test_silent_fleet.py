"""With the whole fleet silent, an empty answer says that availability is unknown, and since when,
instead of blaming the countries or the workload: on the page, in the API and in the command."""
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from catalog.models import Machine
from tests.helpers import LLAMA_8B, LLAMA_8B_ARGS

pytestmark = pytest.mark.django_db


@pytest.fixture
def silent_fleet(small_fleet):
    last = timezone.now() - timedelta(hours=3)
    Machine.objects.update(last_seen_at=last - timedelta(minutes=30))
    Machine.objects.filter(pk=small_fleet["a100"].pk).update(last_seen_at=last)
    return last


def test_a_silent_fleet_says_availability_is_unknown_and_when_the_last_report_came(client, silent_fleet):
    body = client.get("/api/v1/recommendations?" + LLAMA_8B + "&countries=CH").json()
    assert body["machines"] == [] and body["fleet_silent"] is True
    assert body["empty_reason"] == (
        "No machine has reported in the last 15 minutes, so availability is unknown: the last report came "
        f"3 hours ago ({silent_fleet:%Y-%m-%d %H:%M} UTC). Machines are listed again once their providers report."
    )
    assert "countries" not in body["empty_reason"]
    assert body["relax"] == []


def test_the_page_and_the_command_say_the_same_of_a_silent_fleet(client, silent_fleet):
    html = client.get("/?" + LLAMA_8B).content.decode()
    assert "<strong>Availability is unknown.</strong> No machine has reported in the last 15 minutes" in html
    assert "No machine meets every preference." not in html
    out = StringIO()
    call_command("recommend", *LLAMA_8B_ARGS, "--countries", "CH", stdout=out)
    assert "No machine has reported in the last 15 minutes, so availability is unknown: the last report came " \
           "3 hours ago" in out.getvalue()


def test_a_fleet_that_never_reported_says_so(client, small_fleet):
    Machine.objects.update(last_seen_at=None)
    body = client.get("/api/v1/recommendations?" + LLAMA_8B).json()
    assert body["empty_reason"] == "No machine has reported yet, so availability is unknown."


def test_one_fresh_report_is_enough_for_the_usual_reasons(client, small_fleet):
    """Machines that reported but are left out for other reasons are not a silent fleet."""
    body = client.get("/api/v1/recommendations?" + LLAMA_8B + "&countries=CH").json()
    assert body["fleet_silent"] is False
    assert body["empty_reason"].startswith("No machine is available in the chosen countries right now")
