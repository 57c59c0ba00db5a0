from django.conf import settings
from django.core import checks

from .throttling import ApiRateThrottle, read_rate


@checks.register(checks.Tags.security)
def api_rate_limit_is_readable(app_configs, **kwargs):
    rate = ApiRateThrottle.current_rate()
    if rate is None:
        return []
    try:
        ApiRateThrottle().parse_rate(rate)
    except ValueError:
        return [
            checks.Error(
                f"API_RATE_LIMIT={settings.API_RATE_LIMIT!r} is not a rate such as '120/min' or 'off'.",
                id="hardening.E001",
            )
        ]
    return []


# The per-address limits of the wizard's pages and of the pages that send mail (page_limit.py,
# mail_limit.py): an unreadable one would otherwise fail every request it guards.
RATE_SETTINGS = (
    "PAGE_RATE_LIMIT", "SIGNUP_RATE_LIMIT", "PASSWORD_RESET_RATE_LIMIT", "PASSWORD_RESET_EMAIL_RATE_LIMIT"
)


@checks.register(checks.Tags.security)
def rate_limits_are_readable(app_configs, **kwargs):
    errors = []
    for setting in RATE_SETTINGS:
        try:
            read_rate(setting)
        except ValueError as error:
            errors.append(checks.Error(str(error) + ".", id="hardening.E004"))
    return errors


LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]


@checks.register(checks.Tags.security)
def lockout_rules_are_as_the_handler_reads_them(app_configs, **kwargs):
    if getattr(settings, "AXES_HANDLER", "").endswith("UserAndAddressLockoutHandler") and (
        settings.AXES_LOCKOUT_PARAMETERS != LOCKOUT_PARAMETERS
    ):
        return [
            checks.Error(
                f"AXES_LOCKOUT_PARAMETERS must be {LOCKOUT_PARAMETERS!r}: the lockout handler reads "
                "the user-and-address attempts first, the address's second.",
                id="hardening.E002",
            )
        ]
    if settings.AXES_ADDRESS_FAILURE_LIMIT <= settings.AXES_FAILURE_LIMIT:
        return [
            checks.Error(
                "AXES_ADDRESS_FAILURE_LIMIT must be well above AXES_FAILURE_LIMIT, or everyone behind "
                "one address is locked out with the first account.",
                id="hardening.E003",
            )
        ]
    return []
