from django.conf import settings
from django.core import checks

from .throttling import ApiRateThrottle


@checks.register(checks.Tags.security)
def api_rate_limit_is_readable(app_configs, **kwargs):
    rate = ApiRateThrottle.current_rate()
    if rate is None:
        return []
    try:
        ApiRateThrottle.parse_rate(ApiRateThrottle, rate)
    except ValueError:
        return [
            checks.Error(
                f"API_RATE_LIMIT={settings.API_RATE_LIMIT!r} is not a rate such as '120/min' or 'off'.",
                id="hardening.E001",
            )
        ]
    return []
