"""What the OpenAPI schema says beyond what drf-spectacular infers, so that a
generated client works unedited: every secured operation can answer 401 and
403, and every error answer has a body schema ({"detail": ...}, or a 400's
{"field": ["message", ...]})."""

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
            for status, response in responses.items():
                if status.startswith("4") and "content" not in response:
                    name = "ValidationError" if status == "400" else "Error"
                    response["content"] = {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}
    return result
