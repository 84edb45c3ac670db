"""Consumer functions written as Powertools' documentation shows them, for the push tests and `dq local`.

What a record does is in its body: `fail…` always fails (poison), `flaky…` fails on its first receive only,
`slow…` outlasts any short timeout. `HANDLED` lists (body, receive count) of every record a handler started.
"""

from __future__ import annotations

import threading
import time

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.parser.models import SqsModel
from aws_lambda_powertools.utilities.typing import LambdaContext

processor = BatchProcessor(event_type=EventType.SQS)
fifo_processor = SqsFifoPartialProcessor()

HANDLED: list[tuple[str, int]] = []
_lock = threading.Lock()


def record_handler(record: SQSRecord) -> None:
    receives = int(record.attributes.approximate_receive_count)
    with _lock:
        HANDLED.append((record.body, receives))
    if record.body.startswith("fail") or (record.body.startswith("flaky") and receives == 1):
        raise ValueError(f"cannot process {record.message_id}")
    if record.body.startswith("slow"):
        time.sleep(1.0)


def lambda_handler(event: dict, context: LambdaContext) -> dict:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)


def fifo_handler(event: dict, context: LambdaContext) -> dict:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=fifo_processor, context=context
    )


@event_parser(model=SqsModel)
def parsed_handler(event: SqsModel, context: LambdaContext) -> dict:
    for record in event.Records:
        with _lock:
            HANDLED.append((str(record.body), int(record.attributes.ApproximateReceiveCount)))
    return {"batchItemFailures": []}
