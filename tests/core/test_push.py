"""Push delivery: consumers written with Powertools get SQS events; what they fail comes back, what they finish
never does, poison reaches the DLQ, FIFO order holds, and a consumer's concurrency bound holds."""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.parser.models import SqsModel
from queue_core import QueueClient, ValidationError, keys
from queue_core.attribute_digest import md5_of_attributes
from queue_core.push import (
    CLAIM_MARGIN_SECONDS,
    MAX_PAYLOAD_BYTES,
    ConsumerSpec,
    Dispatcher,
    DispatchReport,
    InvokeAnswer,
    item_failures,
    split_for_payload,
    woken_sub_queues,
)
from queue_core.sqs_event import EventSource, payload_bytes, record

from dq.consumers import in_process_invoke
from tests import powertools_consumers as consumers
from tests.core.answers import LostAnswer, Refused, attached, expression_has, refused
from tests.throttle_hooks import request_body

SOURCE = EventSource("eu-west-1", "123456789012", "orders", "tenant-a")


@pytest.fixture(autouse=True)
def _fresh_log() -> None:
    consumers.HANDLED.clear()


def dispatcher(client: QueueClient, function=consumers.lambda_handler, sleep=time.sleep, **settings) -> Dispatcher:
    spec = ConsumerSpec(**{"queue": "orders", "client": "tenant-a", "function": "consumer", **settings})
    return Dispatcher(client, spec, in_process_invoke(function, "consumer", spec.timeout_seconds), SOURCE, sleep)


def run(dispatch: Dispatcher):
    return dispatch.run(lambda: 60.0)


def test_records_validate_against_powertools_sqs_model(client: QueueClient) -> None:
    client.create_queue("orders")
    queue = client.queue("orders", "tenant-a")
    queue.send("hello", attributes={"kind": "greeting"})
    received = queue.receive()[0]
    shaped = record(received, SOURCE, client.now_ms())
    SqsModel.model_validate({"Records": [shaped]})
    assert shaped["eventSource"] == "aws:sqs" and shaped["awsRegion"] == "eu-west-1"
    assert shaped["eventSourceARN"] == "arn:aws:sqs:eu-west-1:123456789012:orders:tenant-a"
    assert shaped["md5OfBody"] == "5d41402abc4b2a76b9719d911017c592"
    assert shaped["messageAttributes"] == {
        "kind": {"stringValue": "greeting", "stringListValues": [], "binaryListValues": [], "dataType": "String"}
    }
    assert shaped["md5OfMessageAttributes"]
    assert set(shaped["attributes"]) == {
        "ApproximateReceiveCount",
        "SentTimestamp",
        "SenderId",
        "ApproximateFirstReceiveTimestamp",
    }


def test_typed_attributes_keep_their_data_type_and_digest(client: QueueClient) -> None:
    client.create_queue("orders")
    queue = client.queue("orders", "tenant-a")
    attributes = {"count": "3", "blob": "AAEC", "note": "hi"}
    queue.send("body", attributes=attributes, attribute_types={"count": "Number", "blob": "Binary"})
    shaped = record(queue.receive()[0], SOURCE, client.now_ms())
    SqsModel.model_validate({"Records": [shaped]})
    assert shaped["messageAttributes"]["count"]["dataType"] == "Number"
    assert shaped["messageAttributes"]["count"]["stringValue"] == "3"
    assert shaped["messageAttributes"]["blob"] == {
        "binaryValue": "AAEC",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "Binary",
    }
    assert shaped["md5OfMessageAttributes"] == md5_of_attributes(attributes, {"count": "Number", "blob": "Binary"})


def test_fifo_records_carry_their_group_sequence_and_the_dedup_id_they_were_sent_with(client: QueueClient) -> None:
    client.create_queue("orders.fifo", fifo=True)
    client.create_queue("hashed.fifo", fifo=True, content_based_dedup=True)
    client.queue("orders.fifo", "tenant-a").send("explicit", group_id="g", dedup_id="order-17")
    client.queue("orders.fifo", "tenant-a").send("none given", group_id="g")
    client.queue("hashed.fifo", "tenant-a").send("hashed", group_id="g")
    explicit, none_given = client.queue("orders.fifo", "tenant-a").receive(max_messages=2)
    (hashed,) = client.queue("hashed.fifo", "tenant-a").receive()
    shaped = [record(message, SOURCE, client.now_ms()) for message in (explicit, none_given, hashed)]
    SqsModel.model_validate({"Records": shaped})
    assert [r["attributes"]["MessageDeduplicationId"] for r in shaped] == [
        "order-17",
        none_given.sqs_message_id,
        hashlib.sha256(b"hashed").hexdigest(),
    ]
    assert {r["attributes"]["MessageGroupId"] for r in shaped} == {"g"}
    assert [r["attributes"]["SequenceNumber"] for r in shaped] == [m.sequence for m in (explicit, none_given, hashed)]


def test_a_parser_consumer_gets_every_record(client: QueueClient) -> None:
    client.create_queue("orders.fifo", fifo=True)
    queue = client.queue("orders.fifo", "tenant-a")
    queue.send_batch([{"body": f"m{i}", "group_id": "g", "dedup_id": f"d{i}"} for i in range(3)])
    spec = ConsumerSpec(queue="orders.fifo", client="tenant-a", function="parsed")
    report = Dispatcher(client, spec, in_process_invoke(consumers.parsed_handler, "parsed", 30), SOURCE).run(
        lambda: 60.0
    )
    assert report.delivered == 3 and [body for body, _ in consumers.HANDLED] == ["m0", "m1", "m2"]


def test_partial_failures_come_back_and_successes_never_do(client: QueueClient, clock) -> None:
    client.create_queue("orders", max_receive_count=5)
    queue = client.queue("orders", "tenant-a")
    queue.send_batch([{"body": f"ok{i}"} for i in range(4)] + [{"body": "flaky-1"}, {"body": "flaky-2"}])
    first = run(dispatcher(client))
    assert first.delivered == 4 and first.failed == 2 and first.released == 2
    clock.advance(5)  # past the first backoff
    second = run(dispatcher(client))
    assert second.delivered == 2 and second.failed == 0
    bodies = [body for body, _ in consumers.HANDLED]
    assert sorted(bodies) == sorted([f"ok{i}" for i in range(4)] + ["flaky-1", "flaky-2"] * 2)
    assert queue.stats().visible + queue.stats().in_flight + queue.stats().delayed == 0


def test_poison_reaches_the_dlq_after_the_receive_limit(client: QueueClient, clock) -> None:
    client.create_queue("orders", max_receive_count=3)
    queue = client.queue("orders", "tenant-a")
    queue.send("fail-poison")
    queue.send("fine")
    moved = 0
    for _ in range(4):
        moved += run(dispatcher(client)).moved_to_dlq
        clock.advance(10)
    assert moved == 1
    assert [body for body, _ in consumers.HANDLED].count("fail-poison") == 3
    assert [m.body for m in queue.dlq_list()] == ["fail-poison"]
    assert queue.stats().visible == 0


def test_fifo_order_holds_across_failures(client: QueueClient, clock) -> None:
    client.create_queue("orders.fifo", fifo=True, max_receive_count=5)
    queue = client.queue("orders.fifo", "tenant-a")
    groups = {"a1": "a", "flaky-a2": "a", "a3": "a", "b1": "b", "b2": "b"}
    queue.send_batch([{"body": body, "group_id": group, "dedup_id": body} for body, group in groups.items()])
    spec = ConsumerSpec(queue="orders.fifo", client="tenant-a", function="fifo")
    dispatch = Dispatcher(client, spec, in_process_invoke(consumers.fifo_handler, "fifo", 30), SOURCE)
    first = dispatch.run(lambda: 60.0)
    assert first.failed >= 2  # flaky-a2, and a3 after it in its group
    for _ in range(3):
        clock.advance(10)
        dispatch.run(lambda: 60.0)
    finished = [body for body, receives in consumers.HANDLED if not (body.startswith("flaky") and receives == 1)]
    assert [body for body in finished if groups[body] == "a"] == ["a1", "flaky-a2", "a3"]
    assert [body for body in finished if groups[body] == "b"] == ["b1", "b2"]
    assert queue.stats().visible + queue.stats().delayed + queue.stats().in_flight == 0


def test_a_failed_fifo_message_releases_the_rest_of_its_group(client: QueueClient) -> None:
    client.create_queue("orders.fifo", fifo=True, max_receive_count=5)
    queue = client.queue("orders.fifo", "tenant-a")
    queue.send_batch([{"body": b, "group_id": "g", "dedup_id": b} for b in ("g1", "fail-g2", "g3")])

    def answers_only_g2(event: dict, context) -> dict:
        failed = [r["messageId"] for r in event["Records"] if r["body"] == "fail-g2"]
        return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}

    spec = ConsumerSpec(queue="orders.fifo", client="tenant-a", function="f")
    report = Dispatcher(client, spec, in_process_invoke(answers_only_g2, "f", 30), SOURCE).run(lambda: 60.0)
    assert report.delivered == 1 and report.failed == 2  # g3 goes back with fail-g2, though reported done
    assert [m.body for m in queue.peek(10)] == [] and queue.stats().delayed + queue.stats().visible == 2


def test_a_timed_out_batch_comes_back_after_its_visibility_never_while_the_invocation_may_run(
    client: QueueClient, clock
) -> None:
    client.create_queue("orders", max_receive_count=5)
    queue = client.queue("orders", "tenant-a")
    queue.send_batch([{"body": "stuck"}, {"body": "quick"}])
    still_running = threading.Event()
    received: list[tuple[str, str]] = []

    def stuck(event: dict, context) -> None:
        """Runs past its timeout: the local invoke gives up on it, the call goes on in its thread."""
        still_running.wait(10)

    def quick(event: dict, context) -> None:
        received.extend((r["body"], r["attributes"]["ApproximateReceiveCount"]) for r in event["Records"])

    try:
        first = run(dispatcher(client, stuck, timeout_seconds=0.2, visibility_timeout=40))
        assert (first.delivered, first.failed, first.released, first.timed_out) == (0, 2, 0, 2)
        clock.advance(39)  # within the visibility the claim was extended to before the invocation
        assert run(dispatcher(client, quick, timeout_seconds=0.2, visibility_timeout=40)).batches == 0
        assert received == [] and queue.stats().in_flight == 2
    finally:
        still_running.set()
    clock.advance(2)
    again = run(dispatcher(client, quick, timeout_seconds=0.2, visibility_timeout=40))
    assert again.delivered == 2 and sorted(received) == [("quick", "2"), ("stuck", "2")]


@pytest.mark.parametrize(
    ("answer", "failed"),
    [
        (InvokeAnswer(payload=None), set()),
        (InvokeAnswer(payload="null"), set()),
        (InvokeAnswer(payload='{"batchItemFailures": []}'), set()),
        (InvokeAnswer(payload='{"batchItemFailures": null}'), set()),
        (InvokeAnswer(payload='{"batchItemFailures": [{"itemIdentifier": "a"}]}'), {"a"}),
        (InvokeAnswer(payload='{"batchItemFailures": [{"itemIdentifier": "zzz"}]}'), None),
        (InvokeAnswer(payload='{"batchItemFailures": [{"itemIdentifier": ""}]}'), None),
        (InvokeAnswer(payload='{"batchItemFailures": [{"id": "a"}]}'), None),
        (InvokeAnswer(payload='{"batchItemFailures": "a"}'), None),
        (InvokeAnswer(payload="not json"), None),
        (InvokeAnswer(payload='"ok"'), None),
        (InvokeAnswer(payload='{"batchItemFailures": []}', function_error="Unhandled"), None),
    ],
)
def test_answers_are_read_as_sqs_reads_them(answer: InvokeAnswer, failed: set[str] | None) -> None:
    assert item_failures(answer, {"a": "a", "b": "b"}) == failed


def test_a_malformed_answer_releases_the_whole_batch(client: QueueClient) -> None:
    client.create_queue("orders", max_receive_count=5)
    client.queue("orders", "tenant-a").send_batch([{"body": "x"}, {"body": "y"}])
    report = run(dispatcher(client, function=lambda event, context: {"batchItemFailures": "everything"}))
    assert report.delivered == 0 and report.failed == 2


def test_a_batch_over_the_payload_limit_is_split_in_order(client: QueueClient) -> None:
    client.create_queue("orders", max_receive_count=5)
    queue = client.queue("orders", "tenant-a")
    big = "x" * (250 * 1024)
    queue.send_batch([{"body": f"{i}{big}"} for i in range(10)])
    received = queue.receive(max_messages=10)
    if len(received) < 10:  # a receive may stop at a shard that gave fewer than asked
        received += queue.receive(max_messages=10 - len(received))
    now = client.now_ms()
    chunks = split_for_payload(received * 3, SOURCE, now)
    assert len(chunks) >= 2 and [m for chunk in chunks for m in chunk] == received * 3
    assert all(payload_bytes([record(m, SOURCE, now) for m in chunk]) <= MAX_PAYLOAD_BYTES for chunk in chunks)


def test_never_more_dispatchers_in_flight_than_max_concurrency(client: QueueClient) -> None:
    client.create_queue("orders", max_receive_count=5)
    queue = client.queue("orders", "tenant-a")
    queue.send_batch([{"body": f"m{i}"} for i in range(20)])
    queue.send_batch([{"body": f"n{i}"} for i in range(20)])
    running, most, lock = [0], [0], threading.Lock()

    def slow_record(record: SQSRecord) -> None:
        time.sleep(0.025)

    def consumer(event: dict, context) -> dict:
        """A Powertools consumer as its documentation writes one (a processor per invocation, as each Lambda
        environment has its own), that counts how many run at once."""
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            processor = BatchProcessor(event_type=EventType.SQS)
            return process_partial_response(
                event=event, record_handler=slow_record, processor=processor, context=context
            )
        finally:
            with lock:
                running[0] -= 1

    reports = []
    threads = [
        threading.Thread(
            target=lambda: reports.append(run(dispatcher(client, consumer, batch_size=2, max_concurrency=2)))
        )
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert most[0] <= 2
    assert sum(report.delivered for report in reports) == 40
    assert any(report.skipped for report in reports)


def test_a_slot_taken_with_its_answer_lost_is_still_held(client: QueueClient, dynamodb) -> None:
    client.create_queue("orders")
    lost = LostAnswer("PutItem", expression_has("lease_until"))
    with attached(dynamodb, lost):
        taken = client.take_consumer_slot("orders", "tenant-a", 1, 30)
    assert lost.lost == 1 and taken is not None
    assert client.take_consumer_slot("orders", "tenant-a", 1, 30) is None
    client.give_back_consumer_slot("orders", "tenant-a", *taken)
    assert client.take_consumer_slot("orders", "tenant-a", 1, 30) is not None


def test_consumer_settings_follow_sqs_rules() -> None:
    with pytest.raises(ValidationError, match=r"visibility_timeout \(59 s\) must cover .* at least 60 s"):
        ConsumerSpec(queue="q", client="c", function="f", visibility_timeout=59, timeout_seconds=30)
    with pytest.raises(ValidationError, match=r"batching window \(120 s\), the consumer's timeout \(30 s\)"):
        ConsumerSpec(queue="q", client="c", function="f", max_batching_window_seconds=120, visibility_timeout=60)
    assert ConsumerSpec(queue="q", client="c", function="f", max_batching_window_seconds=120, visibility_timeout=180)
    with pytest.raises(ValidationError, match="max_batching_window"):
        ConsumerSpec(queue="q", client="c", function="f", batch_size=100)
    for fifo in ({"batch_size": 11, "max_batching_window_seconds": 1}, {"max_batching_window_seconds": 1}):
        with pytest.raises(ValidationError, match="FIFO queue's consumer"):
            ConsumerSpec(queue="q.fifo", client="c", function="f", **fifo)
    assert ConsumerSpec(
        queue="q", client="c", function="f", batch_size=11, max_batching_window_seconds=1, visibility_timeout=61
    )


def test_stream_records_name_their_sub_queue() -> None:
    def insert(pk: str) -> dict:
        return {"eventName": "INSERT", "dynamodb": {"Keys": {"pk": {"S": pk}, "sk": {"S": "1"}}}}

    found = woken_sub_queues([insert("M#orders#tenant-a#ab12cd34#0"), insert("G#f.fifo#t#ab12#g"), insert("Q#x")])
    assert found == [("orders", "tenant-a"), ("f.fifo", "t")]


def _big_messages(queue, count: int) -> list[str]:
    """Bodies of 900 KB (stored compressed): seven of them pass Lambda's 6 MB, so a batch of seven is split."""
    """Their SQS ids: what the records' `messageId` is."""
    return [queue.send(f"{index}" + "x" * 900_000).sqs_message_id for index in range(count)]


def test_a_split_batch_is_delivered_once_while_a_second_dispatcher_runs_during_its_later_part(
    client: QueueClient, clock
) -> None:
    client.create_queue("orders", max_receive_count=5)
    queue = client.queue("orders", "tenant-a")
    ids = _big_messages(queue, 7)
    deliveries: list[str] = []
    invocations = [0]
    settings = {"batch_size": 7, "timeout_seconds": 30, "visibility_timeout": 60}
    second_runs = []

    def second_consumer(event: dict, context) -> None:
        deliveries.extend(r["messageId"] for r in event["Records"])

    def first_consumer(event: dict, context) -> None:
        """Works its whole 30 s timeout; the invoke answers a second later. Meanwhile (during the second part) the
        sweeper wakes a second dispatcher of the same consumer."""
        deliveries.extend(r["messageId"] for r in event["Records"])
        invocations[0] += 1
        clock.advance(31)
        if invocations[0] == 2:
            second_runs.append(dispatcher(client, second_consumer, **settings).run(lambda: 900.0))

    first = dispatcher(client, first_consumer, **settings).run(lambda: 900.0)

    assert first.invocations == 2, "the batch was not split"
    assert sorted(deliveries) == sorted(ids), f"{len(deliveries)} deliveries for {len(ids)} messages"
    assert first.delivered + sum(report.delivered for report in second_runs) == 7
    assert queue.stats().visible + queue.stats().in_flight + queue.stats().delayed == 0


def test_a_part_with_no_time_left_to_invoke_is_given_back_without_counting_a_receive(
    client: QueueClient, clock
) -> None:
    client.create_queue("orders", max_receive_count=5)
    queue = client.queue("orders", "tenant-a")
    _big_messages(queue, 7)
    deliveries: list[tuple[str, str]] = []
    deadline = clock.now + 60  # the dispatcher's own time: enough for one invocation of its consumer, not two

    def consumer(event: dict, context) -> None:
        deliveries.extend((r["messageId"], r["attributes"]["ApproximateReceiveCount"]) for r in event["Records"])
        clock.advance(30)

    settings = {"batch_size": 7, "timeout_seconds": 30, "visibility_timeout": 60}
    first = dispatcher(client, consumer, **settings).run(lambda: deadline - clock.now)
    assert (first.invocations, first.delivered, first.returned) == (1, 6, 1)
    assert queue.stats().visible == 1
    second = dispatcher(client, consumer, **settings).run(lambda: 60.0)
    assert second.delivered == 1 and deliveries[-1][1] == "1"  # its first delivery, though claimed twice


def test_a_receive_throttled_in_the_batching_window_still_delivers_what_the_window_claimed(
    client: QueueClient, clock
) -> None:
    """Messages claimed early in a window are not abandoned when a later receive of the window fails: they would
    come back with a receive counted that nobody saw (with a receive limit of 1, straight to the DLQ)."""
    client.create_queue("orders", max_receive_count=1)
    queue = client.queue("orders", "tenant-a")
    queue.send("first")
    throttled = Refused("Query", code="ThrottlingException", message="Rate exceeded")
    throttled.on = False
    deliveries: list[str] = []

    def sleep(seconds: float) -> None:
        clock.advance(seconds)
        throttled.on = throttled.refused == 0  # DynamoDB throttles the window's next receive, once

    def consumer(event: dict, context) -> None:
        throttled.on = False
        deliveries.extend(r["body"] for r in event["Records"])

    settings = {"batch_size": 10, "max_batching_window_seconds": 2, "timeout_seconds": 5, "visibility_timeout": 37}
    with refused(client.dynamodb, throttled):
        report = dispatcher(client, consumer, sleep=sleep, **settings).run(lambda: 900.0)

    assert throttled.refused >= 1
    assert deliveries == ["first"] and report.delivered == 1
    stats = queue.stats()
    assert (stats.visible, stats.in_flight, stats.delayed, stats.dlq) == (0, 0, 0, 0)


def test_a_gather_paused_past_its_claims_never_holds_a_message_twice(client: QueueClient, clock) -> None:
    client.create_queue("orders", max_receive_count=5)
    queue = client.queue("orders", "tenant-a")
    queue.send("once")
    deliveries: list[str] = []
    paused = [False]

    def sleep(seconds: float) -> None:
        """The dispatcher's process is paused in its batching window, past the claim it took at the start."""
        clock.advance(seconds if paused[0] else 40)
        paused[0] = True

    def consumer(event: dict, context) -> None:
        deliveries.extend(r["body"] for r in event["Records"])

    settings = {"batch_size": 10, "max_batching_window_seconds": 1, "timeout_seconds": 5, "visibility_timeout": 36}
    report = dispatcher(client, consumer, sleep=sleep, **settings).run(lambda: 900.0)
    assert deliveries == ["once"] and report.delivered == 1
    assert queue.stats().visible + queue.stats().in_flight + queue.stats().delayed == 0


def test_a_message_claimed_by_another_receiver_while_the_dispatcher_was_paused_is_never_delivered_by_it(
    client: QueueClient, clock
) -> None:
    client.create_queue("orders", max_receive_count=5)
    queue = client.queue("orders", "tenant-a")
    queue.send("taken")
    deliveries: list[str] = []
    taken = []

    def sleep(seconds: float) -> None:
        """Paused past its claim; meanwhile a worker's own receive claims the message."""
        if not taken:
            clock.advance(40)
            taken.extend(queue.receive())
        else:
            clock.advance(seconds)

    def consumer(event: dict, context) -> None:
        deliveries.extend(r["body"] for r in event["Records"])

    settings = {"batch_size": 10, "max_batching_window_seconds": 1, "timeout_seconds": 5, "visibility_timeout": 36}
    report = dispatcher(client, consumer, sleep=sleep, **settings).run(lambda: 900.0)
    assert deliveries == [] and report.invocations == 0 and report.claims_lost == 1
    (worker,) = taken
    queue.delete(worker.receipt_handle)
    assert queue.stats().visible + queue.stats().in_flight + queue.stats().delayed == 0


def test_a_fifo_group_failed_in_one_part_gives_back_its_later_part_unseen_and_keeps_its_order(
    client: QueueClient, clock
) -> None:
    client.create_queue("orders.fifo", fifo=True, max_receive_count=5)
    queue = client.queue("orders.fifo", "tenant-a")
    bodies = ["flaky-0"] + [f"m{index}" for index in range(1, 7)]
    for body in bodies:
        queue.send(body + "x" * 900_000, group_id="g", dedup_id=body)
    spec = ConsumerSpec(queue="orders.fifo", client="tenant-a", function="fifo")

    def dispatch() -> DispatchReport:
        return Dispatcher(client, spec, in_process_invoke(consumers.fifo_handler, "fifo", 30), SOURCE).run(
            lambda: 900.0
        )

    first = dispatch()
    assert (first.invocations, first.failed, first.released, first.returned) == (1, 6, 6, 1)
    clock.advance(5)  # past the first backoff
    second = dispatch()
    assert second.delivered == 7
    handled = [(body[:7].rstrip("x"), receives) for body, receives in consumers.HANDLED]
    assert handled[-7:] == [("flaky-0", 2)] + [(f"m{i}", 2) for i in range(1, 6)] + [("m6", 1)]


def test_a_settings_read_throttled_after_an_invocation_abandons_no_claim(
    client: QueueClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The queue's settings are cached for seconds, an invocation may run for minutes: what is read of them after
    it meets the table again. The dispatcher read the receive limit there (for its releases), and a throttle on that
    read ended its run with the next part of the batch never invoked nor given back: held until its claim ran out,
    with a receive counted that nobody saw (repeated, the DLQ without a delivery)."""
    client.create_queue("orders", max_receive_count=5)
    queue = client.queue("orders", "tenant-a")
    padding = "." * 1200
    queue.send("fails" + padding)
    queue.send("later part" + padding)
    monkeypatch.setattr("queue_core.push.MAX_PAYLOAD_BYTES", payload_bytes([]) + 2000)  # one message to a part
    settings_key = {name: {"S": value} for name, value in keys.settings_key("orders").items()}
    # Once: DynamoDB throttles the first read of the settings after the first invocation.
    settings_read = Refused(
        "GetItem", lambda body: body.get("Key") == settings_key and not settings_read.refused, "ThrottlingException"
    )
    settings_read.on = False
    handed: list[str] = []

    def consumer(event: dict, context) -> dict:
        handed.extend(r["body"].rstrip(".") for r in event["Records"])
        failing = [r["messageId"] for r in event["Records"] if r["body"].startswith("fails")]
        client._ctx.registry.forget("orders")  # the cache ran out during the invocation
        settings_read.on = True
        return {"batchItemFailures": [{"itemIdentifier": i} for i in failing]}

    with refused(client.dynamodb, settings_read):
        report = dispatcher(client, consumer).run(lambda: 60.0)

    assert settings_read.refused == 1
    assert handed == ["fails", "later part"]
    assert report.delivered == 1 and report.failed == 1
    # The failed message: released, or (its release met the throttle) left to its claim; nothing else is held.
    stats = queue.stats()
    assert stats.in_flight == 1 - report.released and stats.visible + stats.delayed + stats.in_flight == 1


def _run_with_slow_calls(
    client: QueueClient, queue: Any, ids: dict[str, str], clock: Any, dynamodb: Any, slow_calls: Any, sleep: Any
) -> tuple[DispatchReport, list[float]]:
    """A dispatcher run (a 30 s timeout, a visibility of 75 s, a 15 s window) with `slow_calls` hooked before every
    DynamoDB call; with how long each message handed over was still held by its claim when its invocation began."""
    left: list[float] = []

    def consumer(event: dict, context) -> None:
        for handed in event["Records"]:
            held = queue.get(ids[handed["body"]])
            left.append((held.visible_at or 0) / 1000 - clock.now)

    settings = {"batch_size": 10, "timeout_seconds": 30, "visibility_timeout": 75, "max_batching_window_seconds": 15}
    dynamodb.meta.events.register("before-call.dynamodb", slow_calls, unique_id="slow-calls")
    try:
        report = dispatcher(client, consumer, sleep=sleep, **settings).run(lambda: 900.0)
    finally:
        dynamodb.meta.events.unregister("before-call.dynamodb", unique_id="slow-calls")
    return report, left


def test_claims_judged_long_enough_before_slow_extensions_are_judged_again_after_them(
    client: QueueClient, clock, dynamodb
) -> None:
    """The stress run's push path: a keep judged every claim against the clock read at its start, then extended
    the short ones one by one; its calls took many seconds there, so a claim judged long enough at the start had
    run short when the invocation began, ran out while the consumer held it, and a second dispatcher took it. Here
    m1 is claimed at the start of a batching window and m2 12 s later; each extension takes 15 s. Every message
    handed over must be held by its claim for the consumer's timeout and the margin when its invocation starts."""
    client.create_queue("orders", max_receive_count=5)
    queue = client.queue("orders", "tenant-a")
    ids = {"m1": queue.send("m1").message_id}
    sent: list[str] = []

    def sleep(seconds: float) -> None:
        """The process paused in the window: 12 s, then m2 comes; 14 s more, and the window is over."""
        clock.advance(12 if not sent else 14)
        if not sent:
            sent.append(queue.send("m2").message_id)
            ids["m2"] = sent[0]

    def slow_extensions(model: Any, params: dict[str, Any], **_: Any) -> None:
        expression = request_body(params).get("UpdateExpression", "")
        if model.name == "UpdateItem" and "changed = :tok" in expression and "released_by" not in expression:
            clock.advance(15)  # a change of visibility: the extension of a short claim

    report, left_when_invoked = _run_with_slow_calls(client, queue, ids, clock, dynamodb, slow_extensions, sleep)
    assert sent and report.invocations >= 1
    covered = 30 + CLAIM_MARGIN_SECONDS
    assert all(left >= covered - 1 for left in left_when_invoked), left_when_invoked


def test_claims_long_enough_before_a_slow_give_back_are_judged_again_before_the_invocation(
    client: QueueClient, clock, dynamodb
) -> None:
    """After the rounds of extensions, the claims still short go back unseen, one call each: seconds when
    throttled. A claim judged long enough before those give-backs may be short once they are done, when the
    invocation starts. Here m1 and m2 are both short when the window ends; m1's extension takes 26 s each round
    and its give-back 30 s, m2's are at once (the first batch only). After the rounds m2 covers the consumer's
    timeout and the margin by 25 s, m1 does not and goes back, and that takes 30 s: m2 must not be handed over
    then. Every message handed over must be held by its claim for the timeout and the margin when its
    invocation starts."""
    client.create_queue("orders", max_receive_count=5)
    queue = client.queue("orders", "tenant-a")
    ids = {body: queue.send(body).message_id for body in ("m1", "m2")}
    slow = [ids["m1"].split(".", 1)[1]]

    def slow_calls_on_m1(model: Any, params: dict[str, Any], **_: Any) -> None:
        body = request_body(params)
        expression = body.get("UpdateExpression", "")
        if not slow or model.name != "UpdateItem" or body.get("Key", {}).get("sk", {}).get("S") != slow[0]:
            return
        if "released_by" in expression:
            clock.advance(30)  # giving m1 back
            slow.clear()
        elif "changed = :tok" in expression:
            clock.advance(26)  # extending m1's claim

    report, left_when_invoked = _run_with_slow_calls(
        client, queue, ids, clock, dynamodb, slow_calls_on_m1, lambda seconds: clock.advance(26)
    )
    assert not slow and report.returned >= 1
    covered = 30 + CLAIM_MARGIN_SECONDS
    assert all(left >= covered - 1 for left in left_when_invoked), left_when_invoked


def test_a_fifo_claim_given_back_short_before_the_invocation_takes_its_groups_later_claims_back_with_it(
    client: QueueClient, clock, dynamodb
) -> None:
    """m1 and m2 of one group are claimed together, the receive's answer 15 s late; every extension of m1 takes 26 s
    (m2's are at once). After the rounds of extensions m1's claim is short of the timeout and the margin while
    m2's covers it: m1 goes back, and m2 must go back with it, not be handed over alone (it would be consumed
    before m1, which the group offers again afterwards)."""
    client.create_queue("orders.fifo")
    queue = client.queue("orders.fifo", "tenant-a")
    m1 = queue.send("m1", group_id="g").message_id.split(".", 1)[1]
    queue.send("m2", group_id="g")
    handed: list[str] = []
    late = [True]

    def consumer(event: dict, context) -> None:
        handed.extend(record["body"] for record in event["Records"])

    def late_answer(params: dict[str, Any], **_: Any) -> None:
        """The read of the group's messages, the receive's last step: its answer comes 15 s late, once."""
        values = params.get("ExpressionAttributeValues", {})
        if late and any(str(value.get("S", "")).startswith("G#orders.fifo#") for value in values.values()):
            late.clear()
            clock.advance(15)

    def slow_m1_extension(model: Any, params: dict[str, Any], **_: Any) -> None:
        items = request_body(params).get("TransactItems", [])
        checks = [item["ConditionCheck"] for item in items if "ConditionCheck" in item]
        if not handed and any(check["Key"]["sk"]["S"] == m1 for check in checks) and any("Update" in i for i in items):
            clock.advance(26)  # extending m1's claim (its group's lock, on the condition that m1 is still held)

    events = dynamodb.meta.events
    events.register("provide-client-params.dynamodb.Query", late_answer, unique_id="late-answer")
    events.register("before-call.dynamodb.TransactWriteItems", slow_m1_extension, unique_id="slow-m1")
    try:
        dispatcher(client, consumer, queue="orders.fifo", batch_size=10, timeout_seconds=30, visibility_timeout=60).run(
            lambda: 900.0
        )
    finally:
        events.unregister("provide-client-params.dynamodb.Query", unique_id="late-answer")
        events.unregister("before-call.dynamodb.TransactWriteItems", unique_id="slow-m1")
    assert not late and handed == ["m1", "m2"], handed


def test_releases_that_fail_after_a_delivery_are_counted_unsettled_and_come_back(
    client: QueueClient, clock, instant_backoff: None
) -> None:
    """A failed message whose release fails (DynamoDB throttling it past the SDK's retries) is neither released
    nor lost: the run says so (`unsettled`), and the message comes back once its claim runs out."""
    client.create_queue("orders", max_receive_count=5, visibility_timeout=30)
    queue = client.queue("orders", "tenant-a")
    queue.send_batch([{"body": "flaky-1"}, {"body": "flaky-2"}])
    releases = Refused("UpdateItem", expression_has("released_by"), "ThrottlingException", "Rate exceeded")
    with refused(client.dynamodb, releases):
        report = run(dispatcher(client))
    assert releases.refused > 0
    assert (report.failed, report.released, report.unsettled) == (2, 0, 2)
    assert queue.stats().in_flight == 2
    clock.advance(1_000)  # past any claim the dispatcher made
    assert queue.stats().visible == 2
