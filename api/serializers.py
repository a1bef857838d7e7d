"""Wire formats of files and shares.

Serializers only parse and present; the rules (who may share what, how long a
share may live, when it stops being servable) are the models'.
"""

import copy
from datetime import datetime
from functools import partial

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.exceptions import PayloadTooLarge
from api.fields import (
    OffsetDateTimeField,
    SealedMetadataField,
    SecondsField,
    StrictBooleanField,
    StrictCharField,
    password_field,
)
from api.own_files import OwnFileField, OwnFilesField
from api.representations import ShareSerializer
from sharing.models import (
    KEEP,
    MAX_DOWNLOADS_LIMIT,
    MAX_FILES_PER_SHARE,
    MAX_SEALED_METADATA_BYTES,
    MESSAGE_MAX_LENGTH,
    QuotaExceeded,
    ScanState,
    Share,
    SharingPolicy,
    StoredFile,
    UploadTooLarge,
    check_sealed_metadata,
    check_upload,
    check_wrapped_secret,
    create_sealed_share,
)


class StoredFileSerializer(serializers.ModelSerializer):
    scan_state = serializers.ChoiceField(
        choices=ScanState.choices,
        read_only=True,
        help_text=(
            "The malware scan: unscanned (scanning was off when it came), pending (being checked: its links "
            "answer 503 until done), clean, infected (its bytes removed, its shares ended), too_big (larger than "
            "the scan's limit), failed (its scans failed; retried)."
        ),
    )
    scan_signature = serializers.CharField(read_only=True, help_text="infected: the malware found; else empty.")

    class Meta:
        model = StoredFile
        fields = [
            "id",
            "name",
            "size",
            "content_type",
            "sha256",
            "created_at",
            "delete_when_unshared",
            "scan_state",
            "scan_signature",
            "scanned_at",
        ]
        read_only_fields = fields


# minLength: an empty file is refused (check_upload), and the schema says so.
@extend_schema_field({"type": "string", "format": "binary", "minLength": 1})
class UploadField(serializers.FileField):
    """A multipart file part, described as binary so API docs offer a file picker."""


class FileUploadSerializer(serializers.Serializer):
    # Empty files get check_upload's message, which names the file.
    file = UploadField(allow_empty_file=True, use_url=False, help_text="The file's bytes (multipart; not empty).")
    delete_when_unshared = serializers.BooleanField(
        required=False,
        default=False,
        help_text=(
            "true: delete the file (bytes and record) as soon as it has been shared and its last share has "
            "ended, by time, download limit, unshare or purge. A file not shared yet is kept."
        ),
    )

    def validate_file(self, upload):
        try:
            check_upload(upload)
        except UploadTooLarge as exc:
            raise PayloadTooLarge(exc.messages[0]) from None
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        return upload

    def create(self, validated_data):
        try:
            return StoredFile.create_from_upload(
                owner=self.context["request"].user,
                upload=validated_data["file"],
                delete_when_unshared=validated_data.get("delete_when_unshared", False),
            )
        except QuotaExceeded as exc:
            raise PayloadTooLarge(exc.messages[0]) from None

    def to_representation(self, instance):
        return StoredFileSerializer(instance, context=self.context).data


class ExpiryInputSerializer(serializers.Serializer):
    """expires_in or expires_at, turned into a deadline by the sharing policy."""

    expires_in = SecondsField(
        required=False,
        write_only=True,
        help_text="Lifetime in seconds from now (a positive integer). Give this or expires_at, not both.",
    )
    expires_at = OffsetDateTimeField(
        required=False,
        write_only=True,
        help_text="Deadline in ISO 8601 with its offset (Z for UTC); one without is refused. Give this or expires_in.",
    )

    def get_fields(self):
        # DRF deep-copies every declared field, and each argument of each
        # (OwnFileField's QuerySet included), for every serializer made, so a
        # view may alter its copies: ~0.2 ms of each share created. These
        # serializers never alter theirs: a shallow copy is a field of its
        # own to bind (binding sets attributes on it), sharing the arguments.
        # A list's child is bound to its list when made: that one is copied.
        return {
            name: copy.deepcopy(field) if isinstance(field, serializers.ListField) else copy.copy(field)
            for name, field in self._declared_fields.items()
        }

    def resolve_deadline(self, attrs) -> datetime:
        return SharingPolicy.current().resolve_expires_at(
            now=timezone.now(), expires_in=attrs.get("expires_in"), expires_at=attrs.get("expires_at")
        )


class LinkRulesSerializer(serializers.Serializer):
    """The optional download limit and password of a link."""

    max_downloads = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_DOWNLOADS_LIMIT,
        help_text="How many downloads the link allows in all; null or absent means unlimited.",
    )
    password = password_field("A password the link asks for (stored hashed, never shown); an empty string removes it.")


class ShareMessageSerializer(serializers.Serializer):
    """The owner's note to the recipient."""

    message = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=MESSAGE_MAX_LENGTH,
        help_text="A note shown to the recipient on the link's page, as plain text (HTML is shown as typed, "
        "not rendered), after the password if the link has one; an empty string removes it.",
    )


class NoticeSettingsSerializer(serializers.Serializer):
    """Which emails the owner gets about a link (see docs/api.md, Email)."""

    notify_first_download = StrictBooleanField(
        required=False, help_text="Email the owner when the link is first downloaded (default false)."
    )
    remind_before_expiry = StrictBooleanField(
        required=False,
        help_text="Email the owner a reminder the policy's reminder lead (24 hours by default) before expiry "
        "(default true).",
    )


def refuse_unknown_fields(serializer: serializers.Serializer, message: str) -> None:
    """A field we do not know is a 400 naming it, not silently dropped: a
    client with a typo, or newer than this server, must not believe it set it."""
    extra = sorted(set(getattr(serializer.initial_data, "keys", dict)()) - set(serializer.fields))
    if extra:
        raise serializers.ValidationError(dict.fromkeys(extra, message))


class ShareCreateSerializer(
    ExpiryInputSerializer, LinkRulesSerializer, ShareMessageSerializer, NoticeSettingsSerializer
):
    file = OwnFileField(
        queryset=StoredFile.objects.all(), required=False, help_text="Id of one of your files (or send files)."
    )
    files = OwnFilesField(
        child=OwnFileField(queryset=StoredFile.objects.all()),
        required=False,
        min_length=1,
        max_length=MAX_FILES_PER_SHARE,
        help_text=f"Ids of your files to share behind one link, in the order the link lists them "
        f"(1 to {MAX_FILES_PER_SHARE}, each once); instead of file.",
    )
    sealed_metadata = SealedMetadataField(
        required=False,
        max_length=MAX_SEALED_METADATA_BYTES * 4 // 3 + 4,
        help_text="For an end-to-end encrypted link (docs/encryption.md): its files' names, types and sizes and "
        "its note, encrypted by the client as one RFC 8188 aes128gcm body, in URL-safe base64. The server "
        "cannot read it; it hands it to whoever opens the link.",
    )

    wrapped_secret = SealedMetadataField(
        required=False,
        max_length=88,
        help_text='For a link sent without its #secret (docs/encryption.md, "A password instead of the fragment"): '
        "the link's secret wrapped with a key derived from a password, 65 bytes in URL-safe base64 (version 1, "
        "PBKDF2-SHA256 iterations from 100000 to 10000000). Needs sealed_metadata and password beside it; "
        "password is then the verifier derived with the wrapping key, never the password.",
    )

    def validate_sealed_metadata(self, blob: bytes) -> bytes:
        try:
            return check_sealed_metadata(blob)
        except DjangoValidationError as error:
            raise serializers.ValidationError(error.messages) from None

    def validate_wrapped_secret(self, wrapped: bytes) -> bytes:
        try:
            return check_wrapped_secret(wrapped)
        except DjangoValidationError as error:
            raise serializers.ValidationError(error.messages) from None

    def validate_files(self, files):
        if len({stored.pk for stored in files}) != len(files):
            raise serializers.ValidationError("A file is listed twice: give each file once.")
        return files

    def validate_password(self, password: str) -> str:
        # On a new link "" protects nothing: a mistake (an empty variable),
        # not a choice. (On PATCH it removes the password.)
        if password == "":
            raise serializers.ValidationError(
                "An empty password protects nothing: leave password out for a link without one."
            )
        return password

    def validate(self, attrs):
        refuse_unknown_fields(self, "This field does not exist; nothing was created.")
        if ("file" in attrs) == ("files" in attrs):
            raise serializers.ValidationError(
                {"file": ["Give file (one file id) or files (a list of file ids), not both or neither."]}
            )
        if "sealed_metadata" in attrs and attrs.get("message"):
            raise serializers.ValidationError(
                {"message": ["An encrypted link's note goes inside its sealed metadata; leave message out."]}
            )
        if "wrapped_secret" in attrs:
            needed = {
                "sealed_metadata": ["A wrapped_secret belongs to an encrypted link: send its sealed_metadata too."],
                "password": ["A wrapped_secret opens with a password: send its verifier as password too."],
            }
            missing = {field: words for field, words in needed.items() if field not in attrs}
            if missing:
                raise serializers.ValidationError(missing)
        attrs["shared"] = attrs.pop("files", None) or [attrs.pop("file")]
        # Raises Django's ValidationError naming the field; DRF reports it as a 400.
        attrs["deadline"] = self.resolve_deadline(attrs)
        return attrs

    def create(self, validated_data):
        sealed = validated_data.get("sealed_metadata")
        create = (
            Share.create_for
            if sealed is None
            else partial(
                create_sealed_share, sealed_metadata=sealed, wrapped_secret=validated_data.get("wrapped_secret")
            )
        )
        return create(
            files=validated_data["shared"],
            expires_at=validated_data["deadline"],
            max_downloads=validated_data.get("max_downloads"),
            password=validated_data.get("password", ""),
            notify_first_download=validated_data.get("notify_first_download", False),
            remind_before_expiry=validated_data.get("remind_before_expiry", True),
            message=validated_data.get("message", ""),
        )

    def to_representation(self, instance):
        return ShareSerializer(instance, context=self.context).data


class ShareUpdateSerializer(
    ExpiryInputSerializer, LinkRulesSerializer, ShareMessageSerializer, NoticeSettingsSerializer
):
    """Change a live share: its deadline (expires_in or expires_at), its
    download limit, its password, or several at once."""

    def validate(self, attrs):
        # Refusing other fields (rather than ignoring them) tells a client that
        # tried to change a token, file or status that nothing happened.
        refuse_unknown_fields(self, f"This field cannot be changed; send only {', '.join(self.fields)}.")
        if not attrs:
            raise serializers.ValidationError({"non_field_errors": [f"Give at least one of {', '.join(self.fields)}."]})
        if "expires_in" in attrs or "expires_at" in attrs:
            attrs["deadline"] = self.resolve_deadline(attrs)
        return attrs

    def changes(self) -> dict:
        """Keyword arguments for Share.change."""
        data = self.validated_data
        return {
            "expires_at": data.get("deadline"),
            "max_downloads": data.get("max_downloads", KEEP),
            "password": data.get("password", KEEP),
            "notify_first_download": data.get("notify_first_download", KEEP),
            "remind_before_expiry": data.get("remind_before_expiry", KEEP),
            "message": data.get("message", KEEP),
        }


class ShareReactivateSerializer(ExpiryInputSerializer):
    """Bring an ended share back: a new deadline (as for a new share), and
    optionally its download count back at zero or a new download limit."""

    reset_downloads = serializers.BooleanField(
        required=False, default=False, help_text="true: count downloads from zero again."
    )
    max_downloads = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_DOWNLOADS_LIMIT,
        help_text="A new download limit (null: unlimited); absent keeps the share's limit.",
    )

    def validate(self, attrs):
        refuse_unknown_fields(self, f"This field does not exist; send only {', '.join(self.fields)}.")
        attrs["deadline"] = self.resolve_deadline(attrs)
        return attrs

    def arguments(self) -> dict:
        """Keyword arguments for Share.reactivate."""
        data = self.validated_data
        return {
            "expires_at": data["deadline"],
            "reset_downloads": data.get("reset_downloads", False),
            "max_downloads": data.get("max_downloads", KEEP),
        }
