from django.contrib import admin

from nodelodge.admin_mixins import ReadOnlyAdminMixin

from .models import Booking, LaunchGroup


@admin.register(Booking)
class BookingAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Read-only for staff: bookings change only through Launch and Stop, which keep free-GPU counts."""

    list_display = (
        "id", "user", "machine", "gpus", "price_per_hour", "market", "bid_per_gpu_hour", "status",
        "started_at", "ends_at", "ended_at", "hours_covered", "group",
    )
    list_filter = (
        "status", "market", "machine__tier", "machine__provider", "machine__gpu_type", "started_at",
    )
    search_fields = (
        "user__username", "user__email", "machine__provider_machine_id", "machine__provider__name",
    )
    list_select_related = ("user", "machine__provider")
    date_hierarchy = "started_at"
    ordering = ("-started_at",)



@admin.register(LaunchGroup)
class LaunchGroupAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Read-only for staff: clusters and plans booked together; their bookings are listed above."""

    list_display = ("id", "user", "kind", "price_per_hour", "created_at")
    list_filter = ("kind", "created_at")
    search_fields = ("user__username", "user__email", "bookings__machine__provider_machine_id")
    list_select_related = ("user",)
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
