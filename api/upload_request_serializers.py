"""The upload requests API's shapes."""

from django.utils import timezone
from rest_framework import serializers

from api.fields import StrictBooleanField, StrictCharField, password_field
from api.serializers import ExpiryInputSerializer
from collect.models import MAX_BYTES_LIMIT, MAX_FILES_LIMIT, NOTE_MAX_LENGTH, ReceivedFile, UploadRequest
from collect.unlock import request_path


class ReceivedFileSerializer(serializers.ModelSerializer):
    state = serializers.SerializerMethodField(
        help_text='"arriving" while its upload goes on, "being_checked" while its malware scan is owed, then '
        '"arrived", or "infected" (the scan found malware: its bytes are gone).'
    )
    file = serializers.PrimaryKeyRelatedField(
        read_only=True, help_text="The stored file (one of yours) once it arrived; null before, or if you deleted it."
    )

    class Meta:
        model = ReceivedFile
        fields = ["id", "name", "size", "state", "started_at", "finished_at", "file"]

    def get_state(self, received: ReceivedFile) -> str:
        return received.state


class UploadRequestSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField(help_text="The link to give the uploader: its page.")
    state = serializers.SerializerMethodField(help_text='"open" while it takes uploads, then "ended".')
    has_password = serializers.BooleanField(read_only=True)
    end_reason = serializers.ChoiceField(
        choices=UploadRequest.EndReason.choices,
        allow_null=True,
        read_only=True,
        help_text='Why it ended: "expired" (its deadline) or "closed" (by you); null while open.',
    )
    files = ReceivedFileSerializer(source="received", many=True, read_only=True)

    class Meta:
        model = UploadRequest
        fields = [
            "id",
            "url",
            "title",
            "note",
            "has_password",
            "max_files",
            "max_bytes",
            "files_taken",
            "bytes_taken",
            "notify_by_email",
            "created_at",
            "expires_at",
            "state",
            "ended_at",
            "end_reason",
            "files",
        ]
        read_only_fields = fields

    def get_url(self, upload_request: UploadRequest) -> str:
        request = self.context.get("request")
        path = request_path(upload_request)
        return request.build_absolute_uri(path) if request is not None else path

    def get_state(self, upload_request: UploadRequest) -> str:
        return "open" if self.ending(upload_request) is None else "ended"

    def to_representation(self, instance):
        data = super().to_representation(instance)
        ending = self.ending(instance)
        data["end_reason"], data["ended_at"] = (None, None) if ending is None else (ending[0], self.moment(ending[1]))
        return data

    def ending(self, upload_request: UploadRequest):
        """how_it_ended at the one time this answer is judged by."""
        now = self.context.setdefault("now", timezone.now())
        return upload_request.how_it_ended(now)

    def moment(self, value) -> str:
        return serializers.DateTimeField().to_representation(value)


class RequestTextSerializer(serializers.Serializer):
    title = StrictCharField(required=False, allow_blank=True, max_length=200, help_text="What you ask for.")
    note = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=NOTE_MAX_LENGTH,
        trim_whitespace=False,
        help_text=f"A note shown to the uploader (plain text, at most {NOTE_MAX_LENGTH} characters).",
    )
    notify_by_email = StrictBooleanField(required=False, help_text="Email you when a file arrives.")
    password = password_field(
        "A password the uploader must give (stored hashed, never shown); an empty string removes it."
    )


class UploadRequestCreateSerializer(ExpiryInputSerializer, RequestTextSerializer):
    """A new request: its deadline (expires_in or expires_at, within the
    sharing policy's maximum lifetime; its default lifetime when neither),
    its limits and its words."""

    max_files = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_FILES_LIMIT, help_text="Files accepted in all."
    )
    max_bytes = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_BYTES_LIMIT, help_text="Bytes accepted in all."
    )

    def validate(self, attrs):
        attrs["deadline"] = self.resolve_deadline(attrs)
        return attrs

    def create(self, validated_data):
        fields = {name: validated_data[name] for name in CREATE_FIELDS if name in validated_data}
        return UploadRequest.create_for(owner=validated_data["owner"], expires_at=validated_data["deadline"], **fields)


CREATE_FIELDS = ["title", "note", "max_files", "max_bytes", "notify_by_email", "password"]


class UploadRequestUpdateSerializer(RequestTextSerializer):
    """Its words, its email notice and its password; its deadline and limits
    stay as the uploaders were told."""
