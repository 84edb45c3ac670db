"""Loaded by Schemathesis (`SCHEMATHESIS_HOOKS`) for the conformance run of `test_openapi_conformance.py`.

Schemathesis' `positive_data_acceptance` wants every request the document allows to be accepted. A few refusals
depend on what no JSON Schema can say: the queue's own settings (its type, its shards, its retention) or an order
between two fields. The document names each of them in words (the 400 answer's description, the request models'
and parameters' descriptions), and this check takes a 400 for a schema-valid request only when its message is one
of those; any other refusal fails the run as the built-in check would.
"""

from __future__ import annotations

import re
from typing import Any, Final

import schemathesis
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.specs.openapi.checks import positive_data_acceptance

# Each rule as the API words its refusal, and where the document says it.
RULES_NO_SCHEMA_CAN_SAY: Final = tuple(
    re.compile(pattern)
    for pattern in (
        # The queue's type (GroupQuery, PriorityQuery, SendMessageRequest, ReceiveRequest; the 400 description).
        r"group is only for FIFO queues",
        r"priority is only for standard queues",
        r"group_id is only for FIFO queues",
        r"group_id is required",
        r"order 'newest' is only for standard queues",
        r"content_based_dedup is only for FIFO queues",
        # The queue's shards and their bounds (CreateQueueRequest, UpdateQueueRequest).
        r"bound automatic shards",
        r"queue_wide cannot be switched off once on",
        r"min_shards \(\d+\) must be at most max_shards",
        # The queue's retention (CreateQueueRequest, UpdateQueueRequest, SendMessageRequest).
        r"retention",
        # A replay: of a queue that keeps an archive (archive_days), a time range or ids, a range in order
        # (ReplayRequest; the 400 description).
        r"keeps no archive",
        r"give a time range \(since, until\) or message_ids, not both",
        r"since must not be after until",
        # Handles and cursors of the right shape that the sub-queue did not give (ReceiptHandle, Cursor).
        r"receipt_handle is not valid for this queue",
        r"receipt_handle is malformed",
        r"receipt_handle belongs to another",
        r"cursor is not a cursor of",
    )
)


def _names_a_rule(response: Any) -> bool:
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return False
    return any(rule.search(message) for rule in RULES_NO_SCHEMA_CAN_SAY)


@schemathesis.check
def positive_data_accepted_but_for_the_documented_rules(ctx: Any, response: Any, case: Any) -> bool | None:
    """`positive_data_acceptance`, except a 400 whose message is one of `RULES_NO_SCHEMA_CAN_SAY`."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        if response.status_code == 400 and _names_a_rule(response):
            return None
        raise
