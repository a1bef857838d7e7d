"""The API's own field types: JSON scalars taken only as what they say (a
whole number of seconds, a string, a boolean, a moment with its offset) and
bytes carried as URL-safe base64. DRF's own fields coerce more than a
client is likely to mean."""

import base64
import binascii
import re
from datetime import timedelta

from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

# The largest number of seconds a timedelta can hold: anything above it could
# never pass the policy's maximum and would only overflow inside the model.
# The most seconds a timedelta holds in whole days (int(timedelta.max.total_seconds())
# rounds up past it in floating point, and timedelta(seconds=...) then overflows).
MAX_EXPIRES_IN = timedelta.max.days * 86400
WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,30}")
URL_SAFE_BASE64 = re.compile(r"[A-Za-z0-9_-]*={0,2}")


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_EXPIRES_IN})
class SecondsField(serializers.Field):
    """A whole number of seconds, given as a JSON integer or a string of digits.

    DRF's IntegerField accepts true, 1.0 and "1.0"; a lifetime typed by a
    person is clearer refused than silently read as one second.
    """

    default_error_messages = {
        "invalid": "Must be a whole number of seconds.",
        "too_large": "Must be at most {max} seconds.",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | str):
            self.fail("invalid")
        if isinstance(data, str):
            text = data.strip()
            if not WHOLE_NUMBER.fullmatch(text):
                self.fail("invalid")
            data = int(text)
        if data > MAX_EXPIRES_IN:
            self.fail("too_large", max=MAX_EXPIRES_IN)
        # Zero and negatives are the policy's to refuse, with its own message.
        return data

    def to_representation(self, value):
        return value


class OffsetDateTimeField(serializers.DateTimeField):
    """An ISO 8601 date and time with its offset: without one, the moment it
    names depends on a zone the client never said, so it is refused."""

    default_error_messages = {
        "no_offset": "Give the time zone: an offset such as +02:00, or Z for UTC (e.g. 2026-12-01T09:00:00Z).",
    }

    def to_internal_value(self, value):
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value.strip())
            except ValueError:  # well formed but no such date (month 13): the field's own message
                parsed = None
            if parsed is not None and parsed.tzinfo is None:
                self.fail("no_offset")
        return super().to_internal_value(value)


class StrictCharField(serializers.CharField):
    """A JSON string only: DRF's CharField turns 12345 into "12345", and a
    password typed as a number is more likely a client bug than a choice."""

    default_error_messages = {"not_a_string": "Must be a string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false only: DRF's BooleanField also takes 0, "yes" and
    "on", which a JSON client sends by mistake rather than by choice."""

    default_error_messages = {"not_a_boolean": "Must be true or false."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("not_a_boolean")
        return data


def password_field(help_text: str) -> StrictCharField:
    """A link's password as a client sends it: a JSON string, kept as typed
    (spaces count), at most 1024 characters, never shown back."""
    return StrictCharField(
        required=False,
        write_only=True,
        allow_blank=True,
        trim_whitespace=False,
        max_length=1024,
        style={"input_type": "password"},
        help_text=help_text,
    )


class SealedMetadataField(serializers.CharField):
    """Bytes sent as URL-safe base64 (padding optional), as JSON carries them."""

    def to_internal_value(self, data):
        text = super().to_internal_value(data)
        if self.max_length is not None and len(text) > self.max_length:
            self.fail("max_length", max_length=self.max_length)  # before decoding it
        if not URL_SAFE_BASE64.fullmatch(text):
            raise serializers.ValidationError("Not URL-safe base64 (A-Z, a-z, 0-9, - and _).")
        try:
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (ValueError, binascii.Error):
            raise serializers.ValidationError("Not URL-safe base64: its length is not one base64 has.") from None
