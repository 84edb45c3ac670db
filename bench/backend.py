"""The DynamoDB every figure is measured against: moto in this process, one request at a time.

moto applies concurrent requests without a lock, so racing conditional writes could both succeed and a query
beside writes could fail; DynamoDB applies each request atomically. The benchmarks therefore serialize moto's
request handling (threads still interleave between requests, as they do against the service) and replace moto's
whole-table backup in transactions with an item-level one, so a transaction costs time in proportion to its items.
Wall-clock figures are moto's and only their ratios mean anything; counts and units are the point.

moto also compares key values through objects that re-derive their Python value on every comparison, and sorts
the whole table for every query: a query over 20,000 items took it over a second. `faster_key_ordering` makes
those comparisons and sorts use the Python values directly, in the same order, so that the backlogs of the
benchmarks fit in minutes. moto still reads and sorts the whole table per query; nothing else changes. Like the
patches of `dq.embedded_dynamodb`, it refuses to load on a moto version it was not written for.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from .meter import Meter

REGION: Final = "us-east-1"
# An explicit AWS endpoint: moto intercepts it, and an AWS_ENDPOINT_URL_DYNAMODB in the environment (the local
# server's) can never send benchmark traffic elsewhere.
ENDPOINT: Final = f"https://dynamodb.{REGION}.amazonaws.com"


@dataclass
class Backend:
    client: Any
    meter: Meter
    name: str


def _fake_credentials() -> None:
    for name, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench")):
        os.environ.setdefault(name, value)
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)


def new_client() -> Any:
    """A client with the retries and connection pool a Lambda function of the core would have."""
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=64)
    return boto3.client("dynamodb", region_name=REGION, endpoint_url=ENDPOINT, config=config)


_SCALARS: Final = frozenset({"S", "N", "B"})
# The moto versions whose DynamoType and Table `faster_key_ordering` was read against.
KEY_ORDERING_MOTO_VERSIONS: Final = frozenset({"5.2.5"})


def _native(value: Any) -> Any:
    """The Python value moto's `DynamoType.cast_value` gives, computed once per comparison key."""
    if value.type == "N":
        return Decimal(value.value)
    if value.type in _SCALARS:
        return value.value
    return value.cast_value


def faster_key_ordering() -> None:
    """Idempotent: scalar comparisons and moto's table and index sorts by Python values (same order)."""
    from dq.embedded_dynamodb import require_moto_version

    require_moto_version("faster_key_ordering", KEY_ORDERING_MOTO_VERSIONS)
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    if getattr(DynamoType, "_native_ordering", False):
        return
    original_eq, original_lt = DynamoType.__eq__, DynamoType.__lt__

    def same_scalar(left: Any, right: Any) -> bool:
        return type(right) is DynamoType and left.type == right.type and left.type in _SCALARS

    def eq(self: Any, other: Any) -> bool:
        return _native(self) == _native(other) if same_scalar(self, other) else original_eq(self, other)

    def ne(self: Any, other: Any) -> bool:
        return not eq(self, other)

    def lt(self: Any, other: Any) -> bool:
        return _native(self) < _native(other) if same_scalar(self, other) else original_lt(self, other)

    def hash_(self: Any) -> int:
        return hash((self.type, _native(self)))

    def all_items(self: Any) -> list[Any]:
        if self.range_key_attr:
            items = [item for hash_set in self.items.values() for item in hash_set.values()]
            return sorted(items, key=lambda item: (_native(item.hash_key), _native(item.range_key)))
        return sorted(self.items.values(), key=lambda item: _native(item.hash_key))

    def sorted_items(self: Any, hash_key_attrs: list[str], range_key_attrs: list[str | None], items: list) -> list:
        names = self._generate_attr_to_sort_by(hash_key_attrs, range_key_attrs)
        items.sort(key=lambda item: tuple(_native(item.attrs[name]) for name in names))
        return items

    DynamoType.__eq__, DynamoType.__ne__, DynamoType.__lt__ = eq, ne, lt  # type: ignore[method-assign,assignment]
    DynamoType.__hash__ = hash_  # type: ignore[method-assign,assignment]
    Table.all_items, Table.sorted_items = all_items, sorted_items  # type: ignore[method-assign]
    DynamoType._native_ordering = True  # type: ignore[attr-defined]


@contextmanager
def moto_backend() -> Iterator[Backend]:
    """A fresh, empty in-process moto with a metered client; everything is gone when the block ends."""
    import moto
    from moto import mock_aws

    from dq.embedded_dynamodb import fast_queries, fast_serialization, fast_transactions, serialize_moto_requests

    _fake_credentials()
    serialize_moto_requests()
    fast_queries()
    fast_transactions()
    fast_serialization()  # the same answers, byte for byte (tests/integration/test_patched_moto.py), built faster
    faster_key_ordering()
    with mock_aws():
        client = new_client()
        meter = Meter().attach(client)
        yield Backend(client=client, meter=meter, name=f"moto {moto.__version__} in-process, serialized")
        meter.detach(client)
