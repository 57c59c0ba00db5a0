"""Each booking stores when its booking limit ends it (`ends_at`), so finding the bookings due to
end is a plain indexed comparison on every database (SQLite cannot multiply an interval in SQL).
Existing bookings get theirs from start + limit."""
from datetime import timedelta

from django.conf import settings
from django.db import migrations, models


def fill_ends_at(apps, schema_editor):
    bookings = apps.get_model("launches", "Booking").objects.using(schema_editor.connection.alias)
    limited = bookings.filter(booking_limit_hours__isnull=False).only("pk", "started_at", "booking_limit_hours")
    batch = []
    for booking in limited.iterator(chunk_size=2000):
        booking.ends_at = booking.started_at + timedelta(hours=booking.booking_limit_hours)
        batch.append(booking)
        if len(batch) == 2000:
            bookings.bulk_update(batch, ["ends_at"])
            batch = []
    bookings.bulk_update(batch, ["ends_at"])


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0012_machine_country_price_index'),
        ('launches', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='booking',
            name='ends_at',
            field=models.DateTimeField(blank=True, help_text='When the booking limit ends it: start + limit, stored when booked. Empty = no limit.', null=True),
        ),
        migrations.RunPython(fill_ends_at, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name='booking',
            index=models.Index(condition=models.Q(('status', 'running')), fields=['ends_at'], name='launches_booking_due_idx'),
        ),
        migrations.AddConstraint(
            model_name='booking',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('booking_limit_hours__isnull', True), ('ends_at__isnull', True)), models.Q(('booking_limit_hours__isnull', False), ('ends_at__isnull', False)), _connector='OR'), name='launches_booking_ends_at_matches_limit'),
        ),
    ]
