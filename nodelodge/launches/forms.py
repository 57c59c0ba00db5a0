from django import forms
from django.contrib.auth.forms import BaseUserCreationForm
from django.contrib.auth.models import User
from django.utils.translation import gettext_lazy as _

from nodelodge.recommendations.limits import MAX_MONEY
from sizing.fit import MAX_GPUS_PER_MACHINE


class LaunchForm(forms.Form):
    """The hidden fields of a Launch button on the result page."""

    machine = forms.IntegerField(min_value=1)
    gpus = forms.IntegerField(min_value=1, max_value=MAX_GPUS_PER_MACHINE)
    price_per_hour = forms.DecimalField(min_value=0, max_value=MAX_MONEY, max_digits=16, decimal_places=4)
    query = forms.CharField(max_length=2400, required=False)
    idempotency_key = forms.RegexField(regex=r"^[A-Za-z0-9_-]{8,64}$", max_length=64)


class ReviewForm(forms.Form):
    """The Launch button's fields, which the review step reads before anything is booked."""

    machine = forms.IntegerField(min_value=1)
    gpus = forms.IntegerField(min_value=1, max_value=MAX_GPUS_PER_MACHINE)
    price_per_hour = forms.DecimalField(min_value=0, max_value=MAX_MONEY, max_digits=16, decimal_places=4)
    query = forms.CharField(max_length=2400, required=False)


class SignUpForm(BaseUserCreationForm):
    """Checks what the visitor typed, never whether the username exists: that answer goes by e-mail
    to the address given (nodelodge/launches/signup.py), so the form cannot be used to list accounts."""

    email = forms.EmailField(
        required=True, label=_("Email"), help_text=_("We send a link there to finish signing up.")
    )

    class Meta(BaseUserCreationForm.Meta):
        model = User
        fields = ("username", "email")

    def validate_unique(self):
        pass  # a taken username is answered by e-mail, like a free one

