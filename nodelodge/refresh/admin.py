import json

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from catalog.admin import MachineAdmin, ProviderAdmin
from catalog.models import Machine, Provider
from nodelodge.admin_mixins import ReadOnlyAdminMixin

from . import services, tasks
from .models import FeedConflict, SyncRun


def trigger_refresh(request, provider_ids: list[int]) -> None:
    """Asks for the refresh and tells staff, in messages, what came of it."""
    outcome = tasks.request_refresh(provider_ids)
    if not outcome.requested:
        messages.warning(request, _("No provider to refresh: none is active with a feed URL."))
    elif outcome.broker_error:
        # The broker is down: say so plainly; nothing was changed, and the command line still works.
        messages.error(
            request,
            _(
                "Could not queue the refresh: the task queue is unreachable (%(error)s). %(queued)s of "
                "%(requested)s queued. Run `python manage.py refresh_providers` to refresh without a worker."
            ) % {"error": outcome.broker_error, "queued": outcome.queued, "requested": outcome.requested},
        )
    elif outcome.runs:
        for run in outcome.runs:
            level = messages.SUCCESS if run.status == SyncRun.Status.OK else messages.WARNING
            messages.add_message(
                request, level,
                (_(
                    "%(provider)s: %(status)s — %(added)s added, %(updated)s updated, %(gone)s gone, "
                    "%(rejected)s rejected."
                ) % {
                    "provider": run.provider, "status": str(run.get_status_display()).lower(),
                    "added": run.added, "updated": run.updated, "gone": run.gone, "rejected": run.rejected,
                } + f" {run.error}").strip(),
            )
            if run.held_back:
                messages.warning(
                    request,
                    ngettext(
                        "%(provider)s: %(count)s machine kept the shape it was booked on: its record "
                        "contradicts running bookings (see the run).",
                        "%(provider)s: %(count)s machines kept the shape they were booked on: their records "
                        "contradict running bookings (see the run).",
                        run.held_back,
                    ) % {"provider": run.provider, "count": run.held_back},
                )
    else:
        messages.success(
            request, ngettext(
                "Refresh queued for %(count)s provider; the sync history shows the outcome.",
                "Refresh queued for %(count)s providers; the sync history shows the outcome.",
                outcome.queued,
            ) % {"count": outcome.queued},
        )


@admin.action(description=_("Refresh the selected providers from their feeds now"), permissions=["change"])
def refresh_selected_providers(modeladmin, request, queryset):
    trigger_refresh(request, list(queryset.order_by("pk").values_list("pk", flat=True)))


class ProviderRefreshAdmin(ProviderAdmin):
    """The catalog's Provider admin with the "refresh now" action. It takes the catalog's place here, so
    the catalog app does not need to know about this one."""

    actions = [*(ProviderAdmin.actions or ()), refresh_selected_providers]


if admin.site.is_registered(Provider):
    admin.site.unregister(Provider)
admin.site.register(Provider, ProviderRefreshAdmin)


class FeedConflictFilter(admin.SimpleListFilter):
    title = _("feed conflict")
    parameter_name = "feed_conflict"

    def lookups(self, request, model_admin):
        return [("yes", _("Yes: kept as booked")), ("no", _("No"))]

    def queryset(self, request, queryset):
        if self.value() in ("yes", "no"):
            return queryset.filter(feed_conflict__isnull=self.value() == "no")
        return queryset


class MachineRefreshAdmin(MachineAdmin):
    """The catalog's Machine admin with the feed's contradictions of running bookings shown: a column,
    a filter and, on the machine's page, what was held back and why. It takes the catalog's place here,
    as the Provider admin above does."""

    list_display = (*MachineAdmin.list_display, "feed_conflict_flag")
    list_filter = (FeedConflictFilter, *MachineAdmin.list_filter)
    list_select_related = (*MachineAdmin.list_select_related, "feed_conflict")
    readonly_fields = (*MachineAdmin.readonly_fields, "feed_conflict_reason")
    fieldsets = (
        *MachineAdmin.fieldsets,
        (_("Feed conflict"), {"fields": ("feed_conflict_reason",)}),
    )

    @admin.display(description=_("Feed conflict"))
    def feed_conflict_flag(self, machine: Machine) -> str:
        conflict = _conflict_of(machine)
        if conflict is None:
            return "—"
        return format_html('<strong class="feed-conflict" title="{}">{}</strong>', conflict.reason,
                           _("Missing, booked") if conflict.missing else _("Kept as booked"))

    @admin.display(description=_("What the feed reported"))
    def feed_conflict_reason(self, machine: Machine) -> str:
        conflict = _conflict_of(machine)
        if conflict is None:
            return "—"
        return _("%(reason)s (first found %(since)s, last %(last)s)") % {
            "reason": conflict.reason, "since": f"{conflict.since:%Y-%m-%d %H:%M:%S} UTC",
            "last": f"{conflict.last_reported_at:%Y-%m-%d %H:%M:%S} UTC",
        }


def _conflict_of(machine: Machine) -> FeedConflict | None:
    try:
        return machine.feed_conflict
    except FeedConflict.DoesNotExist:
        return None


if admin.site.is_registered(Machine):
    admin.site.unregister(Machine)
admin.site.register(Machine, MachineRefreshAdmin)


@admin.register(FeedConflict)
class FeedConflictAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):  # written by refreshes only
    """The machines whose provider's feed contradicts their running bookings, kept as booked."""

    list_display = ("machine", "provider", "missing", "held_gpus", "reason", "since", "last_reported_at")
    list_filter = ("missing", "machine__provider")
    list_select_related = ("machine__provider",)
    search_fields = ("machine__provider_machine_id", "machine__provider__name", "reason")
    fields = (
        "machine", "missing", "reported_gpu_type", "reported_gpu_count", "reported_memory_per_gpu_mib",
        "held_gpus", "reason", "since", "last_reported_at",
    )
    readonly_fields = fields

    @admin.display(description=_("Provider"), ordering="machine__provider__name")
    def provider(self, conflict: FeedConflict) -> str:
        return conflict.machine.provider.name


@admin.register(SyncRun)
class SyncRunAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):  # written by refreshes only
    list_display = (
        "started_at", "provider", "status", "received", "added", "updated", "unchanged", "gone",
        "rejected", "held_back", "duration", "short_error",
    )
    list_filter = ("status", "provider", "started_at")
    list_select_related = ("provider",)
    date_hierarchy = "started_at"
    search_fields = ("provider__name", "provider__slug", "error")
    actions = ["refresh_providers_again"]
    fields = (
        "provider", "feed_url", "status", "started_at", "finished_at", "duration", "received", "added",
        "updated", "unchanged", "gone", "rejected", "held_back", "error", "rejected_records",
        "held_back_records",
    )
    readonly_fields = fields

    @admin.display(description=_("Duration"))
    def duration(self, run: SyncRun) -> str:
        seconds = run.duration_seconds
        return "—" if seconds is None else f"{seconds:.2f} s"

    @admin.display(description=_("Error"))
    def short_error(self, run: SyncRun) -> str:
        return run.error if len(run.error) <= 90 else run.error[:89] + "…"

    @admin.display(description=_("Rejected records"))
    def rejected_records(self, run: SyncRun) -> str:
        if not run.rejected_details:
            return "—"
        shown = format_html("<pre>{}</pre>", json.dumps(run.rejected_details, indent=1, ensure_ascii=False))
        if run.rejected > len(run.rejected_details):
            return format_html("{}<p>… and {} more.</p>", shown, run.rejected - len(run.rejected_details))
        return shown

    @admin.display(description=_("Held back"))
    def held_back_records(self, run: SyncRun) -> str:
        """What of each record contradicting running bookings was not applied, and why."""
        if not run.held_back_details:
            return "—"
        shown = format_html("<pre>{}</pre>", json.dumps(run.held_back_details, indent=1, ensure_ascii=False))
        if run.held_back > len(run.held_back_details):
            return format_html("{}<p>… and {} more.</p>", shown, run.held_back - len(run.held_back_details))
        return shown

    @admin.action(description=_("Refresh these runs' providers now"), permissions=["refresh"])
    def refresh_providers_again(self, request, queryset):
        trigger_refresh(request, sorted(set(queryset.values_list("provider_id", flat=True))))

    def has_refresh_permission(self, request) -> bool:
        return request.user.has_perm("catalog.change_provider")

    def get_urls(self):
        refresh_all = path(
            "refresh-all/",
            self.admin_site.admin_view(self.refresh_all_view),
            name="refresh_syncrun_refresh_all",
        )
        return [refresh_all, *super().get_urls()]

    def refresh_all_view(self, request):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_refresh_permission(request):
            raise PermissionDenied
        trigger_refresh(request, services.providers_to_refresh())
        return HttpResponseRedirect(reverse("admin:refresh_syncrun_changelist"))

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_refresh": self.has_refresh_permission(request)}
        return super().changelist_view(request, extra_context)
