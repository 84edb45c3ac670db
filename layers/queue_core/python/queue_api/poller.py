"""The poller's operations: receive (long poll), delete, change visibility, release, peek, browse, get, cancel, purge,
stats. Their routes and actions are in `queue_api.operations`."""

from __future__ import annotations

from . import plain_operations
from .observability import tracer
from .schemas import (
    ArchivedCopies,
    ArchivePageAnswer,
    ArchiveRequest,
    BrowsePageAnswer,
    BrowseRequest,
    DeleteAnswer,
    Deleted,
    DeleteRequest,
    ListRequest,
    MessageAddress,
    MessageAnswer,
    MessageList,
    NoAddress,
    Purged,
    QueueAddress,
    QueueStatsAnswer,
    ReceiveAnswer,
    ReceiveRequest,
    ReleaseRequest,
    SubQueueAddress,
    VisibilityRequest,
    VisibleAt,
)


@tracer.capture_method(capture_response=False)
def receive(address: SubQueueAddress, request: ReceiveRequest) -> ReceiveAnswer:
    """Waits up to `wait_seconds` and returns as soon as anything is received: as many messages as the answer can
    carry through Lambda (`payloads`), the others given back to the queue at once."""
    return ReceiveAnswer.model_validate(plain_operations.receive(address.queue, address.client, request.model_dump()))


@tracer.capture_method(capture_response=False)
def delete(address: SubQueueAddress, request: DeleteRequest) -> DeleteAnswer:
    return DeleteAnswer.model_validate(plain_operations.delete(address.queue, address.client, request.receipt_handles))


@tracer.capture_method(capture_response=False)
def change_visibility(address: SubQueueAddress, request: VisibilityRequest) -> VisibleAt:
    answer = plain_operations.change_visibility(
        address.queue, address.client, request.receipt_handle, request.visibility_timeout
    )
    return VisibleAt.model_validate(answer)


@tracer.capture_method(capture_response=False)
def release(address: SubQueueAddress, request: ReleaseRequest) -> VisibleAt:
    answer = plain_operations.release(
        address.queue, address.client, request.receipt_handle, request.delay_seconds, request.reason
    )
    return VisibleAt.model_validate(answer)


@tracer.capture_method(capture_response=False)
def receive_any(address: QueueAddress, request: ReceiveRequest) -> ReceiveAnswer:
    return ReceiveAnswer.model_validate(plain_operations.receive_any(address.queue, request.model_dump()))


@tracer.capture_method(capture_response=False)
def delete_any(address: QueueAddress, request: DeleteRequest) -> DeleteAnswer:
    return DeleteAnswer.model_validate(plain_operations.delete(address.queue, None, request.receipt_handles))


@tracer.capture_method(capture_response=False)
def change_visibility_any(address: QueueAddress, request: VisibilityRequest) -> VisibleAt:
    answer = plain_operations.change_visibility(address.queue, None, request.receipt_handle, request.visibility_timeout)
    return VisibleAt.model_validate(answer)


@tracer.capture_method(capture_response=False)
def release_any(address: QueueAddress, request: ReleaseRequest) -> VisibleAt:
    answer = plain_operations.release(
        address.queue, None, request.receipt_handle, request.delay_seconds, request.reason
    )
    return VisibleAt.model_validate(answer)


@tracer.capture_method(capture_response=False)
def peek(address: SubQueueAddress, request: ListRequest) -> MessageList:
    return MessageList.model_validate(plain_operations.peek(address.queue, address.client, request.limit))


@tracer.capture_method(capture_response=False)
def browse(address: SubQueueAddress, request: BrowseRequest) -> BrowsePageAnswer:
    page = plain_operations.browse(address.queue, address.client, request.model_dump())
    return BrowsePageAnswer.model_validate(page)


@tracer.capture_method(capture_response=False)
def archive_list(address: SubQueueAddress, request: ArchiveRequest) -> ArchivePageAnswer:
    page = plain_operations.archive_list(address.queue, address.client, request.model_dump())
    return ArchivePageAnswer.model_validate(page)


@tracer.capture_method(capture_response=False)
def archive_get(address: MessageAddress, _request: NoAddress) -> ArchivedCopies:
    copies = plain_operations.archive_get(address.queue, address.client, address.message_id)
    return ArchivedCopies.model_validate(copies)


@tracer.capture_method(capture_response=False)
def archive_list_any(address: QueueAddress, request: ArchiveRequest) -> ArchivePageAnswer:
    return ArchivePageAnswer.model_validate(plain_operations.archive_list(address.queue, None, request.model_dump()))


@tracer.capture_method(capture_response=False)
def get(address: MessageAddress, _request: NoAddress) -> MessageAnswer:
    return MessageAnswer.model_validate(plain_operations.get(address.queue, address.client, address.message_id))


@tracer.capture_method(capture_response=False)
def cancel(address: MessageAddress, _request: NoAddress) -> Deleted:
    return Deleted.model_validate(plain_operations.cancel(address.queue, address.client, address.message_id))


@tracer.capture_method(capture_response=False)
def purge(address: SubQueueAddress, _request: NoAddress) -> Purged:
    return Purged.model_validate(plain_operations.purge(address.queue, address.client))


@tracer.capture_method(capture_response=False)
def stats(address: SubQueueAddress, _request: NoAddress) -> QueueStatsAnswer:
    return QueueStatsAnswer.model_validate(plain_operations.stats(address.queue, address.client))
