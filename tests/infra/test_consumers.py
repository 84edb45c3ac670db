"""Push consumers in the synthesized template: the stream, one filtered event source mapping per consumer, the
dispatcher's grants, the sweeper's extra permission, alarms; cdk-nag and cfn-lint clean. The mapping's filter is
checked against sample stream records of the sub-queue and of its neighbours with an evaluator of EventBridge's
filter-pattern rules written here, independent of the code that builds the pattern."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from queue_core import QueueClient

from infra.consumers import CONSUMERS_CONTEXT, stream_filter
from tests.infra.synth import Synthesized, cfn_lint, synthesize

ACCOUNT = "123456789012"
ORDERS_FN = f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:orders-consumer"
FIFO_FN = f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:fifo-consumer"
CONSUMERS = [
    {"function_arn": ORDERS_FN, "queue": "orders", "client": "tenant-a", "function_timeout_seconds": 30},
    {
        "function_arn": FIFO_FN,
        "queue": "orders.fifo",
        "client": "tenant-b",
        "function_timeout_seconds": 60,
        "batch_size": 10,
        "max_concurrency": 4,
        "visibility_timeout_seconds": 120,
    },
]


@pytest.fixture(scope="module")
def pushed(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("push.out"), **{CONSUMERS_CONTEXT: json.dumps(CONSUMERS)})


def _statements(synthesized: Synthesized, function: Any) -> list[dict[str, Any]]:
    role_id = synthesized.resource(function)["Properties"]["Role"]["Fn::GetAtt"][0]
    return [
        statement
        for policy in synthesized.of_type("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _actions(statement: dict[str, Any]) -> list[str]:
    return _listed(statement["Action"])


def test_the_table_streams_keys_only(pushed: Synthesized) -> None:
    (table,) = pushed.of_type("AWS::DynamoDB::Table").values()
    assert table["Properties"]["StreamSpecification"] == {"StreamViewType": "KEYS_ONLY"}


def test_one_filtered_mapping_per_consumer_wakes_the_dispatcher(pushed: Synthesized) -> None:
    mappings = list(pushed.of_type("AWS::Lambda::EventSourceMapping").values())
    dispatcher_id = pushed.logical_id(pushed.stack.queue.push.dispatcher)
    assert len(mappings) == 2
    patterns = []
    for mapping in mappings:
        properties = mapping["Properties"]
        assert properties["FunctionName"] == {"Ref": dispatcher_id}
        assert properties["EventSourceArn"]["Fn::GetAtt"][1] == "StreamArn"
        assert properties["StartingPosition"] == "LATEST"
        (criterion,) = properties["FilterCriteria"]["Filters"]
        patterns.append(json.loads(criterion["Pattern"]))
    assert patterns == [stream_filter("orders", "tenant-a"), stream_filter("orders.fifo", "tenant-b")]


def test_the_dispatcher_may_invoke_its_consumers_and_read_the_stream(pushed: Synthesized) -> None:
    statements = _statements(pushed, pushed.stack.queue.push.dispatcher)
    invoked = [s["Resource"] for s in statements if _actions(s) == ["lambda:InvokeFunction"]]
    assert sorted(resource for resources in invoked for resource in _listed(resources)) == sorted([ORDERS_FN, FIFO_FN])
    stream = next(s for s in statements if "dynamodb:GetRecords" in _actions(s))
    assert stream["Resource"]["Fn::GetAtt"][1] == "StreamArn"
    table = next(s for s in statements if "dynamodb:UpdateItem" in _actions(s))
    assert "dynamodb:Scan" not in _actions(table)
    environment = pushed.resource(pushed.stack.queue.push.dispatcher)["Properties"]["Environment"]["Variables"]
    specs = json.loads(environment["PUSH_CONSUMERS"])
    assert [(s["queue"], s["client"], s["visibility_timeout"]) for s in specs] == [
        ("orders", "tenant-a", 60),
        ("orders.fifo", "tenant-b", 120),
    ]


def test_the_sweeper_may_wake_the_dispatcher_and_nothing_else_new(pushed: Synthesized) -> None:
    statements = _statements(pushed, pushed.stack.queue.sweeper)
    invokes = [s for s in statements if "lambda:InvokeFunction" in _actions(s)]
    dispatcher_id = pushed.logical_id(pushed.stack.queue.push.dispatcher)
    assert [s["Resource"] for s in invokes] == [{"Fn::GetAtt": [dispatcher_id, "Arn"]}]
    environment = pushed.resource(pushed.stack.queue.sweeper)["Properties"]["Environment"]["Variables"]
    assert environment["DISPATCHER_FUNCTION"] == {"Fn::GetAtt": [dispatcher_id, "Arn"]}


def test_consumer_functions_get_nothing_on_the_table(pushed: Synthesized) -> None:
    for policy in pushed.of_type("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            assert statement.get("Resource") not in (ORDERS_FN, FIFO_FN) or _actions(statement) == [
                "lambda:InvokeFunction"
            ]


def test_each_consumer_has_alarms_on_the_dashboard(pushed: Synthesized) -> None:
    alarms = {alarm.node.id for alarm in pushed.stack.queue.monitoring.alarms}
    assert {"DispatcherErrors", "Push0MovedToDlq", "Push0OldestAtDispatch", "Push1MovedToDlq"} <= alarms
    (dashboard,) = pushed.of_type("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    assert "Push orders/tenant-a: alarms" in body and "PushDelivered" in body


def test_cdk_nag_and_cfn_lint_are_clean(pushed: Synthesized) -> None:
    for report in pushed.validation_report()["pluginReports"]:
        assert report["conclusion"] == "success" and report["violations"] == []
    assert cfn_lint(pushed) == ""


def test_a_visibility_timeout_shorter_than_the_function_timeout_is_refused(pushed: Synthesized) -> None:
    stack = pushed.stack
    consumer = lambda_.Function.from_function_arn(stack, "Short", ORDERS_FN + "-2")
    with pytest.raises(ValueError, match=r"visibility_timeout \(30 s\) must cover .* at least 90 s"):
        stack.queue.add_consumer(
            consumer,
            queue="other",
            client="c",
            function_timeout=cdk.Duration.seconds(60),
            visibility_timeout=cdk.Duration.seconds(30),
        )
    with pytest.raises(ValueError, match="already has a push consumer"):
        stack.queue.add_consumer(consumer, queue="orders", client="tenant-a", function_timeout=cdk.Duration.seconds(1))
    with pytest.raises(ValueError, match="pass function_timeout"):
        stack.queue.add_consumer(consumer, queue="other", client="c")


# An evaluator of the filter rules the pattern uses, after Lambda's "Control which events Lambda sends to your
# function": a pattern object matches an event when every key matches; a list of values matches when any of its
# entries matches the event's value (an exact value, or {"prefix": …}); a nested object recurses.
def matches(pattern: Any, event: Any) -> bool:
    if isinstance(pattern, dict):
        return isinstance(event, dict) and all(
            key in event and matches(rule, event[key]) for key, rule in pattern.items()
        )
    assert isinstance(pattern, list)
    for entry in pattern:
        if isinstance(entry, dict):
            (operator, operand) = next(iter(entry.items()))
            assert operator == "prefix", operator
            if isinstance(event, str) and event.startswith(operand):
                return True
        elif entry == event:
            return True
    return False


def _stream_record(event_name: str, pk: str, sk: str = "0001") -> dict[str, Any]:
    return {
        "eventID": "1",
        "eventName": event_name,
        "eventSource": "aws:dynamodb",
        "dynamodb": {"Keys": {"pk": {"S": pk}, "sk": {"S": sk}}, "StreamViewType": "KEYS_ONLY"},
    }


def _written_keys(queue: str, client: str, fifo: bool) -> list[str]:
    """The partition keys a real send writes, read from a table: the pattern is checked against the core's
    own layout, whatever its generation."""
    from moto import mock_aws

    with mock_aws():
        core = QueueClient("keys", clock=lambda: 1_800_000_000.0)
        core.create_table()
        core.create_queue(queue, fifo=fifo)
        core.queue(queue, client).send("x", **({"group_id": "g", "dedup_id": "d"} if fifo else {}))
        items = core.dynamodb.scan(TableName="keys")["Items"]
    return [item["pk"]["S"] for item in items]


def test_the_filter_lets_through_only_inserts_into_the_sub_queues_messages() -> None:
    pattern = stream_filter("orders", "tenant-a")
    own = [pk for pk in _written_keys("orders", "tenant-a", fifo=False) if pk.startswith("M#")]
    fifo_pattern = stream_filter("o.fifo", "tenant-a")
    fifo_keys = _written_keys("o.fifo", "tenant-a", fifo=True)
    assert own and all(matches(pattern, _stream_record("INSERT", pk)) for pk in own)
    assert matches(fifo_pattern, _stream_record("INSERT", next(pk for pk in fifo_keys if pk.startswith("G#"))))
    # The group item (F#), dedup (X#) and registration (C#) of the FIFO send wake nothing.
    assert not any(matches(fifo_pattern, _stream_record("INSERT", pk)) for pk in fifo_keys if not pk.startswith("G#"))
    neighbours = [
        "M#orders#tenant-ab#0a1b2c3d#0",
        "M#orders#tenant#0a1b2c3d#0",
        "M#orders2#tenant-a#0a1b2c3d#0",
        "M#order#tenant-a#0a1b2c3d#0",
        "D#orders#tenant-a#0a1b2c3d#0",
        "X#orders#tenant-a#0a1b2c3d#3",
        "C#orders#tenant-a",
        "P#orders#tenant-a",
        "Q#orders",
    ]
    assert not any(matches(pattern, _stream_record("INSERT", pk)) for pk in neighbours)
    assert matches(pattern, _stream_record("INSERT", "M#orders#tenant-a#ffffffff#7"))  # a later generation
    assert not matches(pattern, _stream_record("MODIFY", own[0]))
    assert not matches(pattern, _stream_record("REMOVE", own[0]))


def test_a_function_of_the_stack_gives_its_timeout_to_the_consumer(pushed: Synthesized) -> None:
    stack = pushed.stack
    function = lambda_.Function(
        stack,
        "RealConsumer",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
        timeout=cdk.Duration.seconds(45),
    )
    with pytest.raises(ValueError, match=r"visibility_timeout \(30 s\) must cover .* timeout \(45 s\)"):
        stack.queue.add_consumer(function, queue="real", client="c", visibility_timeout=cdk.Duration.seconds(30))
    consumer = stack.queue.add_consumer(function, queue="real", client="c")
    assert (consumer.spec.timeout_seconds, consumer.spec.visibility_timeout) == (45, 75)


def test_a_batching_window_needs_a_visibility_that_outlasts_it_and_the_invocation(pushed: Synthesized) -> None:
    stack = pushed.stack
    function = lambda_.Function.from_function_arn(stack, "Windowed", ORDERS_FN + "-windowed")
    windowed = {"function_timeout": cdk.Duration.seconds(30), "max_batching_window": cdk.Duration.seconds(120)}
    with pytest.raises(
        ValueError,
        match=r"visibility_timeout \(60 s\) must cover the batching window \(120 s\), the consumer's timeout "
        r"\(30 s\) and 30 s for the invoke and the settling: at least 180 s",
    ):
        stack.queue.add_consumer(
            function, queue="windowed", client="c", visibility_timeout=cdk.Duration.seconds(60), **windowed
        )
    consumer = stack.queue.add_consumer(function, queue="windowed", client="c", batch_size=100, **windowed)
    assert consumer.spec.visibility_timeout == 180
