"""The local server's DynamoDB (`dq.embedded_dynamodb.EmbeddedDynamoDB`) backs a transaction up by the items it
names, never by a copy of the whole table, and still leaves a cancelled transaction's items as they were.

Run in a process of its own: the tests' in-process moto applies the same patch to the whole process, which would
hide a server started without it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, os
os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
import boto3
from moto.dynamodb.models.table import Table
from dq.embedded_dynamodb import EmbeddedDynamoDB

copied = []
real = getattr(Table, "__deepcopy__", None)

def recorded(self, memo):
    copied.append(self.name)
    if real is not None:
        return real(self, memo)
    clone = Table.__new__(Table)
    memo[id(self)] = clone
    import copy
    clone.__dict__.update(copy.deepcopy(self.__dict__, memo))
    return clone

Table.__deepcopy__ = recorded
with EmbeddedDynamoDB() as server:
    ddb = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=server.endpoint_url)
    ddb.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for n in range(20):
        ddb.put_item(TableName="t", Item={"pk": {"S": f"k{n}"}, "v": {"N": "0"}})
    put = {"Put": {"TableName": "t", "Item": {"pk": {"S": "k0"}, "v": {"N": "1"}}}}
    ddb.transact_write_items(TransactItems=[put])
    failing = {"ConditionCheck": {"TableName": "t", "Key": {"pk": {"S": "k2"}}, "ConditionExpression": "v = :one",
               "ExpressionAttributeValues": {":one": {"N": "1"}}}}
    changed = {"Put": {"TableName": "t", "Item": {"pk": {"S": "k1"}, "v": {"N": "9"}}}}
    try:
        ddb.transact_write_items(TransactItems=[changed, failing])
        cancelled = False
    except ddb.exceptions.TransactionCanceledException:
        cancelled = True
    values = {n: ddb.get_item(TableName="t", Key={"pk": {"S": f"k{n}"}})["Item"]["v"]["N"] for n in (0, 1)}
print(json.dumps({"copied": copied, "cancelled": cancelled, "values": values}))
"""


def test_a_transaction_on_the_local_servers_dynamodb_copies_no_table_and_a_cancelled_one_changes_nothing() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["copied"] == []
    assert outcome["cancelled"] is True
    assert outcome["values"] == {"0": "1", "1": "0"}
