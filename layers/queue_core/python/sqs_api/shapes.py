"""Requests checked against botocore's own SQS service model: the shapes SQS's SDKs send.

The model is read once per process from botocore (part of every Lambda Python runtime, so the layer carries
nothing for it). A request's members are checked for their JSON types and required members before an action
sees them; unknown members are ignored, as SQS ignores them. Ranges and SQS's rules are the actions' own checks.
"""

from __future__ import annotations

import base64
import binascii
import functools
from typing import Any

from .errors import SqsError, invalid, missing


@functools.cache
def service_model() -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model("sqs")


def operation_names() -> list[str]:
    return list(service_model().operation_names)


def checked(action: str, params: Any) -> dict[str, Any]:
    """`params` if it fits the action's input shape; `MissingParameter` or `InvalidParameterValue` otherwise."""
    shape = service_model().operation_model(action).input_shape
    if shape is None:
        return {}
    _check(shape, params, "the request")
    return params


def _check(shape: Any, value: Any, where: str) -> None:
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            raise invalid(f"{where} must be an object")
        for name in shape.required_members:
            if value.get(name) is None:
                raise missing(name)
        for name, member in shape.members.items():
            if value.get(name) is not None:
                _check(member, value[name], name)
    elif kind == "list":
        if not isinstance(value, list):
            raise invalid(f"{where} must be a list")
        for item in value:
            _check(shape.member, item, where)
    elif kind == "map":
        if not isinstance(value, dict):
            raise invalid(f"{where} must be an object")
        for key, item in value.items():
            _check(shape.value, item, f"{where}.{key}")
    elif kind == "string":
        if not isinstance(value, str):
            raise invalid(f"{where} must be a string")
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise invalid(f"{where} must be an integer")
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise invalid(f"{where} must be true or false")
    elif kind == "blob":
        decoded_blob(value, where)


def decoded_blob(value: Any, where: str) -> bytes:
    """A blob travels as base64 text in JSON."""
    try:
        if not isinstance(value, str):
            raise TypeError
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (TypeError, UnicodeEncodeError, binascii.Error) as error:
        raise invalid(f"{where} must be base64 text") from error


def require(params: dict[str, Any], name: str) -> Any:
    value = params.get(name)
    if value is None:
        raise missing(name)
    return value


def integer(params: dict[str, Any], name: str, low: int, high: int, default: int | None = None) -> int | None:
    value = params.get(name)
    if value is None:
        return default
    if not low <= value <= high:
        raise invalid(f"Value {value} for parameter {name} is invalid. Reason: must be between {low} and {high}.")
    return int(value)


def unsupported(action: str) -> SqsError:
    return SqsError("UnsupportedOperation", f"{action} is not supported by this queue.")
