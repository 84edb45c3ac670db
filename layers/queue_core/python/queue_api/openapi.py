"""The OpenAPI document of the whole HTTP API, generated from the routes and models of every function.

Each function serves only its own routes, so the document comes from a resolver that registers all of them.
Powertools documents its own 422 and response-validation shapes; this API answers every error as
`{"error": {"code", "message"}}` with 400 for validation, so those are replaced by the real ones.

Regenerate the committed copy with `make openapi` (`python -m queue_api.openapi > docs/openapi.json`), which also
writes `SERVED`: the document as `GET /openapi.json` answers it, shipped in the layer so that a first answer to
that route reads one file instead of building every route's resolver and models (`queue_api.fast_routes`).
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Final

TITLE: Final = "DynamoQueue"
API_VERSION: Final = "1.0"
DESCRIPTION: Final = (
    "A message queue on Amazon DynamoDB with isolated (queue, client) sub-queues, FIFO groups, visibility "
    "timeouts, a dead-letter queue, delay, deduplication, peek, get and cancel by id. Deployed behind API "
    "Gateway with IAM (SigV4) authorization; the same operations are Lambda invoke actions named by each "
    'operationId. Errors are always {"error": {"code", "message"}}.'
)
_POWERTOOLS_ERROR_SCHEMAS: Final = ("HTTPValidationError", "ValidationError", "ResponseValidationError")
# The answer's body of GET /openapi.json, generated (`python -m queue_api.openapi --served`); a test holds it equal to
# what the resolver writes.
SERVED: Final = Path(__file__).with_name("openapi.json")


def documentation_app() -> Any:
    """A resolver with every function's routes, built only to describe them."""
    from .operations import OPERATIONS
    from .resolver import build_resolver

    return build_resolver(OPERATIONS)


@functools.cache
def document() -> dict[str, Any]:
    schema = documentation_app().get_openapi_schema(title=TITLE, version=API_VERSION, description=DESCRIPTION)
    return _with_error_answers(schema.model_dump(mode="json", by_alias=True, exclude_none=True))


def _with_error_answers(document: dict[str, Any]) -> dict[str, Any]:
    error_schema = {"$ref": "#/components/schemas/ErrorAnswer"}
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            responses.pop("422", None)
            internal = responses.setdefault("500", {})
            internal["description"] = "InternalError"
            internal["content"] = {"application/json": {"schema": error_schema}}
    schemas = document.get("components", {}).get("schemas", {})
    for name in _POWERTOOLS_ERROR_SCHEMAS:
        schemas.pop(name, None)
    return document


def document_json() -> str:
    return json.dumps(document(), indent=2) + "\n"


def served_json() -> str:
    """The document as the resolver writes it in its answer: compact JSON."""
    return json.dumps(document(), separators=(",", ":"))


def main() -> None:
    """The committed document (indented), or with `--served` the answer's body as `SERVED` holds it."""
    sys.stdout.write(served_json() + "\n" if "--served" in sys.argv[1:] else document_json())


if __name__ == "__main__":
    main()
