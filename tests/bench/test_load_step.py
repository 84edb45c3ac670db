"""The load step in short: against a DynamoDB that throttles, a queue with an automatic shard count grows under a
load one shard cannot carry, and every message stored is received."""

from __future__ import annotations

import pytest

from bench.backend import moto_backend
from bench.scenarios.load_step import Phase, run_steps
from bench.throttling import Limits, SimClock, Throttler


def test_an_automatic_queue_grows_under_a_load_step_and_loses_nothing() -> None:
    # At 1/1000 scale: 2,000 msg/s is 2 messages a simulated second against 1 WU/s per key; one shard carries
    # about 250 msg/s (four write units a message on its index key), so the step needs eight. The first growth
    # comes 5 to 11 simulated seconds into the step (the load reports are samples, few at this scale): a step of 8
    # seconds failed half its runs on a busy machine; at 16, 18 runs grew by 11 s at the latest.
    figures = run_steps((Phase("10 msg/s", 10, 1), Phase("2,000 msg/s", 2_000, 20, 200_000)), 1000, idle=False)
    verdict = figures["verdict"]
    assert figures["changes"][0][1] == 1
    assert figures["steps"][-1]["shards_at_end"] > 1, figures["changes"]
    assert verdict["throttled"] > 0, "the step must have met DynamoDB's limits"
    assert verdict["stored"] >= 10
    assert verdict["lost"] == 0 and verdict["received"] == verdict["stored"]


def test_a_throttled_request_is_refused_unapplied_and_a_batch_keeps_its_refused_items() -> None:
    with moto_backend() as backend:
        client = backend.client
        client.create_table(
            TableName="throttled",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk")],
            BillingMode="PAY_PER_REQUEST",
        )
        clock = SimClock(1_000.0)
        throttler = Throttler(backend.meter, clock, Limits(key_write=3, key_read=30, table_write=100)).attach(client)
        stored = 0
        for number in range(5):
            try:
                client.put_item(TableName="throttled", Item={"pk": {"S": "hot"}, "sk": {"S": str(number)}})
                stored += 1
            except client.exceptions.ProvisionedThroughputExceededException as error:
                assert error.response["ThrottlingReasons"][0]["reason"] == "TableWriteKeyRangeThroughputExceeded"
        assert stored == 3
        assert (
            client.query(
                TableName="throttled", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "hot"}}
            )["Count"]
            == 3
        )
        clock.advance(1.0)
        writes = [{"PutRequest": {"Item": {"pk": {"S": "hot"}, "sk": {"S": f"b{n}"}}}} for n in range(5)]
        answer = client.batch_write_item(RequestItems={"throttled": writes})
        assert len(answer["UnprocessedItems"]["throttled"]) == 2
        with pytest.raises(client.exceptions.TransactionCanceledException) as cancelled:
            client.transact_write_items(
                TransactItems=[{"Put": {"TableName": "throttled", "Item": {"pk": {"S": "hot"}, "sk": {"S": "t"}}}}]
            )
        assert cancelled.value.response["CancellationReasons"][0]["Code"] == "ThrottlingError"
        assert throttler.stats.throttled >= 3
        throttler.detach()
