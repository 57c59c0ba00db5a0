from django import forms
from django.contrib.auth.forms import BaseUserCreationForm
from django.contrib.auth.models import User
from django.utils.translation import gettext_lazy as _


class SignUpForm(BaseUserCreationForm):
    """Checks what the visitor typed, never whether the username exists: that answer goes by e-mail
    to the address given (nodelodge/accounts/signup.py), so the form cannot be used to list accounts."""

    email = forms.EmailField(
        required=True, label=_("Email"), help_text=_("We send a link there to finish signing up.")
    )

    class Meta(BaseUserCreationForm.Meta):
        model = User
        fields = ("username", "email")

    def validate_unique(self):
        pass  # a taken username is answered by e-mail, like a free one

