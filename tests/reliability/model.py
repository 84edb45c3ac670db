"""A small in-memory reference of one sub-queue's contract, to run beside the real one.

It knows what the contract promises and nothing of DynamoDB: which messages are visible, who holds which (by
claim token), what each receipt handle may still do, when a message goes to the DLQ, what a redrive and a purge
do, and what `stats()` must say. Where the contract leaves a choice to the implementation (which FIFO groups a
receive serves, the random backoff of a release), the reference checks that the choice was allowed and then
adopts it; everywhere else it predicts exactly.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from queue_core import Message as QueueMessage
from queue_core import QueueStats, ReceivedMessage

from tests.reliability.ledger import receipt_token

BACKOFF_BASE_SECONDS = 1
BACKOFF_MAX_SECONDS = 900


class Disagreement(AssertionError):
    """The queue did something its contract does not allow."""


@dataclass
class Message:
    body: str
    seq: int  # the order of the sequence: send order for standard, the group's sequence for FIFO
    sent_ms: int
    group: str | None
    visible_at: int
    message_id: str = ""
    receive_count: int = 0
    token: str | None = None
    in_flight: bool = False
    released_by: str | None = None  # the claim that last gave it back, until it is received again
    parked: bool = False  # FIFO: given back by a visibility of 0 while its claim holds others (still the claim's)
    dlq_copy: int = 0  # which stay in the DLQ this is: a DLQ handle acts only on the copy it was read from


@dataclass
class Group:
    name: str
    messages: list[Message] = field(default_factory=list)
    last_seq: int = 0
    available_at: int = 0
    token: str | None = None
    acked: set[str] = field(default_factory=set)  # the bodies the claim is done with (once each)
    retry_at: int | None = None
    unlocked_by: str | None = None  # the claim whose last ack freed the group


@dataclass(frozen=True)
class Handle:
    """A receipt handle the test holds, with what the handle itself says."""

    body: str
    handle: str
    token: str
    receive_count: int
    held: int
    last_seq: str
    message_id: str

    @classmethod
    def of(cls, message: ReceivedMessage) -> Handle:
        payload = message.receipt_handle.split(".", 1)[0]
        fields = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode().split("|")
        return cls(
            message.body,
            message.receipt_handle,
            receipt_token(message.receipt_handle),
            message.receive_count,
            int(fields[6]),
            fields[7],
            message.message_id,
        )


Outcome = tuple[str, object]  # ("ok", value) or ("error", code)


class Reference:
    def __init__(self, fifo: bool, visibility: int, max_receive_count: int, dedup_window: int) -> None:
        self.fifo = fifo
        self.visibility = visibility
        self.max_receive_count = max_receive_count
        self.dedup_window_ms = dedup_window * 1000
        self.live: dict[str, Message] = {}
        self.dlq: dict[str, Message] = {}
        self.groups: dict[str, Group] = {}
        self.dedup: dict[str, tuple[str, int]] = {}
        self.ids: dict[str, str] = {}
        self.group_names: dict[str, str] = {}
        self._next_seq = 0
        self._dlq_copies = 0
        # The latest claim of each DLQ copy (by a receive over SQS): its number and when it ends.
        self.dlq_claims: dict[int, tuple[int, int]] = {}

    # Helpers.
    def _over_limit(self, message: Message) -> bool:
        return bool(self.max_receive_count) and message.receive_count >= self.max_receive_count

    def _group_of(self, message: Message) -> Group:
        assert message.group is not None
        return self.groups[message.group]

    def _append(self, body: str, group_name: str, sent_ms: int, now: int) -> Message:
        group = self.groups.setdefault(group_name, Group(group_name))
        if not group.messages:
            group.available_at = now
        group.last_seq += 1
        message = Message(body, group.last_seq, sent_ms, group_name, now)
        group.messages.append(message)
        self.live[body] = message
        return message

    # Sending.
    def send(self, body: str, group: str | None, delay: int, dedup_id: str | None, now: int) -> tuple[bool, str | None]:
        """(duplicate, the first message's id when it is one)."""
        if dedup_id is not None:
            first = self.dedup.get(dedup_id)
            if first is not None and now < first[1]:
                return True, first[0]
        if group is not None:
            self.group_names[body] = group
            self._append(body, group, now, now)
        else:
            self._next_seq += 1
            self.live[body] = Message(body, self._next_seq, now, None, now + delay * 1000)
        return False, None

    def sent(self, body: str, message_id: str, dedup_id: str | None, now: int) -> None:
        """What the implementation named the message just stored."""
        self.ids[body] = message_id
        self.live[body].message_id = message_id
        if dedup_id is not None:
            self.dedup[dedup_id] = (message_id, now + self.dedup_window_ms)

    # Receiving: standard queues are predicted exactly.
    def receive_standard(self, want: int, visibility: int | None, order: str, now: int) -> tuple[list[str], list[str]]:
        """(bodies claimed in the order returned, bodies moved to the DLQ on the way), for one shard: up to three
        index pages of `need + max(1, need // 2)` visible entries each (`shards.ConflictGauge.window`: one more
        at least, so that a receive knows whether it took its shard's last), over-limit entries moved, the rest
        claimed."""
        entries = sorted(
            (m for m in self.live.values() if m.visible_at <= now),
            key=lambda m: (m.visible_at, m.seq),
            reverse=order == "newest",
        )
        got: list[str] = []
        moved: list[str] = []
        position = 0
        for _ in range(3):
            need = want - len(got)
            page = entries[position : position + need + max(1, need // 2)]
            position += len(page)
            candidates = []
            for message in page:
                if self._over_limit(message):
                    moved.append(message.body)
                else:
                    candidates.append(message.body)
            got += candidates[:need]
            if len(got) >= want or position >= len(entries):
                break
        return got, moved

    def check_sharded_receive(
        self, received: list[ReceivedMessage], moved: list[str], want: int, order: str, now: int, exact: bool = True
    ) -> None:
        """Checks a standard receive from several shards, which it visits in an order of its own choosing: from
        each shard it visited, the first deliverable messages in that shard's own order, the over-limit ones it
        passed on the way moved to the DLQ; and something, when something deliverable was visible and nothing
        over its limit stood in the way. Not `exact` (the index lags, so a receive sees it as it was a moment
        ago): only deliverable messages, each once, and only visible ones over their limit moved."""
        visible = sorted(
            (m for m in self.live.values() if m.visible_at <= now),
            key=lambda m: (m.visible_at, m.seq),
            reverse=order == "newest",
        )
        bodies = [message.body for message in received]
        if len(bodies) > want or len(set(bodies)) != len(bodies):
            raise Disagreement(f"asked for {want}, received {bodies}")
        for body in moved:
            message = self.live.get(body)
            if message is None or message.visible_at > now or not self._over_limit(message):
                raise Disagreement(f"{body} moved to the DLQ while not visible or under its receive limit")
        if not exact:
            strays = [body for body in bodies if body not in {m.body for m in visible}]
            if strays or any(self._over_limit(self.live[m.body]) for m in received):
                raise Disagreement(f"received {bodies}: {strays} not visible, or one past its receive limit")
            return
        for shard in {_shard(message.message_id) for message in received}:
            in_shard = [m for m in visible if _shard(m.message_id) == shard]
            got = [message.body for message in received if _shard(message.message_id) == shard]
            deliverable = [m.body for m in in_shard if not self._over_limit(m)]
            if got != deliverable[: len(got)]:
                raise Disagreement(f"shard {shard} gave {got}, its first deliverable are {deliverable[: len(got)]}")
            passed = in_shard[: [m.body for m in in_shard].index(got[-1])]
            skipped = [m.body for m in passed if self._over_limit(m) and m.body not in moved]
            if skipped:
                raise Disagreement(f"shard {shard}: {skipped} passed over but not moved to the DLQ")
        if not received and any(not self._over_limit(m) for m in visible) and not any(map(self._over_limit, visible)):
            raise Disagreement("deliverable messages were visible, none over its limit, yet the receive found none")

    def saw_ids(self, messages: list[QueueMessage]) -> None:
        """Message ids as the queue shows them now (a redrive may move a message to another shard, so its id)."""
        for message in messages:
            if message.body in self.live:
                self._same_id(self.live[message.body], message.message_id)
                self.live[message.body].message_id = message.message_id

    def claimed_standard(
        self, received: list[ReceivedMessage], moved: list[str], visibility: int | None, now: int
    ) -> None:
        for body in moved:
            self._to_dlq(body)
        seconds = self.visibility if visibility is None else visibility
        for message in received:
            model = self.live[message.body]
            model.receive_count += 1
            model.visible_at = now + seconds * 1000
            model.token = receipt_token(message.receipt_handle)
            model.released_by = None
            model.in_flight = True
            model.message_id = message.message_id
            if message.receive_count != model.receive_count:
                raise Disagreement(f"{message.body}: receive count {message.receive_count}, {model.receive_count} due")

    # Receiving: FIFO receives are checked, then adopted.
    def _available(self, group: Group, now: int) -> bool:
        return bool(group.messages) and group.available_at <= now

    def fifo_receivable(self, now: int) -> bool:
        """True when every group with messages is available with a deliverable head, so a receive must find one."""
        groups = [group for group in self.groups.values() if group.messages]
        return bool(groups) and all(
            self._available(group, now) and not self._over_limit(group.messages[0]) for group in groups
        )

    def claimed_fifo(
        self, received: list[ReceivedMessage], newly_dead: set[str], visibility: int | None, now: int
    ) -> None:
        """Checks and applies one FIFO receive: messages moved to the DLQ must have been over their limit at the
        head of an available group; each group served must have been available and give its head first."""
        touched: set[str] = set()
        for group in self.groups.values():
            dead_here = [m for m in group.messages if m.body in newly_dead]
            if not dead_here:
                continue
            if not self._available(group, now):
                raise Disagreement(f"group {group.name!r} moved messages to the DLQ while it was held")
            if [m.body for m in group.messages[: len(dead_here)]] != [m.body for m in dead_here]:
                raise Disagreement(f"group {group.name!r}: only its head may move to the DLQ")
            if not all(self._over_limit(m) for m in dead_here):
                raise Disagreement(f"group {group.name!r}: a message under its receive limit moved to the DLQ")
            for message in dead_here:
                self._to_dlq(message.body)
            touched.add(group.name)
        served: dict[str, list[ReceivedMessage]] = {}
        for message in received:
            if message.group_id is None:
                raise Disagreement(f"{message.body} came without its group")
            served.setdefault(message.group_id, []).append(message)
        seconds = max(self.visibility if visibility is None else visibility, 1)
        for name, messages in served.items():
            group = self.groups.get(name)
            if group is None or not self._available(group, now):
                raise Disagreement(f"group {name!r} served while it was held or empty")
            expected = [m.body for m in group.messages[: len(messages)]]
            if [m.body for m in messages] != expected:
                raise Disagreement(f"group {name!r} served {[m.body for m in messages]}, its head is {expected}")
            token = receipt_token(messages[0].receipt_handle)
            group.token, group.available_at, group.acked, group.retry_at = token, now + seconds * 1000, set(), None
            for message in messages:
                model = self.live[message.body]
                if self._over_limit(model):
                    raise Disagreement(f"{message.body} delivered past its receive limit")
                model.receive_count += 1
                self._same_id(model, message.message_id)
                model.token, model.message_id = token, message.message_id
                model.released_by, model.parked = None, False
                if message.receive_count != model.receive_count:
                    raise Disagreement(
                        f"{message.body}: receive count {message.receive_count}, due {model.receive_count}"
                    )
        for name in touched - set(served):
            group = self.groups[name]
            group.token, group.available_at, group.unlocked_by = None, now, None

    def _same_id(self, model: Message, message_id: str) -> None:
        """A FIFO message keeps its id while it stays in its group: only a redrive (a new message here, its id not
        known yet) gives it another. So a handle whose id is not its message's (`_named`) is one from before a
        redrive, never one the queue renamed its message under."""
        if self.fifo and model.message_id and model.message_id != message_id:
            raise Disagreement(f"{model.body}: id {message_id}, {model.message_id} before, with no redrive between")

    # Settling.
    def _named(self, handle: Handle) -> Message | None:
        """The live message the handle names. A FIFO message's id is its place in its group, so a redrive, which
        puts it at the group's end, gives it a new id; a standard message keeps its id unless its shard is gone
        (the count was lowered since it went to the DLQ), when it is redriven into another under a new one. To a
        handle from before, the message it named is then gone (its delete finds nothing to do, its release
        nothing to give back), as to one whose message was deleted; otherwise such a handle is only stale."""
        message = self.live.get(handle.body)
        if message is not None and message.message_id != handle.message_id:
            return None
        return message

    def delete(self, handle: Handle, now: int) -> Outcome:
        message = self._named(handle)
        if message is None:
            return ("ok", None)
        if message.token != handle.token:
            return ("error", "ReceiptHandleStale")
        del self.live[handle.body]
        if message.group is not None:
            group = self._group_of(message)
            group.messages.remove(message)
            self._ack(group, handle, now, removed=True)
        return ("ok", None)

    def release(self, handle: Handle, delay: int | None, now: int, answered: int | None) -> Outcome:
        message = self._named(handle)
        if message is None:
            return ("error", "MessageNotFound")
        # A parked message is given back already: stale once its claim no longer holds the group, and nothing
        # more while it does. A FIFO message whose claim's lock ran out and was ended by the sweep (its group freed
        # for the next receive) is stale too: its release cannot hold the group back any more.
        parked = message.parked
        freed = message.group is not None and self._group_of(message).token != handle.token
        if message.token != handle.token or freed:
            return ("error", "ReceiptHandleStale")
        if delay is None:
            ceiling = min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (handle.receive_count - 1)) * 1000
            if answered is None or not now + ceiling / 2 - 1 <= answered <= now + ceiling:
                raise Disagreement(f"release backoff of {handle.body}: visible at {answered}, due within the backoff")
            visible_at = answered
        else:
            visible_at = now + delay * 1000
        if parked:
            return ("ok", visible_at)
        message.token, message.released_by = None, handle.token
        if message.group is None:
            message.visible_at, message.in_flight = visible_at, False
        else:
            self._ack(self._group_of(message), handle, visible_at, removed=False)
        return ("ok", visible_at)

    def released_by(self, handle: Handle) -> bool:
        """Whether this handle's claim gave the message back and nobody received it since: a release with it again
        is stale, unless its answer was lost and the SDK sent it again, when it cannot tell its own first attempt
        from the earlier release (either answer is then allowed, and neither may change anything)."""
        message = self.live.get(handle.body)
        return message is not None and message.token is None and message.released_by == handle.token

    def change_visibility(self, handle: Handle, seconds: int, now: int) -> Outcome:
        """A standard handle moves its message's visibility; a FIFO one its group's lock (`_fifo_visibility`)."""
        visible_at = now + seconds * 1000
        if self.fifo:
            return self._fifo_visibility(handle, visible_at, now)
        message = self._named(handle)
        if message is None:
            return ("error", "MessageNotFound")
        if message.token != handle.token:
            return ("error", "ReceiptHandleStale")
        message.visible_at = visible_at
        return ("ok", visible_at)

    def _fifo_visibility(self, handle: Handle, visible_at: int, now: int) -> Outcome:
        """Only while the handle's own message is held by it (not deleted, given back, or taken by a later claim)
        and its claim holds the group. One of several held given back now (0) is parked: it stays the claim's (its
        handle still deletes it) and the group is acked for it, so it waits for the others; a repeat once the
        group is free again is done already. One of several held for longer moves the lock only later, until it
        is the last one out; a claim of one moves it anywhere."""
        group = self.groups[self.group_names[handle.body]]
        parks = handle.held > 1 and visible_at <= now
        message = self._named(handle)
        if message is None:
            return ("error", "MessageNotFound" if parks else "ReceiptHandleStale")
        if message.token != handle.token:
            return ("error", "ReceiptHandleStale")
        if group.token != handle.token:
            done = parks and group.token is None and group.unlocked_by == handle.token
            return ("ok", visible_at) if done else ("error", "ReceiptHandleStale")
        if parks:
            message.parked = True
            self._ack(group, handle, now, removed=False)
        elif handle.held > 1 and len(group.acked) < handle.held - 1:
            group.available_at = max(group.available_at, visible_at)
        else:
            group.available_at = visible_at
        return ("ok", visible_at)

    def _ack(self, group: Group, handle: Handle, at: int, removed: bool) -> None:
        """One held message of a FIFO claim is done (once: a parked message settled later adds nothing); the last
        one unlocks the group, at the latest time any of them was given back for."""
        if group.token != handle.token:
            return
        if handle.held <= 1:
            group.token, group.available_at, group.unlocked_by = None, at, handle.token
            return
        if handle.body in group.acked:
            return
        group.acked.add(handle.body)
        group.retry_at = at if group.retry_at is None else max(group.retry_at, at)
        if len(group.acked) >= handle.held:
            group.token, group.available_at, group.unlocked_by = None, max(at, group.retry_at), handle.token

    # Housekeeping.
    def _to_dlq(self, body: str) -> None:
        message = self.live.pop(body)
        message.token, message.in_flight = None, False
        if message.group is not None:
            self._group_of(message).messages.remove(message)
        self._dlq_copies += 1
        message.dlq_copy = self._dlq_copies
        self.dlq[body] = message

    def dlq_copy(self, body: str) -> int:
        """The DLQ copy a handle read now acts on."""
        return self.dlq[body].dlq_copy

    def dlq_claimable(self, now: int) -> set[str]:
        """The dead letters a DLQ receive may answer: those no live claim holds; in a FIFO DLQ, none of a group
        while any of its dead letters is held (one holder per group)."""
        free = {body for body, message in self.dlq.items() if self.dlq_claims.get(message.dlq_copy, (0, 0))[1] <= now}
        if not self.fifo:
            return free
        held_groups = {message.group for body, message in self.dlq.items() if body not in free}
        return {body for body in free if self.dlq[body].group not in held_groups}

    def dlq_claim(self, body: str, claim: int, until: int) -> int:
        """A DLQ receive claims the dead letter's copy until `until`; the copy claimed."""
        copy = self.dlq[body].dlq_copy
        self.dlq_claims[copy] = (claim, until)
        return copy

    def dlq_delete(self, body: str, copy: int, claim: int | None = None) -> bool:
        """A DLQ handle removes the copy it was read from, if it is still there; never the live message, nor a
        later copy of the same message (redriven, then dead-lettered again). A claim's handle (`claim`) only while
        that claim is the copy's latest."""
        message = self.dlq.get(body)
        if message is None or message.dlq_copy != copy:
            return False
        if claim is not None and self.dlq_claims.get(copy, (None, 0))[0] != claim:
            return False
        del self.dlq[body]
        return True

    def sweep(self, now: int) -> None:
        if not self.fifo:
            for message in sorted(self.live.values(), key=lambda m: m.seq):
                if message.visible_at <= now and self._over_limit(message):
                    self._to_dlq(message.body)
            return
        for group in self.groups.values():
            if group.token is not None and group.messages and group.available_at <= now:
                if self._over_limit(group.messages[0]):
                    self._to_dlq(group.messages[0].body)
                group.token, group.available_at, group.unlocked_by = None, now, None

    def redrive(self, max_messages: int | None, now: int) -> list[str]:
        """The bodies moved back, in the DLQ's own order (sequence; for FIFO, group then sequence)."""
        if self.fifo:
            order = sorted(self.dlq.values(), key=lambda m: (_b64(m.group or ""), m.seq))
        else:
            order = sorted(self.dlq.values(), key=lambda m: m.seq)
        chosen = order if max_messages is None else order[:max_messages]
        for message in chosen:
            del self.dlq[message.body]
            if message.group is None:
                message.visible_at, message.receive_count, message.token, message.in_flight = now, 0, None, False
                self.live[message.body] = message
            else:
                self._append(message.body, message.group, message.sent_ms, now)
        return [message.body for message in chosen]

    def purge(self) -> int:
        purged = len(self.live)
        self.live.clear()
        for group in self.groups.values():
            group.messages.clear()
            group.token, group.acked, group.retry_at, group.available_at = None, set(), None, 0
        return purged

    # Looking.
    def stats(self, now: int) -> QueueStats:
        visible = in_flight = delayed = 0
        oldest: int | None = None
        if self.fifo:
            for group in self.groups.values():
                count = len(group.messages)
                if not count:
                    continue
                if group.available_at <= now:
                    visible += count
                elif group.token is not None:
                    in_flight, visible = in_flight + 1, visible + count - 1
                else:
                    delayed += count
                head = group.messages[0].sent_ms
                oldest = head if oldest is None else min(oldest, head)
        else:
            for message in self.live.values():
                if message.visible_at <= now:
                    visible += 1
                elif message.in_flight:
                    in_flight += 1
                else:
                    delayed += 1
                oldest = message.sent_ms if oldest is None else min(oldest, message.sent_ms)
        age = None if oldest is None else max(0, (now - oldest) // 1000)
        return QueueStats(visible, in_flight, delayed, len(self.dlq), age)

    def peek(self, now: int) -> list[str]:
        """Receivable bodies: standard in index order; FIFO (as a sorted list) every message of available groups."""
        if self.fifo:
            return sorted(m.body for g in self.groups.values() if g.available_at <= now for m in g.messages)
        visible = sorted((m for m in self.live.values() if m.visible_at <= now), key=lambda m: (m.visible_at, m.seq))
        return [m.body for m in visible]

    def browse(self, now: int) -> dict[str, tuple[str, int | None]]:
        """Every waiting message's state and until when it lasts, as a browse must tell it: standard, from the
        message's own claim; FIFO, in flight while its group is held by the claim that took it (until the group's
        lock ends), visible otherwise (FIFO messages here are never delayed)."""
        states: dict[str, tuple[str, int | None]] = {}
        for body, message in self.live.items():
            if message.group is not None:
                group = self._group_of(message)
                held = message.token is not None and message.token == group.token and group.available_at > now
                states[body] = ("in_flight", group.available_at) if held else ("visible", None)
            elif message.visible_at <= now:
                states[body] = ("visible", None)
            else:
                states[body] = ("in_flight" if message.in_flight else "delayed", message.visible_at)
        return states

    def dead(self) -> set[tuple[str, int]]:
        return {(body, message.receive_count) for body, message in self.dlq.items()}


def _shard(message_id: str) -> int:
    """The shard of a standard message id (`S{shard}.{sequence}`)."""
    return int(message_id[1:].split(".", 1)[0])


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
