"""The OpenAPI document: generated from the handlers, committed, complete, and in step with the route table."""

from __future__ import annotations

import json
from pathlib import Path

from queue_api.invoke import actions_for
from queue_api.openapi import SERVED, document, document_json, served_json

from dq.routes import ROUTES

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def operations() -> dict[tuple[str, str], dict]:
    return {
        (method.upper(), path): operation
        for path, methods in document()["paths"].items()
        for method, operation in methods.items()
    }


def test_the_committed_document_is_current() -> None:
    assert COMMITTED.read_text() == document_json(), (
        "docs/openapi.json is stale: regenerate it with `make openapi` "
        "(python -m queue_api.openapi > docs/openapi.json)"
    )


def test_the_served_document_is_current() -> None:
    """GET /openapi.json answers this file (`queue_api.fast_routes`): it must be what the resolver writes."""
    assert SERVED.read_text(encoding="utf-8") == served_json() + "\n", (
        "layers/queue_core/python/queue_api/openapi.json is stale: regenerate it with `make openapi`"
    )


def test_it_documents_exactly_the_routes_the_local_server_and_the_api_serve() -> None:
    assert set(operations()) == {(route.method, route.resource) for route in ROUTES}


def test_each_operation_id_is_the_invoke_action_of_the_function_that_serves_it() -> None:
    for route in ROUTES:
        operation_id = operations()[(route.method, route.resource)]["operationId"]
        if route.resource != "/openapi.json":
            assert operation_id in actions_for(route.function), (route, operation_id)


def test_errors_are_documented_with_the_one_error_shape() -> None:
    text = json.dumps(document())
    assert '"422"' not in text and "HTTPValidationError" not in text
    for (method, path), operation in operations().items():
        assert "200" in operation["responses"], (method, path)
        for status, response in operation["responses"].items():
            if status.startswith(("4", "5")):
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorAnswer"}, (method, path, status)


def test_request_models_refuse_unknown_fields() -> None:
    schemas = document()["components"]["schemas"]
    for name, schema in schemas.items():
        if name.endswith("Request"):
            assert schema.get("additionalProperties") is False, name
