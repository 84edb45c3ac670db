"""`GET /openapi.json`: the one OpenAPI document of every route of every function, served by the producer."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import Router

router = Router()


@router.get(
    "/openapi.json",
    operation_id="openapi",
    summary="This API's OpenAPI 3.1 document",
    tags=["Documentation"],
    responses={200: {"description": "OpenAPI 3.1 JSON"}, 500: {"description": "InternalError"}},
)
def get_openapi() -> dict[str, Any]:
    from .openapi import document

    return document()
