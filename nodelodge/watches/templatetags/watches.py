"""What the watch templates state of Auto-Launch: the real limits, from the code that enforces them."""
from django import template

register = template.Library()


@register.simple_tag
def auto_launch_most() -> int:
    from nodelodge.watches.auto import MAX_LIVE_AUTO_LAUNCHES

    return MAX_LIVE_AUTO_LAUNCHES
