"""Sign-in lockout with two rules (django-axes' database handler, counting differently):

- a username from one address: locked after AXES_FAILURE_LIMIT failures (5), so guessing one
  account's password stops quickly, while the same account from elsewhere and everyone else behind
  the same address (an office, a campus, a mobile carrier's NAT) sign in as usual;
- an address alone, whatever the usernames: locked after AXES_ADDRESS_FAILURE_LIMIT failures (50),
  so one address spraying passwords over many accounts is stopped too, at a threshold a shared
  address does not reach by ordinary mistakes.

Failures count within AXES_COOLOFF_TIME. A good sign-in clears its own username's failures from that
address only: signing in to an account of one's own never clears an address's count.

The handler reads the attempts axes selects by AXES_LOCKOUT_PARAMETERS, which must be, in this order,
`[["username", "ip_address"], "ip_address"]` (settings.py; `checks.py` makes sure).
"""
from __future__ import annotations

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_failure_limit
from django.conf import settings
from django.db.models import Sum


def _failures(attempts) -> int:
    return attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0


class UserAndAddressLockoutHandler(AxesDatabaseHandler):
    def get_failures(self, request, credentials: dict | None = None) -> int:
        """The user-and-address count, raised to the limit once the address alone reaches its own."""
        user_and_address, address = (
            _failures(attempts) for attempts in self.get_user_attempts(request, credentials)
        )
        if address >= settings.AXES_ADDRESS_FAILURE_LIMIT:
            return max(user_and_address, get_failure_limit(request, credentials))
        return user_and_address

    def reset_user_attempts(self, request, credentials: dict | None = None) -> int:
        user_and_address = self.filter_user_attempts(request, credentials)[0]
        count, _ = user_and_address.delete()
        return count
