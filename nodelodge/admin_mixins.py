"""Small pieces shared by the apps' admin classes."""


class ReadOnlyAdminMixin:
    """Rows written only by the product (bookings, sync runs): staff may look, never edit."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
