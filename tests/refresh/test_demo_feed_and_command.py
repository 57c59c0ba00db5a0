"""The embedded run's demo feed, the refresh_providers command and the staff admin."""
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from catalog.models import Machine
from nodelodge.celery import app as celery_app
from nodelodge.refresh import tasks
from nodelodge.refresh.models import SyncRun
from nodelodge.refresh.selectors import demo_feed_document
from tests.factories import make_machine
from tests.feeds import feed, record


@pytest.fixture
def demo_fleet(gpu_types, providers):
    long_ago = timezone.now() - timedelta(hours=3)
    for index in range(12):
        make_machine(providers["community"], gpu_types["rtx4090"], provider_machine_id=f"c-{index:02d}", price_per_gpu_hour=Decimal("3.00"), gpu_count=4, free_gpus=4, memory_per_gpu_mib=24_000 if index % 2 else None, memory_source="host" if index % 2 else "unknown", last_seen_at=long_ago)
    make_machine(providers["secure"], gpu_types["h100"], provider_machine_id="s-00", gpu_count=8, free_gpus=8, price_per_gpu_hour=Decimal("3.00"), memory_source="datasheet", last_seen_at=long_ago)
    return providers


@pytest.fixture
def in_process_tasks():
    """The embedded run: no broker, tasks run where they are called."""
    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = before


@pytest.mark.django_db
def test_demo_feed_is_a_valid_feed_that_shifts_with_the_minute(demo_fleet):
    community = demo_fleet["community"]
    minute = datetime(2025, 3, 1, 12, 0, 30, tzinfo=UTC)

    document = demo_feed_document(community, minute)

    assert document["provider"] == "hosts-united"
    assert len(document["machines"]) == 12
    same_minute = demo_feed_document(community, minute + timedelta(seconds=20))
    assert same_minute["machines"] == document["machines"]
    later = demo_feed_document(community, minute + timedelta(minutes=1))
    assert [m["free_gpus"] for m in later["machines"]] != [m["free_gpus"] for m in document["machines"]]
    first = document["machines"][1]
    assert (first["gpu_type"], first["memory_mib"], first["country"]) == ("RTX 4090", 24_000, "DE")
    assert document["machines"][0]["memory_mib"] is None  # nothing reported stays unreported
    secure = demo_feed_document(demo_fleet["secure"], minute)
    assert secure["machines"][0]["memory_mib"] is None  # a datasheet figure is the catalog's, not the feed's


@pytest.mark.django_db
def test_demo_feed_is_off_unless_enabled(client, demo_fleet, settings):
    settings.DEMO_FEEDS_ENABLED = False
    assert client.get("/feeds/demo/hosts-united.json").status_code == 404
    settings.DEMO_FEEDS_ENABLED = True
    response = client.get("/feeds/demo/hosts-united.json")
    assert response.status_code == 200
    assert response.json()["provider"] == "hosts-united"
    assert client.get("/feeds/demo/nobody.json").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_refresh_providers_against_the_running_server_shows_a_refresh(live_server, demo_fleet, settings):
    settings.DEMO_FEEDS_ENABLED = True
    for provider in demo_fleet.values():
        provider.feed_url = f"{live_server.url}/feeds/demo/{provider.slug}.json"
        provider.save()
    before = timezone.now()
    out = StringIO()

    call_command("refresh_providers", stdout=out)

    assert "hosts-united: ok — 12 received, 0 added" in out.getvalue()
    assert "acme-secure: ok — 1 received" in out.getvalue()
    assert not Machine.objects.filter(last_seen_at__lt=before).exists()
    assert SyncRun.objects.filter(status="ok").count() == 2
    secure = Machine.objects.get(provider_machine_id="s-00")
    assert (secure.memory_source, secure.memory_per_gpu_mib) == ("datasheet", 81_559)


@pytest.mark.django_db
def test_refresh_providers_can_refresh_one_provider(feed_server, gpu_types, providers):
    community = providers["community"]
    community.feed_url = feed_server.serve_json("c", feed(community.slug, [record("c-1")]))
    community.save()
    providers["secure"].feed_url = feed_server.serve_bytes("s", b"", status=500)
    providers["secure"].save()
    out = StringIO()

    call_command("refresh_providers", "--provider", "hosts-united", stdout=out)

    assert out.getvalue().startswith("hosts-united: ok — 1 received, 1 added")
    assert not SyncRun.objects.filter(provider=providers["secure"]).exists()
    with pytest.raises(CommandError, match="No provider with slug nobody"):
        call_command("refresh_providers", "--provider", "nobody")


@pytest.mark.django_db
def test_a_provider_without_a_feed_url_fails_with_the_reason(providers):
    from nodelodge.refresh.services import refresh_provider

    run = refresh_provider(providers["secure"].pk)

    assert (run.status, run.error) == ("failed", "Feed rejected: the provider has no feed URL.")


@pytest.mark.django_db
def test_staff_trigger_a_refresh_from_the_provider_admin(admin_client, feed_server, gpu_types, providers,
                                                          in_process_tasks):
    community = providers["community"]
    community.feed_url = feed_server.serve_json("c", feed(community.slug, [record("c-1")]))
    community.save()
    changelist = admin_client.get(reverse("admin:catalog_provider_changelist")).content.decode()
    assert "Refresh the selected providers from their feeds now" in changelist

    response = admin_client.post(
        reverse("admin:catalog_provider_changelist"),
        {"action": "refresh_selected_providers", "_selected_action": [community.pk]},
        follow=True,
    )

    assert response.status_code == 200
    run = SyncRun.objects.get(provider=community)
    assert (run.status, run.added) == ("ok", 1)
    assert "Hosts United: ok — 1 added" in response.content.decode()


def test_the_refresh_action_and_its_outcome_speak_the_staff_members_language(
    admin_client, feed_server, gpu_types, providers, in_process_tasks
):
    community = providers["community"]
    community.feed_url = feed_server.serve_json("c", feed(community.slug, [record("c-1")]))
    community.save()
    german = {"HTTP_ACCEPT_LANGUAGE": "de"}
    changelist = admin_client.get(reverse("admin:catalog_provider_changelist"), **german).content.decode()
    assert "Die gewählten Anbieter jetzt aus ihren Feeds aktualisieren" in changelist

    response = admin_client.post(
        reverse("admin:catalog_provider_changelist"),
        {"action": "refresh_selected_providers", "_selected_action": [community.pk]},
        follow=True, **german,
    )

    assert "Hosts United: ok — 1 hinzugefügt, 0 aktualisiert, 0 entfernt, 0 abgewiesen." in response.content.decode()


@pytest.mark.django_db
def test_staff_see_the_sync_history_and_can_refresh_everything(
    admin_client, feed_server, gpu_types, providers, in_process_tasks
):
    community = providers["community"]
    community.feed_url = feed_server.serve_bytes("c", b"{broken", status=200)
    community.save()

    assert admin_client.get(reverse("admin:refresh_syncrun_refresh_all")).status_code == 405
    response = admin_client.post(reverse("admin:refresh_syncrun_refresh_all"), follow=True)

    page = response.content.decode()
    assert response.status_code == 200
    assert "Refresh all providers now" in page
    assert "the feed is not valid JSON" in page  # the failure is visible to staff
    run = SyncRun.objects.get(provider=community)
    detail = admin_client.get(reverse("admin:refresh_syncrun_change", args=[run.pk]))
    assert detail.status_code == 200 and "Failed" in detail.content.decode()
    assert admin_client.get(reverse("admin:refresh_syncrun_add")).status_code == 403


@pytest.fixture
def unreachable_broker():
    """Tasks go to a broker on a closed port, as when Redis is down in production."""
    conf = celery_app.conf
    before = (conf.task_always_eager, conf.broker_url, conf.broker_transport_options)
    conf.task_always_eager = False
    conf.broker_url = "redis://127.0.0.1:1/0"
    conf.broker_transport_options = {"max_retries": 1}
    _drop_connection_pools()
    yield
    conf.task_always_eager, conf.broker_url, conf.broker_transport_options = before
    _drop_connection_pools()


def _drop_connection_pools():
    """Connections are pooled per broker URL; new ones are made for the URL now configured (closing
    the pools instead would break the worker the other tests share)."""
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.mark.django_db
def test_staff_get_a_clear_message_when_the_task_queue_is_down(admin_client, providers, unreachable_broker):
    community = providers["community"]
    community.feed_url = "http://127.0.0.1:9/feed.json"
    community.save()

    response = admin_client.post(
        reverse("admin:catalog_provider_changelist"),
        {"action": "refresh_selected_providers", "_selected_action": [community.pk]},
        follow=True,
    )

    page = response.content.decode()
    assert response.status_code == 200
    assert "Could not queue the refresh: the task queue is unreachable" in page
    assert "refresh_providers" in page
    assert not SyncRun.objects.exists()


@pytest.mark.django_db
def test_a_refresh_requested_in_process_runs_at_once_in_order(feed_server, gpu_types, providers,
                                                               in_process_tasks):
    community, secure = providers["community"], providers["secure"]
    community.feed_url = feed_server.serve_json("c", feed(community.slug, [record("c-1"), record("c-2")]))
    community.save()

    outcome = tasks.request_refresh([community.pk, secure.pk])

    assert (outcome.requested, outcome.queued, outcome.broker_error) == (2, 0, "")
    assert [(run.provider_id, run.status, run.added) for run in outcome.runs] == [
        (community.pk, "ok", 2), (secure.pk, "failed", 0),
    ]
    assert tasks.request_refresh([]).requested == 0


@pytest.mark.django_db
def test_a_refresh_requested_while_the_task_queue_is_down_is_reported_not_raised(providers, unreachable_broker):
    outcome = tasks.request_refresh([providers["community"].pk, providers["secure"].pk])

    assert (outcome.requested, outcome.queued, outcome.runs) == (2, 0, [])
    assert outcome.broker_error  # the exception's class name, shown to staff
    assert not SyncRun.objects.exists()


def test_the_provider_admin_carries_the_refresh_action_once():
    from django.contrib import admin

    from catalog.admin import ProviderAdmin
    from catalog.models import Provider
    from nodelodge.refresh.admin import ProviderRefreshAdmin, refresh_selected_providers

    registered = admin.site.get_model_admin(Provider)
    assert type(registered) is ProviderRefreshAdmin and isinstance(registered, ProviderAdmin)
    assert list(registered.actions).count(refresh_selected_providers) == 1


@pytest.mark.parametrize(
    ("environment", "enabled"),
    [
        ({"DEBUG": "1"}, True),
        ({"DEBUG": "0"}, False),
        ({"DEBUG": "0", "DEMO_FEEDS_ENABLED": "1"}, True),
        ({"DEBUG": "1", "DEMO_FEEDS_ENABLED": "0"}, False),
        ({"DEBUG": "1", "DEMO_FEEDS_ENABLED": ""}, True),
    ],
)
def test_demo_feeds_follow_debug_unless_the_environment_says(monkeypatch, environment, enabled):
    import runpy

    import nodelodge.settings

    monkeypatch.delenv("DEMO_FEEDS_ENABLED", raising=False)
    monkeypatch.setenv("SECRET_KEY", "a-key-only-for-reading-the-settings-in-this-test")
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    assert runpy.run_path(nodelodge.settings.__file__)["DEMO_FEEDS_ENABLED"] is enabled
