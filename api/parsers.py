"""The request bodies the API reads: JSON, forms, and multipart forms.

A JSON document sent as a form (what `curl -d '{...}'` does without
`-H "Content-Type: application/json"`) parses as one form field named after
the whole body, and the serializers' "this field does not exist" then names
that body: the client is never told to send JSON. Such a body is refused
here instead, with a 415 saying which content type to send.
"""

from rest_framework import parsers
from rest_framework.exceptions import UnsupportedMediaType


def accepted_types(parser_classes) -> str:
    return ", ".join(parser.media_type for parser in parser_classes)


class FormParser(parsers.FormParser):
    """DRF's form parser, refusing a body that is a JSON document."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        keys = list(data.keys())
        if len(keys) == 1 and not data.get(keys[0]) and keys[0].lstrip()[:1] in ("{", "["):
            raise UnsupportedMediaType(
                media_type,
                detail=(
                    "The body is JSON sent as a form (application/x-www-form-urlencoded); "
                    "send it with Content-Type: application/json."
                ),
            )
        return data
