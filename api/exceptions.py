"""Turn the model layer's errors into clear 4xx API responses."""

import logging

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, UnsupportedMediaType
from rest_framework.views import exception_handler

from api.parsers import accepted_types
from storage.errors import StorageUnavailable

logger = logging.getLogger(__name__)


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The upload is larger than the server accepts."
    default_code = "payload_too_large"


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The resource is not in a state that allows this change."
    default_code = "conflict"


class FilesUnavailable(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The file store cannot be reached just now; try again in a moment."
    default_code = "files_unavailable"


class Gone(APIException):
    status_code = status.HTTP_410_GONE
    default_detail = "The resource is no longer available."
    default_code = "gone"


def api_exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        exc = serializers.ValidationError(detail)
    if isinstance(exc, StorageUnavailable):
        logger.warning("The file store is out of reach: %s", exc)
        response = exception_handler(FilesUnavailable(), context)
        response["Retry-After"] = "1"
        return response
    if isinstance(exc, UnsupportedMediaType):
        exc = UnsupportedMediaType(None, detail=_with_accepted_types(str(exc.detail), context))
    return exception_handler(exc, context)


def _with_accepted_types(detail: str, context) -> str:
    """A 415's detail, followed by the content types the endpoint reads."""
    request = context.get("request")
    parsers = getattr(request, "parsers", None) or []
    if not parsers:
        return detail
    return f"{detail} This endpoint accepts: {accepted_types(parsers)}."
