"""TransactWriteItems, Query and Scan scenarios against in-process moto, their outcomes printed as JSON.

`python -m tests.integration.moto_scenarios stock|embedded|bench` runs them on stock moto; on moto with the
patches of the tests and the local server (serialized requests, item-level transaction rollback), transactions
only; or with the benchmark's key-ordering patch as well. The patches are process-wide, so each configuration runs
in a process of its own and `test_patched_moto` compares what they print: every outcome (success, or the error
with its message, cancellation reasons and returned items) and the content of every table, index and stream
afterwards; every page of every query and scan.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any, Final

CONFIGURATIONS: Final = ("stock", "embedded", "bench")
# The configurations that also run the queries and scans: only the benchmark's patch changes how moto orders keys.
QUERIED: Final = ("stock", "bench")
REGION: Final = "us-east-1"

# Transactions: a table with a sort key, an index and a stream; a table with a hash key only.
ITEMS: Final = "items"
PLAIN: Final = "plain"
# Key ordering: numeric sort keys, string sort keys, a hash key only; each with an index.
NUMBERS: Final = "numbers"
STRINGS: Final = "strings"
HASH_ONLY: Final = "hash-only"
INDEX: Final = "by-group"

# Answers that carry the time they were made (a table's creation): not compared byte for byte.
TIMED: Final = frozenset({"CreateTable", "DescribeTable", "UpdateTable", "DescribeTimeToLive", "UpdateTimeToLive"})

Outcome = dict[str, Any]


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int | str) -> dict[str, str]:
    return {"N": str(value)}


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": _s(pk), "sk": _s(sk)}


def _json_default(value: object) -> object:
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    raise TypeError(f"cannot serialize {type(value).__name__}")


def _canonical(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items in a stable order, string and number sets sorted (DynamoDB returns sets in no particular order)."""

    def normal(value: Any) -> Any:
        if isinstance(value, dict):
            return {name: sorted(inner) if name in ("SS", "NS") else normal(inner) for name, inner in value.items()}
        if isinstance(value, list):
            return [normal(inner) for inner in value]
        return value

    return sorted((normal(item) for item in items), key=lambda item: json.dumps(item, sort_keys=True))


def _create_tables(client: Any) -> None:
    client.create_table(
        TableName=ITEMS,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": kind}
            for name, kind in (("pk", "S"), ("sk", "S"), ("grp", "S"), ("rank", "N"))
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": INDEX,
                "KeySchema": [
                    {"AttributeName": "grp", "KeyType": "HASH"},
                    {"AttributeName": "rank", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    client.create_table(
        TableName=PLAIN,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
    )
    for name, sort_type in ((NUMBERS, "N"), (STRINGS, "S")):
        client.create_table(
            TableName=name,
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": sort_type},
                {"AttributeName": "grp", "AttributeType": "S"},
                {"AttributeName": "score", "AttributeType": "N"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": INDEX,
                    "KeySchema": [
                        {"AttributeName": "grp", "KeyType": "HASH"},
                        {"AttributeName": "score", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        )
    client.create_table(
        TableName=HASH_ONLY,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "id", "AttributeType": "N"},
            {"AttributeName": "grp", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": INDEX,
                "KeySchema": [{"AttributeName": "grp", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )


def _stream_records(streams: Any, arn: str, shard: str) -> list[dict[str, Any]]:
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    records = streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=1000)["Records"]
    return [
        {
            "event": record["eventName"],
            "keys": record["dynamodb"]["Keys"],
            "old": record["dynamodb"].get("OldImage"),
            "new": record["dynamodb"].get("NewImage"),
        }
        for record in records
    ]


def _snapshot(client: Any, streams: Any, arn: str, shard: str) -> dict[str, Any]:
    """Everything a transaction could have changed: both tables, the index and the stream."""
    by_group = client.query(
        TableName=ITEMS,
        IndexName=INDEX,
        KeyConditionExpression="grp = :g",
        ExpressionAttributeValues={":g": _s("g")},
    )["Items"]
    return {
        ITEMS: _canonical(client.scan(TableName=ITEMS)["Items"]),
        PLAIN: _canonical(client.scan(TableName=PLAIN)["Items"]),
        INDEX: by_group,
        "stream": _stream_records(streams, arn, shard),
    }


def _put(table: str, item: dict[str, Any], condition: str | None = None, **extra: Any) -> dict[str, Any]:
    action: dict[str, Any] = {"TableName": table, "Item": item, **extra}
    if condition:
        action["ConditionExpression"] = condition
    return {"Put": action}


def _update(table: str, key: dict[str, Any], expression: str, **extra: Any) -> dict[str, Any]:
    return {"Update": {"TableName": table, "Key": key, "UpdateExpression": expression, **extra}}


def _delete(table: str, key: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"Delete": {"TableName": table, "Key": key, **extra}}


def _check(table: str, key: dict[str, Any], condition: str, **extra: Any) -> dict[str, Any]:
    return {"ConditionCheck": {"TableName": table, "Key": key, "ConditionExpression": condition, **extra}}


def _transactions() -> list[tuple[str, list[dict[str, Any]]]]:
    """Named transactions, run in this order: each sees what the committed ones before it wrote."""
    exists, missing = "attribute_exists(pk)", "attribute_not_exists(pk)"
    all_old, none = {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"}, {"ReturnValuesOnConditionCheckFailure": "NONE"}
    one = {":one": _n(1)}
    return (
        [
            (
                "commit: put, update of a new item, condition check on a missing item",
                [
                    _put(
                        ITEMS,
                        {**_key("a", "1"), "n": _n(1), "tags": {"SS": ["x"]}, "grp": _s("g"), "rank": _n(2)},
                        missing,
                    ),
                    _update(
                        ITEMS,
                        _key("a", "2"),
                        "SET grp = :g, #rank = :rank, n = if_not_exists(n, :zero) + :one",
                        ExpressionAttributeNames={"#rank": "rank"},
                        ExpressionAttributeValues={":g": _s("g"), ":rank": _n(1), ":zero": _n(0), **one},
                    ),
                    _put(PLAIN, {"id": _s("p1"), "v": _s("one"), "count": _n(10)}),
                    _check(PLAIN, {"id": _s("p2")}, "attribute_not_exists(id)"),
                ],
            ),
            (
                "commit: conditions on items an earlier transaction wrote, a delete",
                [
                    _check(
                        ITEMS,
                        _key("a", "1"),
                        "n = :one AND contains(tags, :x)",
                        ExpressionAttributeValues={**one, ":x": _s("x")},
                    ),
                    _update(
                        PLAIN,
                        {"id": _s("p1")},
                        "SET v = :two",
                        ConditionExpression="v = :v",
                        ExpressionAttributeValues={":two": _s("two"), ":v": _s("one")},
                    ),
                    _delete(ITEMS, _key("a", "2"), ConditionExpression=exists),
                    _put(ITEMS, {**_key("b", "1"), "grp": _s("g"), "rank": _n(-3), "note": _s("kept")}),
                ],
            ),
            (
                "commit: ADD to numbers and string sets, REMOVE, DELETE from a set, if_not_exists",
                [
                    _update(
                        ITEMS,
                        _key("a", "1"),
                        "ADD n :five, tags :more SET seen = if_not_exists(seen, :now), n2 = if_not_exists(n, :zero)",
                        ExpressionAttributeValues={
                            ":five": _n(5),
                            ":more": {"SS": ["y", "z"]},
                            ":now": _n(100),
                            ":zero": _n(0),
                        },
                    ),
                    _update(
                        PLAIN,
                        {"id": _s("p1")},
                        "REMOVE v ADD #count :minus",
                        ExpressionAttributeNames={"#count": "count"},
                        ExpressionAttributeValues={":minus": _n("-2.5")},
                    ),
                    _update(
                        ITEMS,
                        _key("c", "1"),
                        "ADD n :one, tags :x",
                        ExpressionAttributeValues={**one, ":x": {"SS": ["x"]}},
                    ),
                    _update(
                        ITEMS,
                        _key("b", "1"),
                        "DELETE tags :x SET #rank = #rank + :one",
                        ExpressionAttributeNames={"#rank": "rank"},
                        ExpressionAttributeValues={**one, ":x": {"SS": ["x"]}},
                    ),
                ],
            ),
            (
                "commit: if_not_exists keeps a value that exists, DELETE of every element removes a set",
                [
                    _update(
                        ITEMS,
                        _key("a", "1"),
                        "SET seen = if_not_exists(seen, :later) DELETE tags :all",
                        ExpressionAttributeValues={":later": _n(200), ":all": {"SS": ["x", "y", "z"]}},
                    ),
                    _update(ITEMS, _key("c", "1"), "ADD n :one", ExpressionAttributeValues=one),
                ],
            ),
        ]
        + [
            (f"cancel: {kind} fails its condition, returning {returned}", actions)
            for kind, returned, actions in _cancellations(all_old, none, missing)
        ]
        + [
            (
                "cancel: two failed conditions and a passing one",
                [
                    _put(ITEMS, {**_key("a", "1"), "n": _n(0)}, missing, **all_old),
                    _update(
                        PLAIN,
                        {"id": _s("p1")},
                        "SET v = :v",
                        ConditionExpression="attribute_exists(v)",
                        ExpressionAttributeValues={":v": _s("back")},
                    ),
                    _check(ITEMS, _key("b", "1"), exists),
                ],
            ),
            (
                "cancel: ALL_OLD on a missing item returns no item",
                [
                    _put(ITEMS, {**_key("new", "1"), "n": _n(1)}),
                    _check(ITEMS, _key("nobody", "1"), exists, **all_old),
                ],
            ),
            (
                "refused: ADD of a number to a string, after actions that write",
                [
                    _put(ITEMS, {**_key("new", "1"), "n": _n(1)}),
                    _update(PLAIN, {"id": _s("fresh")}, "SET v = :v", ExpressionAttributeValues={":v": _s("w")}),
                    _update(ITEMS, _key("b", "1"), "ADD note :one", ExpressionAttributeValues=one),
                ],
            ),
            (
                "refused: a condition on an item an earlier action of the same transaction writes",
                [
                    _put(PLAIN, {"id": _s("p3")}),
                    _put(ITEMS, {**_key("d", "1"), "n": _n(1)}),
                    _check(ITEMS, _key("d", "1"), "n = :one", ExpressionAttributeValues=one),
                ],
            ),
            (
                "refused: an update and a delete of one existing item",
                [
                    _update(ITEMS, _key("a", "1"), "ADD n :one", ExpressionAttributeValues=one),
                    _delete(ITEMS, _key("a", "1")),
                ],
            ),
            (
                "refused: an action on a table that does not exist",
                [
                    _put(ITEMS, {**_key("e", "1"), "n": _n(1)}),
                    _put("no-such-table", {"id": _s("x")}),
                ],
            ),
            (
                "commit: a condition on an item a refused transaction would have written",
                [
                    _check(ITEMS, _key("d", "1"), missing),
                    _check(ITEMS, _key("new", "1"), missing),
                    _check(PLAIN, {"id": _s("p3")}, "attribute_not_exists(id)"),
                    _delete(
                        ITEMS, _key("c", "1"), ConditionExpression="n = :two", ExpressionAttributeValues={":two": _n(2)}
                    ),
                ],
            ),
        ]
    )


def _cancellations(
    all_old: dict[str, str], none: dict[str, str], missing: str
) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """A failed condition on each kind of action, with ALL_OLD and NONE, after and before actions that write."""
    wrong = {"ConditionExpression": "n = :wrong", "ExpressionAttributeValues": {":wrong": _n(-1)}}
    writes = [
        _put(ITEMS, {**_key("new", "1"), "grp": _s("g"), "rank": _n(9)}),
        _update(ITEMS, _key("b", "1"), "SET note = :v REMOVE grp", ExpressionAttributeValues={":v": _s("changed")}),
        _delete(PLAIN, {"id": _s("p1")}),
    ]
    failing = {
        "Put": lambda returned: _put(ITEMS, {**_key("a", "1"), "n": _n(0)}, missing, **returned),
        "Update": lambda returned: _update(
            ITEMS,
            _key("a", "1"),
            "SET n = :zero",
            **{**wrong, "ExpressionAttributeValues": {":wrong": _n(-1), ":zero": _n(0)}},
            **returned,
        ),
        "Delete": lambda returned: _delete(ITEMS, _key("a", "1"), **wrong, **returned),
        "ConditionCheck": lambda returned: _check(
            ITEMS,
            _key("a", "1"),
            wrong["ConditionExpression"],
            ExpressionAttributeValues=wrong["ExpressionAttributeValues"],
            **returned,
        ),
    }
    cases = []
    for kind, make in failing.items():
        for name, returned in (("ALL_OLD", all_old), ("NONE", none)):
            cases.append((f"{kind} (last)", name, [*writes, make(returned)]))
            cases.append((f"{kind} (first)", name, [make(returned), *writes]))
    return cases


def _attempt(call: Callable[[], Any]) -> Outcome:
    from botocore.exceptions import ClientError

    try:
        call()
    except ClientError as error:
        response = error.response
        return {
            "error": response["Error"]["Code"],
            "message": response["Error"].get("Message"),
            "reasons": response.get("CancellationReasons"),
            "item": response.get("Item"),
        }
    return {"ok": True}


def run_transactions(client: Any, streams: Any) -> dict[str, Outcome]:
    """Each transaction's outcome, what the tables hold after it, and whether it changed anything."""
    arn = client.describe_table(TableName=ITEMS)["Table"]["LatestStreamArn"]
    (shard,) = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    outcomes = {}
    before = _snapshot(client, streams, arn, shard["ShardId"])
    for name, actions in _transactions():
        outcome = _attempt(lambda actions=actions: client.transact_write_items(TransactItems=actions))
        after = _snapshot(client, streams, arn, shard["ShardId"])
        outcomes[name] = {**outcome, "unchanged": before == after, "after": after}
        before = after
    return outcomes


def _fill_ordered_tables(client: Any) -> None:
    numbers = ["-10", "-1.5", "0", "0.25", "1", "2", "3.14159", "10", "100", "1E+20", "12345678901234567890123"]
    strings = ["10", "9", "A", "B", "a", "aa", "ab", "b", "z", "é", "ü", "中"]
    for pk in ("p", "q"):
        for position, sk in enumerate(numbers):
            item = {"pk": _s(pk), "sk": _n(sk)}
            if position % 4 != 3:  # a sparse index: some items have no group
                item |= {"grp": _s(f"g{position % 2}"), "score": _n(position % 3)}
            client.put_item(TableName=NUMBERS, Item=item)
        for position, sk in enumerate(strings):
            item = {"pk": _s(pk), "sk": _s(sk), "grp": _s(f"g{position % 2}"), "score": _n(-(position % 4))}
            client.put_item(TableName=STRINGS, Item=item)
    for position, number in enumerate(numbers):
        client.put_item(TableName=HASH_ONLY, Item={"id": _n(number), "grp": _s(f"g{position % 2}")})


def _pages(call: Callable[..., dict[str, Any]], **request: Any) -> list[dict[str, Any]]:
    """Every page of a query or scan, following LastEvaluatedKey from the first."""
    pages = []
    while True:
        page = call(**request)
        pages.append({name: page.get(name) for name in ("Items", "Count", "ScannedCount", "LastEvaluatedKey")})
        if "LastEvaluatedKey" not in page or len(pages) > 50:
            return pages
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _queries() -> list[tuple[str, dict[str, Any]]]:
    table_queries = [
        (NUMBERS, "pk = :p", {":p": _s("p")}),
        (NUMBERS, "pk = :p AND sk > :v", {":p": _s("q"), ":v": _n("0.5")}),
        (NUMBERS, "pk = :p AND sk BETWEEN :low AND :high", {":p": _s("p"), ":low": _n(-2), ":high": _n(100)}),
        (STRINGS, "pk = :p", {":p": _s("p")}),
        (STRINGS, "pk = :p AND begins_with(sk, :a)", {":p": _s("q"), ":a": _s("a")}),
        (STRINGS, "pk = :p AND sk >= :b", {":p": _s("p"), ":b": _s("B")}),
    ]
    index_queries = [
        (NUMBERS, "grp = :g", {":g": _s("g0")}),
        (NUMBERS, "grp = :g AND score >= :s", {":g": _s("g1"), ":s": _n(1)}),
        (STRINGS, "grp = :g", {":g": _s("g1")}),
        (STRINGS, "grp = :g AND score BETWEEN :low AND :high", {":g": _s("g0"), ":low": _n(-2), ":high": _n(0)}),
        (HASH_ONLY, "grp = :g", {":g": _s("g0")}),
    ]
    queries = []
    for index, specs in ((None, table_queries), (INDEX, index_queries)):
        for table, condition, values in specs:
            for forward in (True, False):
                for limit in (None, 1):
                    request: dict[str, Any] = {
                        "TableName": table,
                        "KeyConditionExpression": condition,
                        "ExpressionAttributeValues": values,
                        "ScanIndexForward": forward,
                    }
                    if index:
                        request["IndexName"] = index
                    if limit:
                        request["Limit"] = limit
                    queries.append((f"{table} {index or 'table'} {condition} forward={forward} limit={limit}", request))
    return queries


def run_queries(client: Any) -> dict[str, Any]:
    _fill_ordered_tables(client)
    outcomes: dict[str, Any] = {name: _pages(client.query, **request) for name, request in _queries()}
    for table in (NUMBERS, STRINGS, HASH_ONLY):
        for limit in (None, 3):
            request = {"TableName": table} | ({"Limit": limit} if limit else {})
            outcomes[f"scan {table} limit={limit}"] = _pages(client.scan, **request)
    return outcomes


def run_types(client: Any) -> dict[str, Any]:
    """An item holding every attribute type (nested, empty and binary ones too) written and read back by each
    call that answers items, for `fast_serialization`'s shortcut: the answers are compared byte for byte."""
    key = {"id": _s("types")}
    every = {
        **key,
        "s": _s("text é 中"),
        "n": _n("-1.5e3"),
        "b": {"B": b"\x00\xffbinary"},
        "empty_b": {"B": b""},
        "ss": {"SS": ["a", "b"]},
        "ns": {"NS": ["1", "2.5"]},
        "bs": {"BS": [b"\x01", b"\x02\x03"]},
        "null": {"NULL": True},
        "yes": {"BOOL": True},
        "no": {"BOOL": False},
        "m": {"M": {"inner": {"L": [_s("x"), {"M": {}}, {"L": []}, {"B": b"\x04"}]}, "flag": {"NULL": True}}},
        "empty_m": {"M": {}},
        "l": {"L": [_n(1), {"SS": ["z"]}, {"BOOL": False}]},
    }
    answers: dict[str, Any] = {"put": client.put_item(TableName=PLAIN, Item=every, ReturnValues="ALL_OLD")}
    answers["get"] = client.get_item(TableName=PLAIN, Key=key)["Item"]
    answers["update"] = client.update_item(
        TableName=PLAIN,
        Key=key,
        UpdateExpression="SET n = :n",
        ExpressionAttributeValues={":n": _n(2)},
        ReturnValues="ALL_NEW",
    )["Attributes"]
    answers["query"] = client.query(
        TableName=PLAIN, KeyConditionExpression="id = :id", ExpressionAttributeValues={":id": _s("types")}
    )["Items"]
    answers["batch"] = client.batch_get_item(RequestItems={PLAIN: {"Keys": [key]}})["Responses"][PLAIN]
    answers["delete"] = client.delete_item(TableName=PLAIN, Key=key, ReturnValues="ALL_OLD")["Attributes"]
    return answers


def _keep_body(bodies: list[str], http_response: Any, model: Any, **_: Any) -> None:
    """Each answer's body as moto wrote it (its digest), but for the table's own calls, which carry the time."""
    if model.name not in TIMED:
        bodies.append(f"{model.name} {hashlib.sha256(http_response.content).hexdigest()[:16]}")


def _apply(configuration: str) -> None:
    if configuration in ("embedded", "bench"):
        from dq.embedded_dynamodb import (
            fast_queries,
            fast_serialization,
            fast_transactions,
            idempotent_transactions,
            serialize_moto_requests,
            untracked_items,
        )

        serialize_moto_requests()
        fast_queries()
        fast_transactions()
        idempotent_transactions()
        untracked_items()
        fast_serialization()
    if configuration == "bench":
        from bench.backend import faster_key_ordering

        faster_key_ordering()


def main(configuration: str) -> None:
    if configuration not in CONFIGURATIONS:
        raise SystemExit(f"configuration must be one of {', '.join(CONFIGURATIONS)}")
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        os.environ[name] = value
    os.environ.pop("AWS_ENDPOINT_URL_DYNAMODB", None)
    import boto3
    from moto import mock_aws

    _apply(configuration)
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        # botocore sends calls naming a stream ARN to an account endpoint that moto does not route.
        streams = boto3.client(
            "dynamodbstreams", region_name=REGION, endpoint_url=f"https://streams.dynamodb.{REGION}.amazonaws.com"
        )
        _create_tables(client)
        bodies: list[str] = []
        client.meta.events.register("after-call.dynamodb", functools.partial(_keep_body, bodies))
        result: dict[str, Any] = {"transactions": run_transactions(client, streams), "bodies": {}}
        result["bodies"]["transactions"], bodies[:] = bodies[:], []
        if configuration in QUERIED:
            result["queries"] = run_queries(client)
            result["bodies"]["queries"], bodies[:] = bodies[:], []
        result["types"] = run_types(client)
        result["bodies"]["types"] = bodies
    json.dump(result, sys.stdout, default=_json_default, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "")
