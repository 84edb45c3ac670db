"""Message bodies as the table stores them: as sent, compressed, or offloaded to S3 behind a pointer.

DynamoDB charges a write unit per started KB of the item on each of a message's writes (send, claim, delete)
and refuses items over 400 KB. A body is therefore stored in one of three forms, each in its own attribute, so
that reading an item tells its form without a marker to parse:

- `body` (string): the body as sent — small bodies, and bodies that compression would not make cheaper;
- `bodyz` (binary): the UTF-8 body compressed with zlib, when that lowers the item's write units;
- `bodyobj` (map `{bucket, key, z}`): the body in an S3 object (zlib-compressed when `z` is 1), for bodies larger
  than the offload threshold or too large for an item. The object is written before the item, so no item ever
  points at an object that was not stored; the object key starts with `{queue}/{client}/`.

`Bodies.stored` picks the form when an item is built (`messages.new_item`), `Bodies.resolved` gives the body back
when an item becomes a result (`messages.received`, `messages.looked_at`): every path that returns a message returns
the body exactly as sent, and nothing else in the core knows the forms. Bodies that SQS's Extended Client already
offloaded (its `PayloadS3Pointer` JSON) are stored as sent, so its consumers keep resolving them themselves.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from . import limits
from .errors import MessageBodyMissing, MessageTooLarge
from .store import Item, Write
from .store.objects import ObjectStore

BODY: Final = "body"
COMPRESSED: Final = "bodyz"
OFFLOADED: Final = "bodyobj"
FORMS: Final = (BODY, COMPRESSED, OFFLOADED)

POINTER_CLASS: Final = "software.amazon.payloadoffloading.PayloadS3Pointer"
EXTENDED_CLIENT_POINTER: Final = f'["{POINTER_CLASS}"'
_ZLIB_LEVEL: Final = 6
_WRITE_UNIT_BYTES: Final = 1024
# S3's bucket names (legacy ones included: up to 255 characters, capitals and underscores) and its key limit.
_BUCKET_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,253}[A-Za-z0-9]")
_MAX_S3_KEY_BYTES: Final = 1024


def is_extended_client_pointer(body: str) -> bool:
    """A body that SQS's Extended Client wrote in place of one it offloaded to its own bucket: exactly its JSON
    `["software.amazon.payloadoffloading.PayloadS3Pointer", {"s3BucketName": ..., "s3Key": ...}]`, naming a
    bucket and a key S3 could hold, as the Java, Python and other Extended Clients write it (with or without
    spaces). Such a body is small (`limits.MAX_POINTER_BYTES` bounds it, escapes included), so it is stored as
    sent; anything else, however it starts, is an ordinary body, stored (compressed, offloaded) as its size
    needs."""
    if len(body) > limits.MAX_POINTER_BYTES or not body.lstrip().startswith(EXTENDED_CLIENT_POINTER):
        return False
    try:
        parsed = json.loads(body)
    except ValueError:
        return False
    if not isinstance(parsed, list) or len(parsed) != 2 or not isinstance(parsed[1], dict):
        return False
    pointer = parsed[1]
    bucket, key = pointer.get("s3BucketName"), pointer.get("s3Key")
    return (
        set(pointer) == {"s3BucketName", "s3Key"}
        and isinstance(bucket, str)
        and _BUCKET_NAME.fullmatch(bucket) is not None
        and isinstance(key, str)
        and 0 < _utf8_length(key) <= _MAX_S3_KEY_BYTES
    )


def _utf8_length(text: str) -> int:
    """The UTF-8 length of `text`, or more than any limit when it holds a lone surrogate (which JSON escapes can
    spell and S3 cannot store)."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return _MAX_S3_KEY_BYTES + 1


def write_units(item_bytes: int) -> int:
    return max(1, math.ceil(item_bytes / _WRITE_UNIT_BYTES))


def value_size(value: Any) -> int:
    """The bytes one attribute value takes by DynamoDB's item size rules (names count as much as values)."""
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, int | float | Decimal):
        digits = str(abs(value)).replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, dict):
        return 3 + sum(1 + len(name.encode("utf-8")) + value_size(item) for name, item in value.items())
    if isinstance(value, list | tuple):
        return 3 + sum(1 + value_size(item) for item in value)
    if isinstance(value, set | frozenset):
        return sum(value_size(item) for item in value)
    return len(bytes(value))  # boto3's Binary


def item_size(item: Item) -> int:
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in item.items())


def stored_form(item: Item) -> Item:
    """The attribute that holds an item's body, as it is: what a move (to the DLQ, back by a redrive) carries over,
    so that an offloaded body keeps its one object."""
    return {name: item[name] for name in FORMS if name in item}


def object_of(item: Item) -> tuple[str, str] | None:
    """(bucket, key) of an item's offloaded body, or None."""
    pointer = item.get(OFFLOADED)
    return (pointer["bucket"], pointer["key"]) if pointer else None


@dataclass
class Bodies:
    """Stores and resolves bodies for one `QueueClient`. Without a `bucket`, nothing is offloaded: a body whose
    item would not fit in DynamoDB is refused (`MessageTooLarge`), and items that point at objects (written by a
    process that had a bucket) are still resolved, from the bucket their pointer names."""

    objects: ObjectStore = field(default_factory=ObjectStore)
    bucket: str | None = None
    offload_bytes: int = limits.DEFAULT_OFFLOAD_BYTES
    # False keeps every body that fits as sent, readable in the table (and its stream) as any other attribute.
    compress: bool = True

    def stored(self, body: str, object_prefix: str, item_bytes: int) -> Item:
        """The attribute(s) to store `body` in an item whose other attributes take `item_bytes`.

        Compressed when that lowers the write units of the item, counted with what a claim adds to it; offloaded
        when the stored body (compressed or not) is over `offload_bytes` or the item would not fit. Offloading
        writes the object now, before the caller writes the item."""
        if is_extended_client_pointer(body):
            return {BODY: body}
        raw = body.encode("utf-8")
        around = item_bytes + limits.CLAIM_BYTES
        form: Item = {BODY: body}
        stored = len(raw)
        worth_trying = self.compress and len(raw) >= limits.COMPRESS_MIN_BYTES
        packed = zlib.compress(raw, _ZLIB_LEVEL) if worth_trying else None
        if packed is not None and write_units(around + len(COMPRESSED) + len(packed)) < write_units(
            around + len(BODY) + len(raw)
        ):
            form, stored = {COMPRESSED: packed}, len(packed)
        fits = item_bytes + len(COMPRESSED) + stored <= limits.MAX_ITEM_BYTES - limits.ITEM_HEADROOM_BYTES
        if self.bucket and (stored > self.offload_bytes or not fits):
            compressed = packed is not None and len(packed) < len(raw)
            key = f"{object_prefix}{secrets.token_hex(16)}"
            self.objects.put(self.bucket, key, packed if compressed and packed is not None else raw)
            return {OFFLOADED: {"bucket": self.bucket, "key": key, "z": int(compressed)}}
        if not fits:
            raise MessageTooLarge(
                f"the message takes {item_bytes + stored} bytes stored; at most "
                f"{limits.MAX_ITEM_BYTES - limits.ITEM_HEADROOM_BYTES} fit in a DynamoDB item, and no bucket is "
                "configured for larger bodies (QUEUE_BUCKET)"
            )
        return form

    def resolved(self, item: Item) -> Item:
        """The item with its body as sent in `body` (a copy when it was stored otherwise). An offloaded body whose
        object is gone raises `MessageBodyMissing`."""
        if BODY in item:
            return item
        if COMPRESSED in item:
            return {**item, BODY: _inflate(bytes(item[COMPRESSED]))}
        location = object_of(item)
        if location is None:
            return item
        data = self.objects.get(*location)
        if data is None:
            raise MessageBodyMissing(f"the body of this message is gone from s3://{location[0]}/{location[1]}")
        text = _inflate(data) if item[OFFLOADED].get("z") else data.decode("utf-8")
        return {**item, BODY: text}

    def renew(self, items: Iterable[Item], now_ms: int, retention_seconds: int) -> None:
        """Before a redrive: the objects that might not outlive their message's new life start one too. The
        bucket's lifecycle rule removes an object `limits.OBJECT_LIFETIME_SECONDS` after its last write, and a
        redriven message may live `retention_seconds` in its queue and as long again in the DLQ. An object is
        written at its message's send or a later renewal, never before `sent_at`: one that outlives the new life
        counted from `sent_at` is left as it is (with the default retention, every one does). The others are
        copied onto themselves, which restarts their age. An object already gone stays gone (the receive says
        so)."""
        self.outlive(items, now_ms, 2 * retention_seconds)

    def outlive(self, items: Iterable[Item], now_ms: int, seconds: int) -> None:
        """The objects of `items` that might not last `seconds` from now (and a day's margin) start a new life,
        as `renew` explains: a redriven message's, or an acknowledged one's kept by the archive (up to 90 days,
        past the lifecycle rule's age)."""
        needed_until = now_ms + (seconds + limits.DAY_SECONDS) * 1000
        for item in items:
            location = object_of(item)
            expires = int(item.get("sent_at", 0)) + limits.OBJECT_LIFETIME_SECONDS * 1000
            if location is not None and expires < needed_until:
                self.objects.renew(*location, stamp=str(now_ms))

    def discard(self, items: Iterable[Item | None]) -> None:
        """Best effort: removes the objects of items that were just removed for good (deleted, cancelled, purged,
        expired). Never for an item that moved: its object moved with it."""
        objects = [location for item in items if item and (location := object_of(item)) is not None]
        if objects:
            self.objects.remove(objects)

    def discard_prefix(self, prefix: str) -> None:
        """Best effort: removes every object under a prefix no item can name any more (a deleted queue's)."""
        if self.bucket:
            self.objects.remove_prefix(self.bucket, prefix)

    def discard_unstored(self, actions: Sequence[Write], reasons: Sequence[tuple[str, Item | None]]) -> None:
        """After a cancelled transaction: removes the objects of its puts, which were not stored. A put whose key
        holds an item with the same object was stored after all (this very transaction, applied, its answer lost
        and repeated by the SDK), and keeps its object."""
        self.discard(
            action.item
            for action, (_, old) in zip(actions, reasons, strict=False)
            if action.item is not None and (old is None or object_of(old) != object_of(action.item))
        )


def _inflate(data: bytes) -> str:
    """At most the largest body, whatever the data says: a corrupt object cannot exhaust memory."""
    inflater = zlib.decompressobj()
    raw = inflater.decompress(data, limits.MAX_BODY_BYTES + 1)
    return raw.decode("utf-8")
