"""Applies an `UpdateExpression` to an item the meter already knows.

An update whose caller asks for no new image (`ReturnValues` NONE, or any update inside a transaction) still
decides which index entries change and how big the item becomes; the meter learns both by replaying the expression
on its copy of the item. Top-level attributes with `=`, `+`, `-`, `if_not_exists` and `list_append`, `REMOVE`,
`ADD` and `DELETE` are modelled: every form the queue core and the baselines use. Anything else raises
`Unsupported`, and the meter keeps the old image (an approximation it documents).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from .sizes import Item

_CLAUSE = re.compile(r"(?<![\w:#])(SET|REMOVE|ADD|DELETE)(?![\w])", re.IGNORECASE)
_FUNCTION = re.compile(r"^(if_not_exists|list_append)\s*\((.*)\)$", re.IGNORECASE | re.DOTALL)


class Unsupported(ValueError):
    """The expression uses a form the meter does not model."""


def apply_update(item: Item | None, expression: str, names: dict[str, str], values: Item) -> Item:
    """The item after the update (a new dict; `item` is left as it was)."""
    result: Item = dict(item or {})
    parts = _CLAUSE.split(expression)
    if parts[0].strip():
        raise Unsupported(expression)
    for keyword, body in zip(parts[1::2], parts[2::2], strict=True):
        for action in _split(body):
            _apply(result, keyword.upper(), action, names, values)
    return result


def _split(text: str) -> list[str]:
    """Comma-separated actions, ignoring commas inside function calls."""
    actions, depth, current = [], 0, []
    for char in text:
        if char == "," and depth == 0:
            actions.append("".join(current).strip())
            current = []
            continue
        depth += (char == "(") - (char == ")")
        current.append(char)
    if "".join(current).strip():
        actions.append("".join(current).strip())
    return actions


def _name(path: str, names: dict[str, str]) -> str:
    path = path.strip()
    if any(mark in path for mark in ".[]"):
        raise Unsupported(path)
    return names.get(path, path) if path.startswith("#") else path


def _apply(item: Item, keyword: str, action: str, names: dict[str, str], values: Item) -> None:
    if keyword == "REMOVE":
        item.pop(_name(action, names), None)
        return
    if keyword == "SET":
        path, _, operand = action.partition("=")
        item[_name(path, names)] = _evaluate(item, operand.strip(), names, values)
        return
    path, _, operand = action.strip().partition(" ")
    name, value = _name(path, names), _operand(item, operand.strip(), names, values)
    old = item.get(name)
    if keyword == "ADD" and "N" in value:
        start = Decimal(old["N"]) if old else Decimal(0)
        item[name] = {"N": _number(start + Decimal(value["N"]))}
    elif keyword == "ADD":
        ((kind, members),) = value.items()
        item[name] = {kind: sorted(set(members) | set(old[kind] if old else []))}
    elif old is not None:
        ((kind, members),) = value.items()
        left = sorted(set(old[kind]) - set(members))
        if left:
            item[name] = {kind: left}
        else:
            item.pop(name)


def _evaluate(item: Item, operand: str, names: dict[str, str], values: Item) -> dict[str, Any]:
    depth = 0
    for position, char in enumerate(operand):
        depth += (char == "(") - (char == ")")
        if depth == 0 and char in "+-" and position > 0:
            left = _operand(item, operand[:position].strip(), names, values)
            right = _operand(item, operand[position + 1 :].strip(), names, values)
            sign = 1 if char == "+" else -1
            return {"N": _number(Decimal(left["N"]) + sign * Decimal(right["N"]))}
    return _operand(item, operand, names, values)


def _operand(item: Item, operand: str, names: dict[str, str], values: Item) -> dict[str, Any]:
    if operand.startswith(":"):
        return values[operand]
    call = _FUNCTION.match(operand)
    if call:
        function, arguments = call.group(1).lower(), _split(call.group(2))
        if function == "if_not_exists":
            current = item.get(_name(arguments[0], names))
            return current if current is not None else _operand(item, arguments[1], names, values)
        first, second = (_operand(item, argument, names, values) for argument in arguments)
        return {"L": [*first["L"], *second["L"]]}
    current = item.get(_name(operand, names))
    if current is None:
        raise Unsupported(f"{operand} is not set")
    return current


def _number(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text if text != "-0" else "0"
