from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('launches', '0004_booking_market'),
    ]

    operations = [
        migrations.AddField(
            model_name='booking',
            name='bid_per_gpu_hour',
            field=models.DecimalField(blank=True, decimal_places=4, help_text="An interruptible booking's bid, USD per GPU-hour, which it is booked at: the machine runs while the bid is at least its floor (the interruptible price). Empty = no bid (booked at the listed price).", max_digits=10, null=True),
        ),
        migrations.AddConstraint(
            model_name='booking',
            constraint=models.CheckConstraint(condition=models.Q(('bid_per_gpu_hour__isnull', True), models.Q(('bid_per_gpu_hour', models.F('price_per_gpu_hour')), ('market', 'interruptible')), _connector='OR'), name='launches_booking_bid_is_its_interruptible_price'),
        ),
    ]
