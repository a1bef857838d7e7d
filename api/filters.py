"""Query-string filters for the share list."""

from rest_framework.exceptions import ValidationError
from rest_framework.filters import BaseFilterBackend

from sharing.models import Share

MAX_ID = 2**63 - 1  # BigAutoField


class ShareFilterBackend(BaseFilterBackend):
    """Filter shares by ?status (effective status) and ?file (file id)."""

    def filter_queryset(self, request, queryset, view):
        status = request.query_params.get("status")
        if status is not None:
            if status not in Share.Status.values:
                choices = ", ".join(Share.Status.values)
                raise ValidationError({"status": [f"Unknown status {status!r}; use one of: {choices}."]})
            queryset = queryset.with_effective_status(status, view.now)
        file_id = request.query_params.get("file")
        if file_id is not None:
            if not (file_id.isascii() and file_id.isdigit() and int(file_id) >= 1):
                raise ValidationError({"file": ["file must be a file id (a positive integer)."]})
            # An id past the largest the database can hold matches no file (and
            # would overflow the query parameter rather than just find nothing).
            file_pk = int(file_id)
            queryset = queryset.holding(file_pk) if file_pk <= MAX_ID else queryset.none()
        return queryset

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": "status",
                "in": "query",
                "required": False,
                "description": "Only shares with this effective status (an active share past expires_at is expired).",
                "schema": {"type": "string", "enum": list(Share.Status.values)},
            },
            {
                "name": "file",
                "in": "query",
                "required": False,
                "description": "Only shares of this file id.",
                "schema": {"type": "integer", "minimum": 1},
            },
        ]
