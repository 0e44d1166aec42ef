"""The OpenAPI document says what the server answers: a bad parameter is a 400 with a
`Problem` body (app.py's `_bad_request`), where FastAPI would describe its own 422."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from swell.web.models import Problem

BAD_REQUEST = {
    "description": "a parameter out of its bounds or of the wrong kind, named in `detail`",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
}
FASTAPI_ONLY = ("HTTPValidationError", "ValidationError")  # the 422's body, never sent


def with_400s(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each operation's 422 described as the 400 the server answers."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            if responses.pop("422", None) is not None:
                responses["400"] = BAD_REQUEST
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    for name in FASTAPI_ONLY:
        schemas.pop(name, None)
    schemas["Problem"] = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
    return schema


def describe_400s(app: FastAPI) -> None:
    """Make `app`'s OpenAPI document (built once, on the first ask) say 400, not 422."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = with_400s(build())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
