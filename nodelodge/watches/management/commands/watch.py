"""Watch a result from the command line: `watch --user ada --model llama-3-1-70b --countries DE
--condition cheapest_below --price-per-hour 5`; `--list` and `--delete ID` for a user's watches."""
from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from nodelodge.watches import selectors, services
from nodelodge.watches.api import watch_out
from nodelodge.watches.models import Watch
from nodelodge.wizard.management.commands._query import (
    PREFERENCE_OPTIONS,
    QUERY_OPTIONS,
    add_query_arguments,
    fail,
    options_to_query,
)


class Command(BaseCommand):
    help = "Watch a result: be told (e-mail, webhook, feed) when machines match it."

    def add_arguments(self, parser):
        add_query_arguments(parser, preferences=True)
        parser.add_argument("--user", required=True, help="the watch's owner (username)")
        parser.add_argument("--condition", default="appears", choices=Watch.Condition.values)
        parser.add_argument(
            "--price-per-hour", dest="price_per_hour", help="USD per hour, for the price conditions"
        )
        parser.add_argument("--machines", help="N of --condition at_least")
        parser.add_argument("--webhook-url", dest="webhook_url", default="")
        parser.add_argument("--webhook-format", dest="webhook_format", default="json",
                            choices=Watch.WebhookFormat.values)
        parser.add_argument("--cooldown", dest="cooldown_seconds", help="seconds (default 3600)")
        parser.add_argument("--no-email", dest="email", action="store_false")
        parser.add_argument("--auto-launch-max-price", dest="auto_launch_max_price",
                            help="Auto-Launch: book the cheapest match once, at most this USD per hour")
        parser.add_argument("--language", default="en", choices=["en", "de"])
        parser.add_argument("--list", action="store_true", help="list the user's watches")
        parser.add_argument("--delete", type=int, metavar="ID", help="delete one of the user's watches")

    def handle(self, *args, **options):
        owner = get_user_model().objects.filter(username=options["user"]).first()
        if owner is None:
            fail(self, {"user": f"No user {options['user']!r}."})
        if options["list"]:
            self.stdout.write(json.dumps([watch_out(w) for w in selectors.watches_of(owner)], indent=2))
            return
        if options["delete"] is not None:
            try:
                services.delete(owner, options["delete"])
            except Watch.DoesNotExist:
                fail(self, {"delete": f"No watch {options['delete']} of {owner.username}."})
            self.stdout.write(f"Deleted watch {options['delete']}.")
            return
        query = dict(options_to_query(options, QUERY_OPTIONS + PREFERENCE_OPTIONS).items())
        try:
            watch = services.create_watch(owner, services.WatchRequest(
                query=query, condition=options["condition"], price_per_hour=options["price_per_hour"],
                machines=options["machines"], email=options["email"], webhook_url=options["webhook_url"],
                webhook_format=options["webhook_format"], cooldown_seconds=options["cooldown_seconds"],
                language=options["language"],
                auto_launch=options["auto_launch_max_price"] is not None,
                auto_launch_max_price=options["auto_launch_max_price"],
            ))
        except services.WatchError as error:
            fail(self, error.errors)
        if options["json"]:
            self.stdout.write(json.dumps(watch_out(watch), indent=2))
        else:
            self.stdout.write(f"Watch {watch.pk}: {watch.query_key} ({watch.condition})")
