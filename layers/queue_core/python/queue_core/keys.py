"""Key formats of every item type. The only place that knows how keys and message ids are spelled.

Queue and client names are restricted to `A-Za-z0-9_-` (and `.fifo`), so `#` is a safe separator.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from .errors import ValidationError
from .limits import DEDUP_BUCKETS

REGISTRY_PK = "REGISTRY"
GROUP_SEQ_WIDTH = 20
INDEX_UPPER = "\x7f"  # sorts after every character a sequence or a group id may hold


def registry_key(queue: str) -> dict[str, str]:
    return {"pk": REGISTRY_PK, "sk": f"Q#{queue}"}


def client_pk(queue: str) -> str:
    return f"C#{queue}"


def message_pk(queue: str, client: str, shard: int) -> str:
    return f"M#{queue}#{client}#{shard}"


def dlq_pk(queue: str, client: str, shard: int) -> str:
    return f"D#{queue}#{client}#{shard}"


def group_item_pk(queue: str, client: str, shard: int) -> str:
    return f"F#{queue}#{client}#{shard}"


def group_messages_pk(queue: str, client: str, group: str) -> str:
    return f"G#{queue}#{client}#{group}"


def dedup_key(queue: str, client: str, dedup_id: str) -> dict[str, str]:
    return {"pk": f"X#{queue}#{client}#{stable_hash(dedup_id) % DEDUP_BUCKETS}", "sk": dedup_id}


def dedup_pks(queue: str, client: str) -> list[str]:
    return [f"X#{queue}#{client}#{bucket}" for bucket in range(DEDUP_BUCKETS)]


def group_seq(number: int) -> str:
    return f"{number:0{GROUP_SEQ_WIDTH}d}"


def stable_hash(text: str) -> int:
    """A hash that is the same in every process (Python's `hash` is salted per process)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def group_shard(group: str, shards: int) -> int:
    return stable_hash(group) % shards


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()


@dataclass(frozen=True)
class MessageRef:
    """Where a message lives, decoded from its id: one call reaches it, no lookup item needed.

    Standard ids are `S{shard}.{sequence}`; FIFO ids are `F{base64url(group)}.{group sequence}`.
    """

    shard: int
    sequence: str
    group: str | None = None

    @property
    def message_id(self) -> str:
        if self.group is None:
            return f"S{self.shard}.{self.sequence}"
        return f"F{_b64(self.group)}.{self.sequence}"

    def live_key(self, queue: str, client: str) -> dict[str, str]:
        if self.group is None:
            return {"pk": message_pk(queue, client, self.shard), "sk": self.sequence}
        return {"pk": group_messages_pk(queue, client, self.group), "sk": self.sequence}

    def dlq_key(self, queue: str, client: str) -> dict[str, str]:
        if self.group is None:
            return {"pk": dlq_pk(queue, client, self.shard), "sk": self.sequence}
        return {"pk": dlq_pk(queue, client, 0), "sk": f"{_b64(self.group)}.{self.sequence}"}

    @classmethod
    def parse(cls, message_id: str) -> MessageRef:
        try:
            kind, head, sequence = message_id[0], *message_id[1:].split(".", 1)
            if not sequence.isalnum():
                raise ValueError(message_id)
            if kind == "S":
                return cls(shard=int(head), sequence=sequence)
            if kind == "F" and sequence.isdigit():
                return cls(shard=0, sequence=sequence, group=_unb64(head))
        except (ValueError, IndexError, UnicodeDecodeError):
            pass
        raise ValidationError(f"message_id {message_id[:100]!r} is not a message id of this queue")

    @classmethod
    def from_dlq_sk(cls, sk: str, shard: int, fifo: bool) -> MessageRef:
        if not fifo:
            return cls(shard=shard, sequence=sk)
        head, sequence = sk.split(".", 1)
        return cls(shard=0, sequence=sequence, group=_unb64(head))
