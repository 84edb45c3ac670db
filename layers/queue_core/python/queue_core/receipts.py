"""Receipt handles: opaque to callers, signed by the queue's secret.

A handle carries the sub-queue, the message id, the claim token (128 random bits) and what a later delete or
release needs to know without reading first (the receive count for backoff; for FIFO, the size of the batch held
and whether the group had more messages). The signature tells a forged or altered handle (`ValidationError`) from a
genuine one whose claim has passed to another consumer (`ReceiptHandleStale`, found by the token condition).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from .errors import ValidationError

_VERSION = "1"
_MAC_BYTES = 16
_MAX_HANDLE = 2048
# The shape of every handle `signed` spells, as the API documents it: base64url of the payload, a dot, base64url of
# its 16-byte MAC. Only a handle the sub-queue signed passes `verified`: one of this shape that it did not sign
# (forged, altered, of a queue since deleted) is refused as `ValidationError`, as SQS refuses an invalid handle.
RECEIPT_HANDLE_PATTERN = r"^[A-Za-z0-9_-]{1,2000}\.[A-Za-z0-9_-]{22}$"


def new_token() -> str:
    return secrets.token_hex(16)


def new_secret() -> str:
    """A sub-queue's receipt-signing key (256 bits)."""
    return secrets.token_hex(32)


@dataclass(frozen=True)
class Receipt:
    queue: str
    client: str
    message_id: str
    token: str
    receive_count: int
    # FIFO only: how many messages of the group this claim holds, and the group's last sequence when the claim
    # saw no message after the held ones (empty string otherwise).
    held: int = 1
    last_seq: str = ""
    group_shard: int = 0

    def encode(self, secret: str) -> str:
        fields = [
            _VERSION,
            self.queue,
            self.client,
            self.message_id,
            self.token,
            str(self.receive_count),
            str(self.held),
            self.last_seq,
            str(self.group_shard),
        ]
        return signed("|".join(fields).encode(), secret)

    @classmethod
    def decode(cls, handle: object, secret: str) -> Receipt:
        payload = verified(
            handle,
            secret,
            malformed="receipt_handle is malformed",
            forged="receipt_handle is not valid for this queue (forged, altered or from a queue that was re-created)",
        )
        version, queue, client, message_id, token, count, held, last_seq, group_shard = payload.decode().split("|")
        if version != _VERSION:
            raise ValidationError("receipt_handle has an unknown version")
        return cls(queue, client, message_id, token, int(count), int(held), last_seq, int(group_shard))

    @staticmethod
    def owner(handle: object) -> tuple[str, str]:
        """(queue, client) as the handle spells them, unverified: which sub-queue's secret checks it."""
        if not isinstance(handle, str) or len(handle) > _MAX_HANDLE or handle.count(".") != 1:
            raise ValidationError("receipt_handle is malformed")
        try:
            fields = _unb64(handle.split(".")[0]).decode().split("|")
        except (ValueError, UnicodeDecodeError) as error:
            raise ValidationError("receipt_handle is malformed") from error
        if len(fields) < 3 or fields[0] != _VERSION:
            raise ValidationError("receipt_handle is malformed")
        return fields[1], fields[2]

    def check_owner(self, queue: str, client: str) -> None:
        if (self.queue, self.client) != (queue, client):
            raise ValidationError("receipt_handle belongs to another queue or client")


def signed(payload: bytes, secret: str, domain: bytes = b"") -> str:
    """A handle: `payload` and its MAC with the sub-queue's `secret`. Each kind of handle signs under a `domain`
    of its own, so that no kind passes for another."""
    return _b64(payload) + "." + _b64(_mac(secret, domain + payload))


def unsigned(handle: str) -> bytes:
    """The payload of a signed handle, unchecked: only to learn whose handle it claims to be."""
    return _unb64(handle.split(".")[0])


def verified(handle: object, secret: str, *, malformed: str, forged: str, domain: bytes = b"") -> bytes:
    """The payload of a handle `signed` with `secret` under `domain`; ValidationError (`malformed`, `forged`) for
    anything else. Only the one canonical spelling is accepted: the decoder skips characters outside the alphabet
    and ignores spare bits, so no altered handle passes for the genuine one."""
    if not isinstance(handle, str) or len(handle) > _MAX_HANDLE or handle.count(".") != 1:
        raise ValidationError(malformed)
    payload_text, mac_text = handle.split(".")
    try:
        payload, mac = _unb64(payload_text), _unb64(mac_text)
    except ValueError as error:
        raise ValidationError(malformed) from error
    if _b64(payload) != payload_text or _b64(mac) != mac_text:
        raise ValidationError(malformed)
    if not hmac.compare_digest(mac, _mac(secret, domain + payload)):
        raise ValidationError(forged)
    return payload


def _mac(secret: str, payload: bytes) -> bytes:
    return hmac.new(secret.encode(), payload, hashlib.sha256).digest()[:_MAC_BYTES]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as error:
        raise ValueError("not base64") from error
