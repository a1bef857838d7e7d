"""The webhook endpoints API's input and output."""

from rest_framework import serializers

from webhooks.models import WebhookEndpoint, valid_event_kinds
from webhooks.targets import TargetRefused, resolve

URL_MAX = WebhookEndpoint._meta.get_field("url").max_length


class EventKindsField(serializers.ListField):
    child = serializers.ChoiceField(choices=valid_event_kinds())

    def to_internal_value(self, data):
        # One message naming the unknown kinds: ListField's own error is a
        # dict keyed by position ({"0": [...]}), a shape the API's error
        # schema (a list of messages per field) does not have.
        if isinstance(data, list):
            unknown = [kind for kind in data if not isinstance(kind, str) or kind not in valid_event_kinds()]
            if unknown:
                raise serializers.ValidationError(
                    f"Unknown event kinds: {', '.join(map(repr, unknown))}. "
                    f"Known kinds: {', '.join(valid_event_kinds())}."
                )
        kinds = super().to_internal_value(data)
        # Kept in the order of ShareEvent.Kind, each once.
        return [kind for kind in valid_event_kinds() if kind in kinds]


class WebhookEndpointSerializer(serializers.ModelSerializer):
    url = serializers.URLField(
        max_length=URL_MAX,
        help_text="Where deliveries are POSTed (http or https, a public address).",
    )
    events = EventKindsField(
        allow_empty=False,
        help_text='The event kinds to send: share event kinds, e.g. ["expired", "downloaded"], and '
        '"upload_request.file_received" (a file arrived through one of your upload requests).',
    )
    state = serializers.ChoiceField(
        choices=WebhookEndpoint.State.choices,
        read_only=True,
        help_text="failing: deliveries kept failing for the retry window (24 h); nothing is sent until re-enabled.",
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "events", "state", "failing_since", "created_at"]
        read_only_fields = ["id", "state", "failing_since", "created_at"]

    def validate_url(self, url: str) -> str:
        try:
            resolve(url)
        except TargetRefused as refused:
            raise serializers.ValidationError(str(refused)) from None
        return url


class WebhookEndpointCreatedSerializer(WebhookEndpointSerializer):
    secret = serializers.CharField(
        read_only=True,
        help_text=(
            "The signing secret (whsec_ and base64), shown only in this answer: keep it to verify webhook-signature."
        ),
    )

    class Meta(WebhookEndpointSerializer.Meta):
        fields = [*WebhookEndpointSerializer.Meta.fields, "secret"]


class WebhookEndpointUpdateSerializer(WebhookEndpointSerializer):
    url = serializers.URLField(max_length=URL_MAX, required=False, help_text="A new URL.")
    events = EventKindsField(allow_empty=False, required=False, help_text="The new list of event kinds.")
    state = serializers.ChoiceField(
        choices=[WebhookEndpoint.State.ACTIVE],
        required=False,
        help_text='"active" re-enables a failing endpoint: its pending deliveries are sent again now.',
    )

    class Meta(WebhookEndpointSerializer.Meta):
        fields = ["url", "events", "state"]
        read_only_fields = []

    def validate(self, attrs):
        unknown = set(self.initial_data) - set(self.fields) if hasattr(self.initial_data, "keys") else set()
        if unknown:
            raise serializers.ValidationError({name: ["This field cannot be changed."] for name in sorted(unknown)})
        if not attrs:
            raise serializers.ValidationError("Send at least one of url, events, state.")
        return attrs
