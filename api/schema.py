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
# cannot see: a PATCH must change something, and a deadline is given once.
ONE_DEADLINE = {"not": {"required": ["expires_in", "expires_at"]}}
CHANGES_SOMETHING = ("PatchedShareUpdateRequest", "PatchedWebhookEndpointUpdateRequest")


def declare_input_rules(result, generator, request, public):
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS)."""
    schemas = result.get("components", {}).get("schemas", {})
    for name, schema in schemas.items():
        properties = schema.get("properties", {})
        if "expires_in" in properties and "expires_at" in properties:
            schema |= ONE_DEADLINE
        if name in CHANGES_SOMETHING:
            schema["minProperties"] = 1
    return result
