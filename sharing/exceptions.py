"""Turn the model layer's errors into clear 4xx API responses."""

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers, status
from rest_framework.exceptions import APIException
from rest_framework.views import exception_handler


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The upload is larger than the server accepts."
    default_code = "payload_too_large"


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The resource is not in a state that allows this change."
    default_code = "conflict"


class Gone(APIException):
    status_code = status.HTTP_410_GONE
    default_detail = "The resource is no longer available."
    default_code = "gone"


def api_exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        exc = serializers.ValidationError(detail)
    return exception_handler(exc, context)
