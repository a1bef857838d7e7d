"""The second factor's forms: they only read what was typed."""

from django import forms
from django.utils.translation import gettext_lazy as _


class CodeForm(forms.Form):
    code = forms.CharField(
        label=_("Code"),
        max_length=32,
        help_text=_("The 6 digits your authenticator app shows, or one of your recovery codes."),
        widget=forms.TextInput(
            attrs={"autocomplete": "one-time-code", "autocapitalize": "none", "spellcheck": "false"}
        ),
    )


class SetUpForm(forms.Form):
    code = forms.CharField(
        label=_("Code from the app"),
        max_length=16,
        help_text=_("The 6 digits the app shows for this account once it has read the code."),
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric"}),
    )
