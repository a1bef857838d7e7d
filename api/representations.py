"""How shares and their history read on the wire (the API's output).

Kept apart from the input serializers (api.serializers): a share's JSON
is written out for speed, and is tested equal to its declared fields.
"""

import re
from datetime import UTC, datetime, timedelta

from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from sharing.models import Share, ShareEvent
from sharing.models.events import SHOWN_FIELDS

# A share token as links/urls.py matches it.
TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")


class BlankAsNullChoiceField(serializers.ChoiceField):
    """Show the model's "" (no value yet) as null, like the neighbouring ended_at."""

    def to_representation(self, value):
        return None if value == "" else super().to_representation(value)


class ShareSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField(help_text="The public link that downloads the file.")
    status = serializers.SerializerMethodField(
        help_text="Effective status: an active share past its expires_at is already expired."
    )
    end_reason = BlankAsNullChoiceField(
        choices=Share.EndReason.choices,
        allow_null=True,
        read_only=True,
        help_text="Why the share ended (expired, download_limit, unshared, file_deleted); null while it is active.",
    )
    download_count = serializers.IntegerField(
        source="total_downloads",
        read_only=True,
        help_text="Downloads started so far: responses that began at byte 0 (resumes are not counted).",
    )
    lateness_ms = serializers.SerializerMethodField(
        help_text="For a share the expiry daemon ended: milliseconds between expires_at and the expiry's commit."
    )
    downloads_left = serializers.IntegerField(
        read_only=True,
        allow_null=True,
        help_text="Whole copies the link's byte budget still holds; null when unlimited.",
    )
    has_password = serializers.BooleanField(read_only=True, help_text="Whether the link asks for a password.")
    file = serializers.IntegerField(
        source="file.pk",
        read_only=True,
        allow_null=True,
        help_text="Id of the share's first file (its only one, for a share of one file); null when all were deleted.",
    )
    files = serializers.ListField(
        source="file_ids",
        child=serializers.IntegerField(),
        read_only=True,
        help_text="Ids of every file the share holds, in the order its link lists them.",
    )
    size = serializers.IntegerField(
        read_only=True, help_text="Bytes of one copy: the sizes of its files added up (what one download sends)."
    )

    class Meta:
        model = Share
        fields = [
            "id",
            "file",
            "files",
            "size",
            "token",
            "url",
            "created_at",
            "expires_at",
            "status",
            "ended_at",
            "end_reason",
            "download_count",
            "max_downloads",
            "downloads_left",
            "has_password",
            "message",
            "lateness_ms",
            "notify_first_download",
            "remind_before_expiry",
        ]
        read_only_fields = fields

    def to_representation(self, share):
        """What the declared fields produce (the schema is drawn from them),
        written out: per-field DRF calls were 60 % of GET /api/shares/ with 50
        shares a page (a bound copy of every field, a reverse() and a host
        check per link, a timezone lookup per datetime). Equality with the
        fields' own output is tested (tests/test_api_representation.py)."""
        now = self.context.get("now") or timezone.now()
        lateness = share.lateness
        utc = self._once("utc", lambda: timezone.get_current_timezone_name() == "UTC")
        file_ids = share.file_ids
        return {
            "id": share.id,
            "file": file_ids[0] if file_ids else None,
            "files": file_ids,
            "size": share.size,
            "token": share.token,
            "url": self.get_url(share),
            "created_at": _iso(share.created_at, utc),
            "expires_at": _iso(share.expires_at, utc),
            "status": str(share.effective_status(now)),
            "ended_at": _iso(share.ended_at, utc),
            "end_reason": str(share.end_reason) if share.end_reason else None,
            "download_count": share.total_downloads,
            "max_downloads": share.max_downloads,
            "downloads_left": share.downloads_left,
            "has_password": share.has_password,
            "message": share.message,
            "lateness_ms": None if lateness is None else round(lateness / timedelta(milliseconds=1), 3),
            "notify_first_download": share.notify_first_download,
            "remind_before_expiry": share.remind_before_expiry,
        }

    def get_url(self, share) -> str:
        if not TOKEN.fullmatch(share.token):  # reverse() refuses it: let it say so
            return self._absolute(reverse("public-share", args=[share.token]))
        # A token needs no quoting, so every link is the same prefix and the
        # token: one reverse() and one host check per response, not per share.
        return self._once("link_prefix", lambda: self._absolute(reverse("public-share", args=["t"]))[:-1]) + share.token

    def _once(self, name: str, compute):
        """`compute()` once per response: kept on the root serializer (the
        list's, for a page of shares), which lives as long as the response."""
        cache = self.root.__dict__.setdefault("_per_response", {})
        if name not in cache:
            cache[name] = compute()
        return cache[name]

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    @extend_schema_field(serializers.ChoiceField(choices=Share.Status.choices))
    def get_status(self, share) -> str:
        # One clock per response, so a page of shares agrees with ?status.
        return share.effective_status(self.context.get("now") or timezone.now())

    def get_lateness_ms(self, share) -> float | None:
        lateness = share.lateness
        return None if lateness is None else round(lateness / timedelta(milliseconds=1), 3)


def _iso(value: datetime | None, utc: bool) -> str | None:
    """DRF's DateTimeField output (ISO 8601, "Z" for UTC) of `value`; written
    out for an aware UTC datetime (what the database gives back with USE_TZ)
    when the current time zone is UTC (`utc`), DRF's own code otherwise."""
    if value is None:
        return None
    if not utc or value.utcoffset() != timedelta(0):
        return _DATETIME.to_representation(value)
    return value.replace(tzinfo=UTC).isoformat()[:-6] + "Z"


_DATETIME = serializers.DateTimeField()


class ShareEventSerializer(serializers.ModelSerializer):
    """One entry of a share's history; fields a kind does not use are null."""

    lateness_ms = serializers.SerializerMethodField(
        help_text="expired: milliseconds between the deadline and the expiry's commit; null otherwise."
    )
    details = serializers.DictField(
        read_only=True,
        help_text=(
            'What else the kind says: created {"max_downloads", "password"}; changed {"max_downloads": [old, new], '
            '"password": "set" | "changed" | "removed"}; reactivated {"was", "reset_downloads", '
            '"download_count", "max_downloads": [old, new]}; delivered {"download": the event it closes, '
            '"from", "until", "size", "whole"}; {} for the others.'
        ),
    )

    class Meta:
        model = ShareEvent
        fields = ["id", *SHOWN_FIELDS]
        read_only_fields = fields

    def get_lateness_ms(self, event) -> float | None:
        return None if event.lateness is None else round(event.lateness / timedelta(milliseconds=1), 3)
