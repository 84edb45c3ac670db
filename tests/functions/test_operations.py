"""The one list of operations: each entry names a handler and models that exist, and the functions serve exactly
what it lists."""

from __future__ import annotations

import inspect

import pytest
from queue_api import schemas
from queue_api.invoke import actions_for
from queue_api.operations import FUNCTIONS, OPERATIONS, ROUTES, Operation, of_function, scheduled_action
from queue_api.resolver import resolver_for


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda operation: operation.name)
def test_each_operation_names_a_handler_of_its_function_and_models_of_the_schemas(operation: Operation) -> None:
    handler = operation.handler()
    assert handler.__module__ == f"queue_api.{operation.function}"
    assert len(inspect.signature(handler).parameters) == (3 if operation.uses_context else 2)
    assert operation.request_type() is getattr(schemas, operation.request)
    assert operation.answer_type() is getattr(schemas, operation.answer)
    assert operation.path_parameters in schemas.ADDRESSES


def test_operation_names_and_routes_are_unique() -> None:
    assert len({operation.name for operation in OPERATIONS}) == len(OPERATIONS)
    assert len({(route.method, route.path) for route in ROUTES}) == len(ROUTES)
    assert all(operation.function in FUNCTIONS for operation in OPERATIONS)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_a_function_takes_the_actions_and_serves_the_routes_it_is_listed_for(function: str) -> None:
    listed = of_function(function)
    assert set(actions_for(function)) == {operation.name for operation in listed if operation.invocable}
    resolver = resolver_for(function)
    routes = {(route.method, route.path) for route in listed if route.path is not None}
    if resolver is None:
        assert not routes
    else:
        served = resolver.get_openapi_schema().paths or {}
        documented = {
            (method.upper(), path) for path, item in served.items() for method in item.model_dump(exclude_none=True)
        }
        assert documented == routes


def test_only_the_sweeper_has_a_scheduled_action() -> None:
    assert {function: scheduled_action(function) for function in FUNCTIONS} == {
        "producer": None,
        "poller": None,
        "dlq_redriver": None,
        "visibility_sweeper": "sweep",
    }
