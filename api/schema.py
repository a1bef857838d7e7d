"""What the OpenAPI schema says beyond what drf-spectacular infers, so that a
generated client works unedited: every secured operation can answer 401 and
403, and every error answer has a body schema ({"detail": ...}, or a 400's
{"field": ["message", ...]}). A paginated list declares the 404 of a page
that does not exist and the 400 of a page size out of bounds."""

ERROR = {
    "type": "object",
    "properties": {"detail": {"type": "string", "description": "What went wrong, in words."}},
    "required": ["detail"],
}
VALIDATION_ERROR = {
    "type": "object",
    "description": "Each offending field (or non_field_errors, or detail) with its messages.",
    "additionalProperties": {
        "oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}],
    },
}
PAGE_ANSWERS = {
    "400": "A page_size that is not a whole number from 1 to the maximum.",
    "404": "A page that does not exist: below 1, or past the last.",
}
SECURED_ANSWERS = {
    "401": "No credentials, or a token or session that is not valid.",
    "403": "Authenticated, but not allowed (e.g. a session request without its CSRF token).",
}


def add_error_answers(result, generator, request, public):
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS)."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = ERROR
    schemas["ValidationError"] = VALIDATION_ERROR
    for path in result.get("paths", {}).values():
        for operation in path.values():
            responses = operation.setdefault("responses", {})
            if operation.get("security") != [] and any(operation.get("security", [{}])):
                for status, description in SECURED_ANSWERS.items():
                    responses.setdefault(status, {"description": description})
            if any(parameter.get("name") == "page" for parameter in operation.get("parameters", [])):
                for status, description in PAGE_ANSWERS.items():
                    responses.setdefault(status, {"description": description})
            for status, response in responses.items():
                if status.startswith("4") and "content" not in response:
                    name = "ValidationError" if status == "400" else "Error"
                    response["content"] = {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}
    return result


# Input rules the serializers enforce in validate(), which drf-spectacular
# cannot see: a PATCH must change something, a deadline is given once, a
# new share names its files one way (file or files: exactly one), each of
# them once, with a password that is not empty, and a wrapped secret only
# beside sealed metadata and a password; and a body with a field the
# serializer does not know is refused, not ignored.
ONE_DEADLINE = {"not": {"required": ["expires_in", "expires_at"]}}
CHANGES_SOMETHING = ("PatchedShareUpdateRequest", "PatchedWebhookEndpointUpdateRequest")
EXACTLY_ONE_OF = {"ShareCreateRequest": ("file", "files")}
# A field that needs others beside it (OpenAPI 3.0 has no dependentRequired).
NEEDS_BESIDE = {"ShareCreateRequest": {"wrapped_secret": ("sealed_metadata", "password")}}
REFUSES_UNKNOWN_FIELDS = (
    "ShareCreateRequest",
    "PatchedShareUpdateRequest",
    "ShareReactivateRequest",
    "PatchedWebhookEndpointUpdateRequest",
)
PROPERTY_RULES = {
    # A new link has no password to remove: an empty one is refused there.
    "ShareCreateRequest": {
        "files": {"uniqueItems": True},
        "password": {"minLength": 1, "description": "A password the link asks for (stored hashed, never shown)."},
        # 65 bytes in URL-safe base64, padded or not.
        "wrapped_secret": {"pattern": "^[A-Za-z0-9_-]{86}[AEIMQUYcgkosw048]=?$"},
    },
}


def declare_input_rules(result, generator, request, public):
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS)."""
    schemas = result.get("components", {}).get("schemas", {})
    for name, schema in schemas.items():
        properties = schema.get("properties", {})
        if "expires_in" in properties and "expires_at" in properties:
            schema |= ONE_DEADLINE
        if name in CHANGES_SOMETHING:
            schema["minProperties"] = 1
        if name in EXACTLY_ONE_OF:
            # Inside allOf: a generated client (openapi-python-client) reads a
            # top-level oneOf as a union of models, and keeps this one whole.
            schema["allOf"] = [{"oneOf": [{"required": [field]} for field in EXACTLY_ONE_OF[name]]}]
        for field, others in NEEDS_BESIDE.get(name, {}).items():
            schema.setdefault("allOf", []).append(
                {"anyOf": [{"not": {"required": [field]}}, {"required": [field, *others]}]}
            )
        if name in REFUSES_UNKNOWN_FIELDS:
            schema["additionalProperties"] = False
        for field, rules in PROPERTY_RULES.get(name, {}).items():
            properties[field] |= rules
    # A body that must name something cannot be left out either.
    for path in result.get("paths", {}).values():
        for operation in path.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            refs = [media.get("schema", {}).get("$ref", "") for media in (body or {}).get("content", {}).values()]
            if any(ref.rsplit("/", 1)[-1] in EXACTLY_ONE_OF for ref in refs):
                body["required"] = True
    return result
