"""The queue actions: create, find, list, describe, change, delete and purge queues; tags; DLQ sources.

A queue is shared by every client: CreateQueue, SetQueueAttributes, DeleteQueue and the tags act on the queue
for all of them, and only the administration endpoint serves them (a client's CreateQueue answers the URL of a
queue that exists as asked). PurgeQueue and the approximate counts act on the endpoint's client's sub-queue only;
at the administration endpoint the counts are summed over the queue's clients.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import Any, Final

from queue_core import QueueError, QueueStats, validation

from . import queue_attributes
from .calls import Call
from .dead_letters import dlq_name, source_of
from .errors import SqsError, from_core, invalid, no_queue
from .shapes import integer, require

MAX_LIST: Final = 1000
# A ListQueues `NextToken`: the last name answered, behind a marker, in canonical base64url.
_TOKEN_MARKER: Final = "after:"
_LISTED_NAME = re.compile(r"[A-Za-z0-9_.-]{1,90}")


def create_queue(call: Call) -> dict[str, Any]:
    """SQS answers the URL of an existing queue when every attribute named matches it (QueueNameExists when one
    differs). A queue made here has no redrive unless a RedrivePolicy asks for it, as in SQS."""
    name = require(call.params, "QueueName")
    attributes = call.params.get("Attributes") or {}
    source = source_of(name)
    if source is not None:
        call.settings(source)
        if attributes:
            raise invalid("A dead-letter queue here takes its settings from its queue; create it without attributes.")
        return {"QueueUrl": call.endpoint.queue_url(name)}
    asked = queue_attributes.settings_of(name, attributes, call.endpoint, creating=True, fifo=name.endswith(".fifo"))
    if not call.endpoint.manages_queues:
        return _existing(call, name, asked)
    fifo = asked.get("fifo", False)
    if fifo != name.endswith(".fifo"):
        raise invalid("A FIFO queue's name must end with .fifo and it must have the attribute FifoQueue=true.")
    _check_target(call, name, fifo, asked)
    if asked.get("content_based_dedup") and not fifo:
        raise SqsError("InvalidAttributeName", "ContentBasedDeduplication is only for FIFO queues.")
    settings = {"max_receive_count": 0, **asked}
    try:
        call.core.create_queue(name, tags=_tags(call.params.get("tags")), **settings)
    except QueueError as error:
        if error.code != "QueueExists":
            raise from_core(error) from None
        if not queue_attributes.same_as_asked(call.core.get_queue(name), asked):
            raise SqsError("QueueNameExists", f"A queue named {name} exists with other attributes.") from None
    return {"QueueUrl": call.endpoint.queue_url(name)}


def _existing(call: Call, name: str, asked: dict[str, Any]) -> dict[str, Any]:
    """A client's endpoint creates nothing, but answers CreateQueue for a queue that exists as asked (what Kombu
    and most SQS code call at start) with its URL."""
    try:
        settings = call.core.get_queue(name)
    except QueueError as error:
        if error.code == "QueueNotFound":
            call.endpoint.refuse_unless_managing("CreateQueue")
        raise from_core(error) from None
    if not queue_attributes.same_as_asked(settings, asked):
        raise SqsError("QueueNameExists", f"A queue named {name} exists with other attributes.")
    return {"QueueUrl": call.endpoint.queue_url(name)}


def get_queue_url(call: Call) -> dict[str, Any]:
    name = require(call.params, "QueueName")
    owner = call.params.get("QueueOwnerAWSAccountId")
    if owner is not None and owner != call.endpoint.account:
        raise no_queue()
    call.named(name)
    return {"QueueUrl": call.endpoint.queue_url(name)}


def list_queues(call: Call) -> dict[str, Any]:
    """Names in order; a queue with a redrive policy lists its DLQ too. `NextToken` is the last name answered.
    A client's endpoint lists the queues where that client has a sub-queue (it was sent a message there), not
    the other tenants' queues; the administration endpoint lists every queue."""
    prefix = call.params.get("QueueNamePrefix") or ""
    limit = integer(call.params, "MaxResults", 1, MAX_LIST)
    after = _token(call.params.get("NextToken"))
    names: list[str] = []
    queues = call.core.list_queues() if call.endpoint.manages_queues else call.core.client_queues(call.endpoint.client)
    for settings in queues:
        names.append(settings.name)
        if settings.max_receive_count > 0:
            names.append(dlq_name(settings.name))
    chosen = sorted(name for name in names if name.startswith(prefix) and (after is None or name > after))
    answer: dict[str, Any] = {}
    page = chosen[: limit or MAX_LIST]
    if page:
        answer["QueueUrls"] = [call.endpoint.queue_url(name) for name in page]
    if limit is not None and len(chosen) > limit:
        answer["NextToken"] = base64.urlsafe_b64encode((_TOKEN_MARKER + page[-1]).encode()).decode()
    return answer


def _token(value: Any) -> str | None:
    """The name a `NextToken` of this action carries; anything else is refused, never read as a place to start."""
    if value is None:
        return None
    try:
        text = base64.urlsafe_b64decode(value.encode("ascii")).decode()
    except (UnicodeError, binascii.Error, ValueError):
        text = ""
    name = text.removeprefix(_TOKEN_MARKER)
    canonical = base64.urlsafe_b64encode(text.encode()).decode() == value
    if not canonical or not text.startswith(_TOKEN_MARKER) or not _LISTED_NAME.fullmatch(name):
        raise invalid("Invalid NextToken value.")
    return name


def get_queue_attributes(call: Call) -> dict[str, Any]:
    target = call.target()
    names = queue_attributes.wanted_names(call.params.get("AttributeNames"))
    settings = call.settings(target.queue)
    sub_queue = call.sub_queue(target)
    stats = None
    if names & set(queue_attributes.COUNTS):
        stats = call.core.queue_stats(target.queue) if call.endpoint.manages_queues else sub_queue.stats()
    if target.dlq:
        stats = QueueStats(visible=stats.dlq) if stats is not None else None
        values = queue_attributes.attributes_of(
            settings, call.endpoint, names - {"RedrivePolicy", "RedriveAllowPolicy"}, stats
        )
        values["QueueArn"] = call.endpoint.queue_arn(target.name)
        values = {name: value for name, value in values.items() if name in names}
    else:
        values = queue_attributes.attributes_of(settings, call.endpoint, names, stats)
    return {"Attributes": values} if values else {}


def set_queue_attributes(call: Call) -> dict[str, Any]:
    call.endpoint.refuse_unless_managing("SetQueueAttributes")
    target = _not_a_dlq(call, "SetQueueAttributes")
    attributes = require(call.params, "Attributes")
    fifo = call.settings(target.queue).fifo
    changes = queue_attributes.settings_of(target.queue, attributes, call.endpoint, creating=False, fifo=fifo)
    if not changes:
        return {}
    _check_target(call, target.queue, fifo, changes)
    return _changed(lambda: call.core.update_queue(target.queue, **changes))


def delete_queue(call: Call) -> dict[str, Any]:
    call.endpoint.refuse_unless_managing("DeleteQueue")
    target = _not_a_dlq(call, "DeleteQueue")
    try:
        call.core.delete_queue(target.queue)
    except QueueError as error:
        raise from_core(error) from None
    return {}


def purge_queue(call: Call) -> dict[str, Any]:
    """The endpoint's client's sub-queue; SQS's one purge a minute is not enforced."""
    target = _not_a_dlq(call, "PurgeQueue")
    try:
        call.sub_queue(target).purge()
    except QueueError as error:
        raise from_core(error) from None
    return {}


def tag_queue(call: Call) -> dict[str, Any]:
    call.endpoint.refuse_unless_managing("TagQueue")
    target = _not_a_dlq(call, "TagQueue")
    tags = _tags(require(call.params, "Tags"))
    return _changed(lambda: call.core.tag_queue(target.queue, tags))


def untag_queue(call: Call) -> dict[str, Any]:
    call.endpoint.refuse_unless_managing("UntagQueue")
    target = _not_a_dlq(call, "UntagQueue")
    keys = require(call.params, "TagKeys")
    return _changed(lambda: call.core.untag_queue(target.queue, keys))


def _changed(change: Callable[[], Any]) -> dict[str, Any]:
    """A change of the queue's stored settings; one that lost a race with another change reads as a throttle,
    which SDKs retry (and the retry reads the queue again)."""
    try:
        change()
    except QueueError as error:
        raise from_core(error, QueueExists="RequestThrottled") from None
    return {}


def list_queue_tags(call: Call) -> dict[str, Any]:
    target = call.target()
    tags = {} if target.dlq else call.core.get_queue(target.queue).tags
    return {"Tags": tags} if tags else {}


def list_dead_letter_source_queues(call: Call) -> dict[str, Any]:
    """A queue's own DLQ (`{queue}.dlq`) has one source, its queue; any other queue has every queue that names it
    as its dead-letter target. Paged by `MaxResults`/`NextToken` in name order, as `ListQueues`."""
    target = call.target()
    limit = integer(call.params, "MaxResults", 1, MAX_LIST)
    after = _token(call.params.get("NextToken"))
    names = [target.queue] if target.dlq else [source.name for source in call.core.dead_letter_sources(target.queue)]
    chosen = sorted(name for name in names if after is None or name > after)
    page = chosen[: limit or MAX_LIST]
    answer: dict[str, Any] = {"queueUrls": [call.endpoint.queue_url(name) for name in page]}
    if limit is not None and len(chosen) > limit:
        answer["NextToken"] = base64.urlsafe_b64encode((_TOKEN_MARKER + page[-1]).encode()).decode()
    return answer


def _check_target(call: Call, name: str, fifo: bool, asked: dict[str, Any]) -> None:
    """SQS's rules for a RedrivePolicy naming another queue (it exists, it is of the same type, its
    RedriveAllowPolicy lets this queue name it), as `InvalidAttributeValue`."""
    target = asked.get("dead_letter_target")
    if not target:
        return
    try:
        call.core.check_dead_letter_target(name, fifo, target)
    except QueueError as error:
        raise queue_attributes.bad_value(queue_attributes.REDRIVE_POLICY, error.message) from None


def _tags(value: Any) -> dict[str, str]:
    try:
        return validation.tags(value)
    except QueueError as error:
        raise invalid(error.message) from None


def _not_a_dlq(call: Call, action: str) -> Any:
    target = call.target()
    if target.dlq:
        raise invalid(f"{action} acts on a queue; its dead-letter queue {target.name} follows it.")
    return target
