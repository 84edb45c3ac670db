"""The only module that talks to S3: the objects that hold offloaded message bodies.

Like the table's store, it turns S3's answers into the core's terms: a missing object is `None` (the caller
decides what a body that is gone means), a throttle or an outage that outlived the SDK's retries is `Throttled`,
anything else `InternalError` with no internals in its message. Removals are best effort: an object left behind
costs only storage until the bucket's lifecycle rule expires it, so a failed removal never fails the queue
operation that made the object an orphan.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError, NoCredentialsError, NoRegionError
from botocore.exceptions import ConnectionError as BotoConnectionError

from ..errors import InternalError, Throttled

logger = logging.getLogger("queue_core")

_THROTTLES: Final = frozenset(
    {"SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "503", "500", "Throttling"}
)
_MISSING: Final = frozenset({"NoSuchKey", "404", "NotFound"})
# DeleteObjects takes at most this many keys per call.
_DELETE_BATCH: Final = 1000


def _raise_mapped(error: Exception) -> None:
    if isinstance(error, ClientError):
        if error.response.get("Error", {}).get("Code", "") in _THROTTLES:
            raise Throttled("S3 is throttling or unavailable; retry later") from error
    elif isinstance(error, BotoConnectionError | HTTPClientError):
        raise Throttled("S3 could not be reached; retry later") from error
    elif isinstance(error, NoCredentialsError | NoRegionError):
        raise InternalError("S3 credentials or region are not configured") from error
    logger.exception("unexpected S3 error")
    raise InternalError("internal error") from error


class ObjectStore:
    """Thin access to the bucket of offloaded bodies. The client is built on first use, so a process that never
    meets a large body never pays for it."""

    def __init__(self, s3: Any = None) -> None:
        self._s3 = s3

    @property
    def client(self) -> Any:
        if self._s3 is None:
            self._s3 = default_s3()
        return self._s3

    def put(self, bucket: str, key: str, data: bytes) -> None:
        """Returns once S3 stored the object: the item that points at it is written only after."""
        try:
            self.client.put_object(Bucket=bucket, Key=key, Body=data)
        except (ClientError, BotoCoreError) as error:
            _raise_mapped(error)

    def get(self, bucket: str, key: str) -> bytes | None:
        """The object's bytes, or None when it is gone (removed, or expired by the lifecycle rule)."""
        try:
            return self.client.get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as error:
            if error.response.get("Error", {}).get("Code", "") in _MISSING:
                return None
            _raise_mapped(error)
        except BotoCoreError as error:
            _raise_mapped(error)
        raise AssertionError("unreachable")

    def renew(self, bucket: str, key: str, stamp: str) -> None:
        """Copies the object onto itself (metadata `renewed` replaced by `stamp`, as S3 requires of a copy in
        place), so that the bucket's lifecycle rule counts its age from now. An object already gone stays gone."""
        try:
            self.client.copy_object(
                Bucket=bucket,
                Key=key,
                CopySource={"Bucket": bucket, "Key": key},
                MetadataDirective="REPLACE",
                Metadata={"renewed": stamp},
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code", "") not in _MISSING:
                _raise_mapped(error)
        except BotoCoreError as error:
            _raise_mapped(error)

    def remove(self, objects: Iterable[tuple[str, str]]) -> int:
        """Best effort: removes (bucket, key) objects, in batches; returns how many S3 confirmed."""
        by_bucket: dict[str, list[str]] = {}
        for bucket, key in objects:
            by_bucket.setdefault(bucket, []).append(key)
        removed = 0
        for bucket, keys in by_bucket.items():
            for start in range(0, len(keys), _DELETE_BATCH):
                batch = [{"Key": key} for key in keys[start : start + _DELETE_BATCH]]
                try:
                    answer = self.client.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
                except (ClientError, BotoCoreError):
                    logger.warning("could not remove %d offloaded bodies; the lifecycle rule will", len(batch))
                    continue
                removed += len(batch) - len(answer.get("Errors", []))
        return removed

    def remove_prefix(self, bucket: str, prefix: str) -> int:
        """Best effort: every object under `prefix` (a deleted queue's sub-queue, whose keys no item can name
        any more); returns how many were removed."""
        removed = 0
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for page in pages:
                removed += self.remove((bucket, entry["Key"]) for entry in page.get("Contents", []))
        except (ClientError, BotoCoreError):
            logger.warning("could not list offloaded bodies under %s; the lifecycle rule will remove them", prefix)
        return removed


def default_s3() -> Any:
    """An S3 client from the environment (boto3 honours AWS_ENDPOINT_URL_S3), with standard-mode retries; path-
    style addressing against a local endpoint (the embedded moto), which has no DNS name per bucket."""
    import os

    import boto3
    from botocore.config import Config

    local = bool(os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL"))
    config = Config(
        retries={"mode": "standard", "max_attempts": 5},
        connect_timeout=3,
        read_timeout=10,
        max_pool_connections=32,
        s3={"addressing_style": "path" if local else "auto"},
    )
    return boto3.client("s3", config=config)
