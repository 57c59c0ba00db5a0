from decimal import Decimal

from django import forms
from django.utils.translation import gettext_lazy as _

from nodelodge.recommendations.parameters import filled
from nodelodge.recommendations.typed_numbers import TypedDecimalField
from sizing.limits import MAX_BID_PER_GPU_HOUR, MAX_GPUS_PER_MACHINE, MAX_MONEY
from sizing.markets import MARKETS

from .models import IDEMPOTENCY_KEY

BID_RANGE = filled(_("A bid is a number of USD per GPU-hour from 0 to %(most)s."), most=MAX_BID_PER_GPU_HOUR)


class LaunchForm(forms.Form):
    """The review's Confirm: the Launch button's hidden fields, and the bid a user types where the review
    books the interruptible market (read as the page's language writes numbers: 0,75 in German)."""

    machine = forms.IntegerField(min_value=1)
    gpus = forms.IntegerField(min_value=1, max_value=MAX_GPUS_PER_MACHINE)
    price_per_hour = forms.DecimalField(min_value=0, max_value=MAX_MONEY, max_digits=16, decimal_places=4)
    query = forms.CharField(max_length=2400, required=False)
    idempotency_key = forms.RegexField(regex=rf"^{IDEMPOTENCY_KEY}$", max_length=64)
    # The market the review named (`sizing.markets`); empty (a script's form): not checked.
    market = forms.ChoiceField(choices=[("", ""), *((name, name) for name in MARKETS)], required=False)
    # Empty: no bid (booked at the price shown). Its bounds against the machine are the booking's to check.
    bid_per_gpu_hour = TypedDecimalField(
        required=False, min_value=0, max_value=MAX_BID_PER_GPU_HOUR, max_digits=9, decimal_places=4,
        error_messages={
            "invalid": filled(_("Enter your bid in USD per GPU-hour, e.g. %(example)s."),
                              example=Decimal("0.75")),
            "min_value": BID_RANGE, "max_value": BID_RANGE, "max_digits": BID_RANGE,
            "max_whole_digits": BID_RANGE,
            "max_decimal_places": _("A bid has at most 4 decimal places, as prices do."),
        },
    )

    def __init__(self, data=None, *args, number_language: str | None = None, **kwargs):
        super().__init__(data, *args, **kwargs)
        self.fields["bid_per_gpu_hour"].language = number_language  # type: ignore[attr-defined]


class ReviewForm(forms.Form):
    """The Launch button's fields, which the review step reads before anything is booked."""

    machine = forms.IntegerField(min_value=1)
    gpus = forms.IntegerField(min_value=1, max_value=MAX_GPUS_PER_MACHINE)
    price_per_hour = forms.DecimalField(min_value=0, max_value=MAX_MONEY, max_digits=16, decimal_places=4)
    query = forms.CharField(max_length=2400, required=False)


def parse_group_machines(text: str) -> list[tuple[int, int]]:
    """"12:8,13:8" (machine id, colon, GPUs; comma between machines) as pairs."""
    pairs = []
    for part in text.split(","):
        machine_id, _colon, gpus = part.strip().partition(":")
        if not (machine_id.isdigit() and gpus.isdigit()) or len(machine_id) > 18 or len(gpus) > 3:
            raise forms.ValidationError(_("Each machine is its id and its GPUs, as 12:8."), code="invalid")
        pairs.append((int(machine_id), int(gpus)))
    return pairs


class GroupMachinesField(forms.CharField):
    """A cluster's or plan's machines with the GPUs each, as the Launch cluster form writes them."""

    def to_python(self, value):
        text = super().to_python(value)
        return parse_group_machines(text) if text else []


class GroupReviewForm(forms.Form):
    """The hidden fields of a "Launch cluster" or "Launch this plan" button."""

    kind = forms.ChoiceField(choices=[("cluster", "cluster"), ("plan", "plan")])
    machines = GroupMachinesField(max_length=250_000)  # ten thousand machines, as "1234567:8"
    price_per_hour = forms.DecimalField(min_value=0, max_value=MAX_MONEY, max_digits=16, decimal_places=4)
    query = forms.CharField(max_length=2400, required=False)


def parse_group_markets(text: str) -> dict[int, str]:
    """"12:interruptible,13:on_demand" (machine id, colon, the market the review named) by machine id."""
    markets: dict[int, str] = {}
    for part in text.split(","):
        machine_id, _colon, market = part.strip().partition(":")
        known = machine_id.isdigit() and len(machine_id) <= 18 and market in MARKETS
        if not known or int(machine_id) in markets:
            raise forms.ValidationError(_("Each machine's market is its id and a market, as 12:on_demand."),
                                        code="invalid")
        markets[int(machine_id)] = market
    return markets


class GroupMarketsField(forms.CharField):
    """The market the review named for each machine of a group, as its Confirm writes them."""

    def to_python(self, value):
        text = super().to_python(value)
        return parse_group_markets(text) if text else {}


class GroupLaunchForm(GroupReviewForm):
    """The review's Confirm: the same fields, the markets the review named (empty, a script's form: not
    checked) and the key that makes a resubmitted form book once."""

    markets = GroupMarketsField(max_length=400_000, required=False)  # ten thousand "1234567:interruptible"
    idempotency_key = forms.RegexField(regex=rf"^{IDEMPOTENCY_KEY}$", max_length=64)
