"""`manage.py watch`: create, list and delete a user's watches; bad input on stderr, exit 2."""
import json
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from nodelodge.watches.models import Watch
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_command_creates_lists_and_deletes(catalog):
    make_user("ada")
    out = StringIO()

    call_command("watch", "--user", "ada", "--model", "llama-3-1-8b", "--condition", "cheapest_below",
                 "--price-per-hour", "3", "--auto-launch-max-price", "2.5", stdout=out)

    watch = Watch.objects.get()
    assert out.getvalue().startswith(f"Watch {watch.pk}: context=4096&kv_cache=16&model=llama-3-1-8b")
    assert (watch.condition, watch.price_per_hour) == ("cheapest_below", 3)
    assert (watch.auto_launch, watch.auto_launch_max_price) == (True, Decimal("2.5"))
    listed = StringIO()
    call_command("watch", "--user", "ada", "--list", stdout=listed)
    assert [w["id"] for w in json.loads(listed.getvalue())] == [watch.pk]
    call_command("watch", "--user", "ada", "--delete", str(watch.pk), stdout=StringIO())
    assert not Watch.objects.exists()


def test_bad_input_exits_2_naming_the_field(catalog):
    make_user("ada")
    err = StringIO()

    with pytest.raises(SystemExit) as exited:
        call_command("watch", "--user", "ada", "--condition", "at_least", "--machines", "0", stderr=err)

    assert exited.value.code == 2
    assert err.getvalue().startswith("error: machines: Enter a whole number of machines")
