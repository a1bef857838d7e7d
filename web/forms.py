"""Forms of the owner pages. They only parse what a person typed; the rules
(lifetime limits, upload limits, who owns what) are the models' and the
sharing policy's, and their messages reach the form as field errors."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from collect.models import MAX_BYTES_LIMIT, MAX_FILES_LIMIT, NOTE_MAX_LENGTH
from sharing.admin_quotas import ByteSizeField
from sharing.models import MAX_DOWNLOADS_LIMIT, MESSAGE_MAX_LENGTH, SharingPolicy, format_duration

CUSTOM = "custom"
# The lifetimes a person picks most (what Pingvin Share and Send offer).
PRESETS = [
    (timedelta(hours=1), _("1 hour")),
    (timedelta(days=1), _("1 day")),
    (timedelta(days=7), _("7 days")),
    (timedelta(days=30), _("30 days")),
]


def lifetime_choices(policy: SharingPolicy) -> list[tuple[str, str]]:
    """The presets within the policy's maximum, the maximum itself when no
    preset equals it, then "a date and time"."""
    choices = [(str(int(span.total_seconds())), label) for span, label in PRESETS if span < policy.max_lifetime]
    top = next((label for span, label in PRESETS if span == policy.max_lifetime), None)
    top = top or _("%(duration)s (the longest allowed)") % {"duration": format_duration(policy.max_lifetime)}
    choices.append((str(int(policy.max_lifetime.total_seconds())), top))
    return [*choices, (CUSTOM, _("A date and time"))]


def zone_named(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError(_("Unknown time zone: %(name)s."), params={"name": name[:64]}) from None


class ExpiryForm(forms.Form):
    """When a link ends: a preset lifetime from now, or a date and time in
    the owner's own time zone (the page's script fills `time_zone` in from
    the browser; without it the time is read as UTC)."""

    lifetime = forms.ChoiceField(label=_("Link expires in"), widget=forms.RadioSelect)
    expires_local = forms.CharField(
        label=_("End date and time"),
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1", "aria-describedby": "zone-hint"}),
    )
    time_zone = forms.CharField(required=False, max_length=64, widget=forms.HiddenInput)

    def __init__(self, *args, policy: SharingPolicy | None = None, like: timedelta | None = None, **kwargs):
        """`like`: the lifetime of the link being changed, so the preset
        offered first is the shortest that lasts at least as long (a
        2-minute link is offered 1 hour, not the policy's default week)."""
        super().__init__(*args, **kwargs)
        self.policy = policy or SharingPolicy.current()
        choices = lifetime_choices(self.policy)
        self.fields["lifetime"].choices = choices
        presets = [value for value, _label in choices if value != CUSTOM]
        if like is not None:
            longer = [value for value in presets if int(value) >= like.total_seconds()]
            self.fields["lifetime"].initial = longer[0] if longer else presets[-1]
            return
        default = str(int(self.policy.default_lifetime.total_seconds()))
        self.fields["lifetime"].initial = default if default in dict(choices) else choices[0][0]

    def clean_expires_local(self) -> datetime | None:
        text = self.cleaned_data["expires_local"].strip()
        if not text:
            return None
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise ValidationError(_("Enter a date and time such as 2030-01-31 18:30.")) from None
        if value.tzinfo is not None:  # a hand-made request; the picker sends local times only
            raise ValidationError(_("Enter a local date and time without a UTC offset."))
        return value

    def clean_time_zone(self) -> ZoneInfo:
        return zone_named(self.cleaned_data["time_zone"].strip())

    def clean(self):
        cleaned = super().clean()
        # Only the expiry's own fields stop its check: a past date is said
        # beside another field's error, not after that one is fixed.
        if any(name in self.errors for name in EXPIRY_FIELDS):
            return cleaned
        now = timezone.now()
        if cleaned["lifetime"] == CUSTOM:
            local = cleaned.get("expires_local")
            if local is None:
                self.add_error("expires_local", _("Pick the date and time the link should end."))
                return cleaned
            field, arguments = "expires_local", {"expires_at": local.replace(tzinfo=cleaned["time_zone"])}
        else:
            field, arguments = "lifetime", {"expires_in": int(cleaned["lifetime"])}
        try:
            cleaned["deadline"] = self.policy.resolve_expires_at(now=now, **arguments)
        except ValidationError as refused:
            for error in refused.error_dict.popitem()[1]:
                if error.code == "past":
                    self.add_error(field, _("That time has already passed; pick one in the future."))
                else:
                    self.add_error(field, error)
        return cleaned


EXPIRY_FIELDS = ("lifetime", "expires_local", "time_zone")


class ReactivateForm(ExpiryForm):
    """An ended link brought back (sharing.models.reactivate): a new
    lifetime, as for a new link, and whether its downloads count from zero."""

    lifetime = forms.ChoiceField(label=_("Works again for"), widget=forms.RadioSelect)
    reset_downloads = forms.BooleanField(
        label=_("Count downloads from zero again"),
        required=False,
        help_text=_("A link that reached its download limit needs this to work again."),
    )


def link_password_field(help_text) -> forms.CharField:
    """A link's new password, kept as typed (spaces count); empty for none."""
    return forms.CharField(
        label=_("Password"),
        required=False,
        strip=False,
        max_length=1024,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=help_text,
    )


class ShareForm(ExpiryForm):
    max_downloads = forms.IntegerField(
        label=_("Download limit"),
        required=False,
        min_value=1,
        max_value=MAX_DOWNLOADS_LIMIT,
        help_text=_("The link ends after this many downloads. Leave empty for no limit."),
    )
    password = link_password_field(_("Recipients must type it before they see the file. Leave empty for none."))
    message = forms.CharField(
        label=_("Message to the recipient"),
        required=False,
        max_length=MESSAGE_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("Shown on the link's page as plain text. Optional."),
    )
    notify_first_download = forms.BooleanField(
        label=_("Email me when it is first downloaded"), required=False, initial=False
    )
    remind_before_expiry = forms.BooleanField(
        label=_("Email me a reminder before it expires"), required=False, initial=True
    )


class SizeField(ByteSizeField):
    """A size typed as people write it ("10 MB", "1.5 GiB", a number of
    bytes), as bytes, within bounds; empty is None."""

    def __init__(self, *, min_value: int, max_value: int, **kwargs):
        super().__init__(**kwargs)
        self.validators += [MinValueValidator(min_value), MaxValueValidator(max_value)]


class UploadRequestForm(ExpiryForm):
    """A new upload request: its deadline (as a share's), its words, its
    limits and its password."""

    lifetime = forms.ChoiceField(label=_("Takes files for"), widget=forms.RadioSelect)
    title = forms.CharField(
        label=_("Title"),
        required=False,
        max_length=200,
        help_text=_("What you ask for, shown to whoever opens the link."),
    )
    note = forms.CharField(
        label=_("Note to the uploader"),
        required=False,
        strip=False,
        max_length=NOTE_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("Shown on the request's page as plain text. Optional."),
    )
    password = link_password_field(_("Uploaders must type it before they can send files. Leave empty for none."))
    max_files = forms.IntegerField(
        label=_("File limit"),
        required=False,
        min_value=1,
        max_value=MAX_FILES_LIMIT,
        help_text=_("How many files it takes in all. Leave empty for no limit."),
    )
    max_bytes = SizeField(
        label=_("Size limit"),
        required=False,
        min_value=1,
        max_value=MAX_BYTES_LIMIT,
        help_text=_("How much it takes in all, such as 500 MB or 2 GB. Leave empty for no limit."),
    )
    notify_by_email = forms.BooleanField(label=_("Email me when a file arrives"), required=False, initial=False)
