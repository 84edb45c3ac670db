"""Key formats of every item type. The only place that knows how keys and message ids are spelled.

Queue and client names are restricted to `A-Za-z0-9_-` (and `.fifo`), so `#` is a safe separator, and every key of
a sub-queue starts with `{kind}#{queue}#{client}#`: IAM's `dynamodb:LeadingKeys` can confine a tenant to its own
sub-queue with one literal prefix per kind. A queue's *generation* (a random id drawn when the queue is created)
follows the client in every message key, so a queue deleted and created again under the same name never sees the
old incarnation's leftovers: they are unreachable, and removed by the delete, the sweeper and TTL.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Final

from .clock import fixed_ms
from .errors import ValidationError
from .limits import DEDUP_BUCKETS

REGISTRY_PK = "REGISTRY"
SETTINGS_SK = "Q"
GROUP_SEQ_WIDTH = 20
INDEX_UPPER = "\x7f"  # sorts after every character a sequence or a group id may hold
_LISTING_PREFIX = "Q#"
_TOMBSTONE_PREFIX = "T#"
_LINK_PREFIX = "D#"


def new_generation() -> str:
    return secrets.token_hex(4)


# The registry: one settings item per queue (readable by the queue's tenants, holds no secret), a listing entry
# per queue and a tombstone per deleted incarnation (the queue's own functions only), and one registration per
# client and generation (a tenant's own: it holds the sub-queue's receipt-signing secret).
def settings_key(queue: str) -> dict[str, str]:
    return {"pk": f"Q#{queue}", "sk": SETTINGS_SK}


def layout_key() -> dict[str, str]:
    """The table's layout record (`layout`): a partition of its own, which every process may read, tenants too."""
    return {"pk": "META", "sk": "LAYOUT"}


def sweep_lease_key() -> dict[str, str]:
    return {"pk": REGISTRY_PK, "sk": "LEASE#sweep"}


def consumer_slot_key(queue: str, client: str, slot: int) -> dict[str, str]:
    """One of the `max_concurrency` places a push consumer's dispatchers hold while they deliver."""
    return {"pk": f"P#{queue}#{client}", "sk": str(slot)}


def message_partition_prefixes(queue: str, client: str) -> tuple[str, str]:
    """What every partition key of a sub-queue's live messages starts with, whatever the generation: standard
    messages (`M#`) and FIFO group messages (`G#`). A send is an insert under one of them; a claim, a release or
    a FIFO group item's change is not."""
    return f"M#{queue}#{client}#", f"G#{queue}#{client}#"


def sub_queue_of(pk: str) -> tuple[str, str] | None:
    """The `(queue, client)` of a live message partition key, None for any other key."""
    parts = pk.split("#")
    if len(parts) < 4 or parts[0] not in ("M", "G"):
        return None
    return parts[1], parts[2]


def listing_key(queue: str) -> dict[str, str]:
    return {"pk": REGISTRY_PK, "sk": f"{_LISTING_PREFIX}{queue}"}


def tombstone_key(queue: str, generation: str) -> dict[str, str]:
    return {"pk": REGISTRY_PK, "sk": f"{_TOMBSTONE_PREFIX}{queue}#{generation}"}


def listing_prefix() -> str:
    return _LISTING_PREFIX


def tombstone_prefix() -> str:
    return _TOMBSTONE_PREFIX


def dead_letter_link_key(target: str, source: str) -> dict[str, str]:
    """The registry entry saying that `source` names `target` as its dead-letter target: one query of the prefix
    (`dead_letter_links_prefix`) lists a target's sources."""
    return {"pk": REGISTRY_PK, "sk": f"{_LINK_PREFIX}{target}#{source}"}


def dead_letter_links_prefix(target: str) -> str:
    return f"{_LINK_PREFIX}{target}#"


def client_registration_key(queue: str, client: str, generation: str) -> dict[str, str]:
    return {"pk": f"C#{queue}#{client}", "sk": generation}


def clients_index_pk(queue: str, generation: str) -> str:
    """The index partition that lists a generation's clients (the registrations' `gsi1pk`)."""
    return f"C#{queue}#{generation}"


def group_seq(number: int) -> str:
    return f"{number:0{GROUP_SEQ_WIDTH}d}"


def stable_hash(text: str) -> int:
    """A hash that is the same in every process (Python's `hash` is salted per process)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def group_shard(group: str, shards: int) -> int:
    return stable_hash(group) % shards


def object_prefix_of(pk: str) -> str:
    """The bucket prefix of the sub-queue a message partition key (`{kind}#{queue}#{client}#{generation}#…`)
    belongs to: `Space.object_prefix` of its space."""
    _, queue, client, generation = pk.split("#", 4)[:4]
    return Space(queue, client, generation).object_prefix()


def shard_of(pk: str) -> int:
    """The shard a message, DLQ or group-item partition key ends with."""
    return int(pk.rsplit("#", 1)[1])


def index_sk(at_ms: int, tail: str) -> str:
    """An index sort key: fixed-width milliseconds, so that entries sort by time, then by `tail`."""
    return f"{fixed_ms(at_ms)}#{tail}"


def index_upper(now_ms: int) -> str:
    """The highest index sort key of an entry that is due at `now_ms`."""
    return index_sk(now_ms, INDEX_UPPER)


def index_time(gsi1sk: str) -> int:
    return int(message_index_parts(gsi1sk)[1])


# Priorities. A standard message of priority 0 keeps the index key `{visible_at}#{sequence}`; priority p > 0 is
# `P{p}#{visible_at}#{sequence}` in the same index partition. Each priority is its own range of that partition,
# ordered by time inside it: a receive reads one priority's due range at a time, highest first, and never reads a
# lower one it does not need. Digits sort before `P`, so the priority-0 range is what it always was.
def band_prefix(priority: int) -> str:
    return f"P{priority}#" if priority else ""


def message_index_sk(at_ms: int, sequence: str, priority: int = 0) -> str:
    return band_prefix(priority) + index_sk(at_ms, sequence)


def message_index_parts(gsi1sk: str) -> tuple[int, str, str]:
    """(priority, visible_at text, sequence or group) of a message or group index key."""
    priority = 0
    if gsi1sk.startswith("P"):
        head, gsi1sk = gsi1sk.split("#", 1)
        priority = int(head[1:])
    at, tail = gsi1sk.split("#", 1)
    return priority, at, tail


def band_due_range(priority: int, now_ms: int) -> tuple[str, str]:
    """The index keys of a priority's entries due by `now_ms` (low and high, inclusive)."""
    return band_prefix(priority), band_prefix(priority) + index_upper(now_ms)


def band_range(priority: int) -> tuple[str, str]:
    """Every index key of a priority (low and high, inclusive), due or not."""
    if priority:
        return band_prefix(priority), f"P{priority}#{INDEX_UPPER}"
    return "", "9" + INDEX_UPPER


# The set of clients with messages: ready markers. A marker `R#{queue}#{client}#{generation}` / `{priority}` says
# "this client may have visible messages of this priority now"; `{priority}@{time}` says "from this time". Their
# index entries share one partition per queue generation, `R#{queue}#{generation}`, keyed `{time}#{9 - p}#{client}`
# with time 0 for markers that are ready now: a queue-wide receive reads the due ones, highest priority first,
# and never an idle client's. Markers carry nothing that changes, so writing one that exists costs one write unit
# and no index write.
_NOW = 0


def ready_index_pk(queue: str, generation: str) -> str:
    return f"R#{queue}#{generation}"


def ready_index_sk(at_ms: int, priority: int, client: str) -> str:
    return f"{fixed_ms(at_ms)}#{9 - priority}#{client}"


def ready_now_upper() -> str:
    return index_upper(_NOW)


def ready_marker_parts(gsi1sk: str) -> tuple[int, int, str]:
    """(time, priority, client) of a ready marker's index key."""
    at, rank, client = gsi1sk.split("#", 2)
    return int(at), 9 - int(rank), client


def split_by_shards(pk: str) -> bool:
    """Whether a partition is one a shard count splits: a shard's standard messages or FIFO group items
    (`Space.message_pk`, `group_item_pk`), and so their index's. Any other holds the same items at any count (a FIFO
    group's own messages, the shard marks, dedup buckets, a FIFO queue's dead letters and their groups' record),
    and so do standard dead letters but for moves to the DLQ, too rare to size a queue by."""
    return pk.startswith(("M#", "F#")) and not pk.endswith("#dlq")


@dataclass(frozen=True)
class Space:
    """The partition keys of one sub-queue in one generation of its queue."""

    queue: str
    client: str
    generation: str

    def _prefix(self, kind: str) -> str:
        return f"{kind}#{self.queue}#{self.client}#{self.generation}#"

    def object_prefix(self) -> str:
        """Where the sub-queue's offloaded bodies live in the bucket: `{queue}/{client}/` first, so that IAM can
        confine a tenant to its own objects with one prefix, as `dynamodb:LeadingKeys` does in the table."""
        return f"{self.queue}/{self.client}/{self.generation}/"

    def message_pk(self, shard: int) -> str:
        return f"{self._prefix('M')}{shard}"

    def dlq_pk(self, shard: int) -> str:
        return f"{self._prefix('D')}{shard}"

    def group_item_pk(self, shard: int) -> str:
        return f"{self._prefix('F')}{shard}"

    def dlq_group_key(self, group: str) -> dict[str, str]:
        """The claim of a FIFO DLQ's group (`dead_letter_groups`): a FIFO group item, in a partition of the group
        items' kind that no live shard is named like."""
        return {"pk": self.dlq_groups_pk(), "sk": group}

    def dlq_groups_pk(self) -> str:
        return f"{self._prefix('F')}dlq"

    def group_messages_pk(self, group: str) -> str:
        return f"{self._prefix('G')}{group}"

    def load_pk(self) -> str:
        """The partition of the sub-queue's load reports (see `load_meter`), in the order they were made. Those of
        releases before them (an item per process, in `...#0`) are never read; their TTL removes them."""
        return f"{self._prefix('L')}1"

    def load_key(self, at_ms: int, reporter: str, number: int) -> dict[str, str]:
        """A process's report `number`, made at `at_ms`."""
        return {"pk": self.load_pk(), "sk": f"{fixed_ms(at_ms)}#{reporter}#{number}"}

    @staticmethod
    def load_from(at_ms: int) -> str:
        """The lowest sort key of a report made at `at_ms` or later."""
        return fixed_ms(at_ms)

    def archive_pk(self, bucket: int) -> str:
        """A partition of the sub-queue's archive of acknowledged messages, in acknowledgement order (`archive`)."""
        return f"{self._prefix('V')}{bucket}"

    def archive_index_pk(self, bucket: int) -> str:
        """An index partition that finds archived messages by id (`archive`)."""
        return f"{self._prefix('V')}i{bucket}"

    def replay_key(self, replay_id: str) -> dict[str, str]:
        """A replay of the sub-queue's archive (`replays`): in the archive's kind of partition, which the sub-queue's
        grants already reach, apart from its buckets (numbers) and index partitions (`i` and a number)."""
        return {"pk": self.replays_pk(), "sk": replay_id}

    def replays_pk(self) -> str:
        return f"{self._prefix('V')}replays"

    def dedup_key(self, dedup_id: str) -> dict[str, str]:
        return {"pk": f"{self._prefix('X')}{stable_hash(dedup_id) % DEDUP_BUCKETS}", "sk": dedup_id}

    def dedup_pks(self) -> list[str]:
        return [f"{self._prefix('X')}{bucket}" for bucket in range(DEDUP_BUCKETS)]

    def group_key(self, group: str, shard: int) -> dict[str, str]:
        return {"pk": self.group_item_pk(shard), "sk": group}

    def attempt_key(self, attempt_id: str, scope: str = "") -> dict[str, str]:
        """A FIFO receive's answer kept under its ReceiveRequestAttemptId (SQS protocol), for its repeats; spread
        over the buckets as dedup items are. A `scope` keeps the attempts of another URL of the sub-queue (its
        DLQ's) apart: SQS's attempt ids are printable characters without spaces, so the two never meet."""
        sk = f"{scope} {attempt_id}" if scope else attempt_id
        return {"pk": f"{self._attempt_prefix()}#{stable_hash(attempt_id) % DEDUP_BUCKETS}", "sk": sk}

    def attempt_pks(self) -> list[str]:
        """Every partition of the sub-queue's attempt records, the one of releases before the buckets first."""
        prefix = self._attempt_prefix()
        return [prefix, *(f"{prefix}#{bucket}" for bucket in range(DEDUP_BUCKETS))]

    def _attempt_prefix(self) -> str:
        return f"A#{self.queue}#{self.client}#{self.generation}"

    def registration_key(self) -> dict[str, str]:
        return client_registration_key(self.queue, self.client, self.generation)

    def ready_pk(self) -> str:
        return f"R#{self.queue}#{self.client}#{self.generation}"

    def shard_marks_pk(self) -> str:
        """The sub-queue's shard marks (`shard_marks`): one partition, read whole by a receive."""
        return f"{self._prefix('K')}shards"

    def shard_mark(self, priority: int, shard: int, at_ms: int) -> dict[str, object]:
        """The mark that says shard `shard` may hold messages of `priority` from `at_ms` on (0: now). The sort key
        puts a priority's marks together, so that a receive reads one priority's with one query."""
        return {
            "pk": self.shard_marks_pk(),
            "sk": f"{priority}#{shard:05d}#{fixed_ms(at_ms)}",
            "priority": priority,
            "shard": shard,
            "at": at_ms,
        }

    def ready_marker(self, priority: int, at_ms: int, now_ms: int) -> dict[str, object]:
        """The marker that makes this client's `priority` due for queue-wide receives at `at_ms` (now if past)."""
        at = _NOW if at_ms <= now_ms else at_ms
        sk = str(priority) if at == _NOW else f"{priority}@{fixed_ms(at)}"
        return {
            "pk": self.ready_pk(),
            "sk": sk,
            "gsi1pk": ready_index_pk(self.queue, self.generation),
            "gsi1sk": ready_index_sk(at, priority, self.client),
        }


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()


# The shape of every message id `MessageRef` spells, as the API documents it: `S{shard}.{sequence}` (with
# `-{priority}` after the shard for priorities 1-9), `F{base64url(group)}.{group sequence}`. An id of this shape that
# names no message of the queue (another queue's, a FIFO group that does not decode) is not found, not malformed.
# A replay's id (`replays`): its start time and a random part, so that a sub-queue's replays list newest first.
REPLAY_ID_PATTERN: Final = r"^[0-9]{13}-[0-9a-f]{12}$"
MESSAGE_ID_PATTERN: Final = r"^(S[0-9]{1,3}(-[1-9])?\.[0-9A-Za-z]{1,40}|F[A-Za-z0-9_-]{1,350}\.[0-9]{1,20})$"
_MESSAGE_ID: Final = re.compile(MESSAGE_ID_PATTERN)


def message_id_shaped(message_id: str) -> bool:
    return _MESSAGE_ID.fullmatch(message_id) is not None


@dataclass(frozen=True)
class MessageRef:
    """Where a message lives, decoded from its id: one call reaches it, no lookup item needed.

    Standard ids are `S{shard}.{sequence}`; FIFO ids are `F{base64url(group)}.{group sequence}`.
    """

    shard: int
    sequence: str
    group: str | None = None
    # A standard message's priority: part of its id, since its index key (where a change of visibility moves it)
    # depends on it. Priority 0 ids are spelt as they always were.
    priority: int = 0

    @property
    def message_id(self) -> str:
        if self.group is None:
            return (
                f"S{self.shard}-{self.priority}.{self.sequence}" if self.priority else f"S{self.shard}.{self.sequence}"
            )
        return f"F{_b64(self.group)}.{self.sequence}"

    def live_key(self, space: Space) -> dict[str, str]:
        if self.group is None:
            return {"pk": space.message_pk(self.shard), "sk": self.sequence}
        return {"pk": space.group_messages_pk(self.group), "sk": self.sequence}

    def dlq_key(self, space: Space) -> dict[str, str]:
        if self.group is None:
            return {"pk": space.dlq_pk(self.shard), "sk": self.sequence}
        return {"pk": space.dlq_pk(0), "sk": f"{_b64(self.group)}.{self.sequence}"}

    @classmethod
    def parse(cls, message_id: str) -> MessageRef:
        try:
            kind, head, sequence = message_id[0], *message_id[1:].split(".", 1)
            if not sequence.isalnum():
                raise ValueError(message_id)
            if kind == "S":
                shard, _, priority = head.partition("-")
                if priority and not 1 <= int(priority) <= 9:
                    raise ValueError(message_id)
                return cls(shard=int(shard), sequence=sequence, priority=int(priority or 0))
            if kind == "F" and sequence.isdigit():
                return cls(shard=0, sequence=sequence, group=_unb64(head))
        except (ValueError, IndexError, UnicodeDecodeError):
            pass
        raise ValidationError(f"message_id {message_id[:100]!r} is not a message id of this queue")

    @classmethod
    def of_live(cls, item: dict[str, object]) -> MessageRef:
        """The ref of a live standard message item or index entry."""
        priority = int(str(item.get("priority") or 0))
        if "gsi1sk" in item:
            priority = message_index_parts(str(item["gsi1sk"]))[0]
        return cls(shard=shard_of(str(item["pk"])), sequence=str(item["sk"]), priority=priority)

    @classmethod
    def from_dlq_sk(cls, sk: str, shard: int, fifo: bool, priority: int = 0) -> MessageRef:
        if not fifo:
            return cls(shard=shard, sequence=sk, priority=priority)
        head, sequence = sk.split(".", 1)
        return cls(shard=0, sequence=sequence, group=_unb64(head))
