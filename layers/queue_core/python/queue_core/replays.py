"""Replay: archived messages (see `archive`) sent into their sub-queue again as new messages, by a durable job.

A replay selects a time range of acknowledgements (its open end fixed at the replay's start, so messages the
replay itself brings back and that are acknowledged again are never selected by it), or a list of message ids (the
latest archived copy of each), either narrowed by a filter on attributes (every named attribute equal). Each new
message carries the archived one's body, attributes, types, group and priority, and the attribute `replayed_from`
(JSON: `{"message_id": the archived id, "replay_id": the replay's id}`); the queue's delay applies as to any send.

The job is one item (`Space.replay_key`; `store.replays`) that says where the replay stands in its selection:
`reached`, the place of the last message it handled (the archive's sort key `{acked_at}#{message_id}`, one order
over every bucket, or `i{n}` in a list of ids). **At most once per replay**: the new messages of a batch (up to
`BATCH`) are sent in one transaction with the job's move from the place it stood at when the batch was read to the
batch's last place, conditional on the job still running and still standing at the first of the two (a
compare-and-set, not "before": two runners whose pages differed would otherwise both pass their conditions). So a
message is in the queue if and only if the job moved past it in the same commit, and the job moves past each place
once:

- a commit whose answer was lost is sent again by `transactions.commit` and the SDK with its client request token
  (DynamoDB answers the first commit's outcome, applied once); once every answer was lost the run stops, and a
  resumed run reads the job afresh: it stands past the batch if the commit applied (nothing is sent again), before
  it otherwise (the batch is sent now, once);
- a repeat the SDK sent without DynamoDB knowing its token fails the condition: the job stands at the batch's end,
  which is our own commit, recognised as such (its messages' ready markers are put then);
- a second runner, or a stale one, fails the condition and goes on from where the job stands;
- a cancel moves the job out of running: every later commit fails, so the final count is exact.

Each new message also gets a dedup id drawn from (replay id, archived copy), so a FIFO queue with content-based
dedup never takes it for a duplicate of the original (whose body it repeats). On a FIFO queue the messages go
through the queue's own send, so each group keeps its one place and one sequence (a fence moved by another sender
is built again by `transactions.commit`); a batch holds at most one message per group, and the selection's order
(acknowledgement order, in which a group's messages were acknowledged) is each group's order.

Crash anywhere: nothing is lost. The job is the only state; a run can stop after any write, and the next run
(`run` again, by anyone holding the grant) goes on from `reached`. There is no lease: runners that overlap waste
requests, never duplicate. Nobody has to come back: a running replay whose job has not moved for
`ORPHANED_SECONDS` (its runner closed, crashed or spent its seconds) is found by the sweep (`orphaned`, one Query
of the sub-queue's newest replays, only for a queue that keeps an archive) and run on within the sweep's time
(`SWEEP_SLICE_SECONDS` at most a pass), so a replay started with `run_seconds` 0 ends by itself, as SQS's move
tasks do. A runner that is only slow at a low rate is not taken for gone: the wait is at least three of its
batches.

Rate: at most `rate` new messages a second of the run (a batch waits its turn), default `DEFAULT_RATE`, at most
`limits.MAX_REPLAY_RATE`. A replay at rate R adds R sends a second to its sub-queue, whose life writes each shard's
key about 4 units a message (1 KB): an automatic queue grows by itself when the replay and the live traffic pass
`autoshard.GROW_AT` of a key's 1,000 units; a queue of a fixed count carries about 62 messages a second a shard at
`autoshard.SIZE_FOR` (a quarter of a key's limit), so a replay at R beside live traffic L wants about (R + L) / 62
shards; the hard floor is R / 300 (`bench.scenarios.replay`: one shard took about 330 replayed messages a second at
its key's limit, the send writing the key about 3 units in its transaction). The job item takes one transactional
update per batch (R / 10 a second), far from its key's limit.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from . import archive, dead_letter_replays, limits
from .clock import fixed_ms
from .context import Context
from .errors import (
    DuplicateMessage,
    MessageBodyMissing,
    MessageNotFound,
    MessageTooLarge,
    QueueError,
    TransactionConditionFailed,
    ValidationError,
)
from .keys import REPLAY_ID_PATTERN, Space, message_id_shaped
from .models import ArchivedMessage, Message, ReplayStatus
from .settings import QueueSettings
from .store import ConditionFailed, Item, Write
from .store import replays as jobs
from .transactions import TransactSend, commit

BATCH: Final = 10
PAGE: Final = 100
DEFAULT_RATE: Final = 100
REPLAYED_FROM: Final = "replayed_from"
START: Final = "start"
ARCHIVE: Final = "archive"
SOURCES: Final = (ARCHIVE, dead_letter_replays.SOURCE)
# As a redrive's: a reason's group is named by its text, up to a reason's bound.
_REASON_CHARS: Final = 2048
_REPLAY_ID: Final = re.compile(REPLAY_ID_PATTERN)
_KEEP_DAYS: Final = 90
_DAY_SECONDS: Final = 86_400
_ERROR_CHARS: Final = 500
# A running replay whose job has not moved for this long has no runner (see `orphaned`).
ORPHANED_SECONDS: Final = 60
# The sweep's run of an orphaned replay: at most this long a pass, within the pass's time left.
SWEEP_SLICE_SECONDS: Final = 20
# Of a sub-queue's replays, the newest this many are looked at for orphans (one Query page).
ORPHANS_LOOKED_AT: Final = 20


class Target(Protocol):
    """The sub-queue replayed into: its settings, keys and transactional send."""

    @property
    def settings(self) -> QueueSettings: ...

    @property
    def space(self) -> Space: ...

    def send_transact_items(self, body: str, **options: Any) -> TransactSend: ...


@dataclass(frozen=True)
class Selection:
    since: int | None
    until: int | None
    message_ids: list[str] | None
    attributes: dict[str, str]
    source: str = ARCHIVE
    reason: str | None = None

    def matches(self, message: ArchivedMessage | Message) -> bool:
        return all(message.attributes.get(name) == value for name, value in self.attributes.items())


@dataclass(frozen=True)
class _Pick:
    """One place of the selection: the message there (None: nothing to replay), the identity of the copy it was
    read from (the new message's dedup id is drawn from it) and, from the DLQ, that copy's removal."""

    place: str
    message: ArchivedMessage | Message | None
    copy: str
    removal: Write | None = None
    item: Item | None = None


def selection(
    since: Any, until: Any, message_ids: Any, attributes: Any, now: int, source: Any = None, reason: Any = None
) -> Selection:
    """The replay's selection as given, checked: a time range (open ends allowed; `until` no later than now) or
    message ids (distinct, in the order given), either with an optional filter on attributes. From the DLQ
    (`source` "dlq"): a time range of when they died, optionally of one last reason (`reason`, text it contains)."""
    source = ARCHIVE if source is None else source
    if source not in SOURCES:
        raise ValidationError(f"source must be one of {', '.join(SOURCES)}")
    if reason is not None:
        if source != dead_letter_replays.SOURCE:
            raise ValidationError('reason selects dead letters: give it with source "dlq"')
        if not isinstance(reason, str) or not 1 <= len(reason) <= _REASON_CHARS:
            raise ValidationError(f"reason must be a string of 1 to {_REASON_CHARS} characters")
    since, until = archive.time_bound("since", since), archive.time_bound("until", until)
    if message_ids is not None and source != ARCHIVE:
        raise ValidationError("message_ids select archived messages: a replay of the DLQ selects by reason")
    if message_ids is not None:
        if since is not None or until is not None:
            raise ValidationError("give a time range (since, until) or message_ids, not both")
        if not isinstance(message_ids, list) or not 1 <= len(message_ids) <= limits.MAX_REPLAY_IDS:
            raise ValidationError(f"message_ids must be a list of 1 to {limits.MAX_REPLAY_IDS} message ids")
        if not all(isinstance(message_id, str) and message_id_shaped(message_id) for message_id in message_ids):
            raise ValidationError("message_ids must be message ids of this queue")
        message_ids = list(dict.fromkeys(message_ids))
    if since is not None and until is not None and since > until:
        raise ValidationError("since must not be after until")
    if attributes is None:
        attributes = {}
    if not isinstance(attributes, dict) or len(attributes) > limits.MAX_ATTRIBUTES:
        raise ValidationError(f"attributes must be an object of at most {limits.MAX_ATTRIBUTES} string values")
    if not all(isinstance(name, str) and isinstance(value, str) for name, value in attributes.items()):
        raise ValidationError("attributes must map attribute names to the string values to match")
    until = now if message_ids is None and (until is None or until > now) else until
    return Selection(since, until, message_ids, dict(attributes), source, reason)


def checked_rate(rate: Any) -> int:
    if rate is None:
        return DEFAULT_RATE
    if isinstance(rate, bool) or not isinstance(rate, int) or not 1 <= rate <= limits.MAX_REPLAY_RATE:
        raise ValidationError(f"rate must be an integer from 1 to {limits.MAX_REPLAY_RATE} messages a second")
    return rate


def start(ctx: Context, space: Space, settings: QueueSettings, chosen: Selection, rate: int, now: int) -> ReplayStatus:
    """Records a new replay, running, at the start of its selection; nothing is sent until it runs."""
    if chosen.source == ARCHIVE and not archive.is_on(settings):
        raise ValidationError(f"queue {settings.name!r} keeps no archive (archive_days is 0): nothing to replay")
    replay_id = f"{fixed_ms(now)}-{uuid.uuid4().hex[:12]}"
    item: Item = {
        **space.replay_key(replay_id),
        "replay_id": replay_id,
        "client": space.client,
        "phase": jobs.RUNNING,
        "reached": START,
        "rate": rate,
        "attributes": chosen.attributes,
        "replayed": 0,
        "skipped": 0,
        "failed": 0,
        "created_at": now,
        "updated_at": now,
        "expires_at": now // 1000 + _KEEP_DAYS * _DAY_SECONDS,
    }
    if chosen.source != ARCHIVE:
        item["source"] = chosen.source
    for name in ("since", "until", "message_ids", "reason"):
        value = getattr(chosen, name)
        if value is not None:
            item[name] = value
    ctx.store.write(jobs.start(item))
    return shown(item, settings.name)


def status(ctx: Context, space: Space, queue: str, replay_id: Any) -> ReplayStatus:
    return shown(_job(ctx, space, replay_id), queue)


def listed(ctx: Context, space: Space, queue: str, limit: int) -> list[ReplayStatus]:
    return [shown(item, queue) for item in jobs.newest(ctx.store, space.replays_pk(), limit)]


def cancel(ctx: Context, space: Space, queue: str, replay_id: Any, now: int) -> ReplayStatus:
    """Stops a running replay (nothing after the cancel is sent); a finished one is answered as it is."""
    item = _job(ctx, space, replay_id)
    try:
        item = ctx.store.write(jobs.cancel(space.replay_key(item["replay_id"]), now)) or item
    except ConditionFailed as failed:
        item = failed.item or item
    return shown(item, queue)


def run(
    ctx: Context, target: Target, replay_id: Any, seconds: float, sleep: Callable[[float], None] = time.sleep
) -> ReplayStatus:
    """Goes on with a running replay from where it stands for about `seconds` (at least one batch), at its rate;
    answers where it stands then. Throttles and lost answers stop the run with the error: run it again."""
    item = _job(ctx, target.space, replay_id)
    runner = _Runner(ctx, target, item, sleep)
    if runner.run(seconds):
        return shown(runner.item, target.settings.name)  # as its end wrote it, or read after a cancel
    return status(ctx, target.space, target.settings.name, replay_id)


def orphaned(ctx: Context, space: Space, now: int) -> list[str]:
    """The running replays among the sub-queue's newest `ORPHANS_LOOKED_AT` that no runner has moved for
    `ORPHANED_SECONDS`, nor for three batches at its rate, oldest first. One Query."""
    found = []
    for item in jobs.newest(ctx.store, space.replays_pk(), ORPHANS_LOOKED_AT):
        quiet_seconds = max(ORPHANED_SECONDS, 3 * BATCH / max(1, int(item.get("rate", DEFAULT_RATE))))
        if item.get("phase") == jobs.RUNNING and now - int(item["updated_at"]) >= quiet_seconds * 1000:
            found.append(str(item["replay_id"]))
    return found[::-1]


def shown(item: Item, queue: str) -> ReplayStatus:
    ids = item.get("message_ids")
    reached = str(item.get("reached", START))
    return ReplayStatus(
        replay_id=str(item["replay_id"]),
        queue=queue,
        client=str(item["client"]),
        state=str(item["phase"]),
        since=_int_or_none(item.get("since")),
        until=_int_or_none(item.get("until")),
        message_ids=list(ids) if ids is not None else None,
        attributes=dict(item.get("attributes", {})),
        source=str(item.get("source", ARCHIVE)),
        reason=item.get("reason"),
        rate=int(item["rate"]),
        replayed=int(item.get("replayed", 0)),
        skipped=int(item.get("skipped", 0)),
        failed=int(item.get("failed", 0)),
        total=len(ids) if ids is not None else None,
        reached_at=int(reached.split("#", 1)[0]) if "#" in reached and item.get("source", ARCHIVE) == ARCHIVE else None,
        last_error=item.get("last_error"),
        created_at=int(item["created_at"]),
        updated_at=int(item["updated_at"]),
        finished_at=_int_or_none(item.get("finished_at")),
    )


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _job(ctx: Context, space: Space, replay_id: Any) -> Item:
    if not isinstance(replay_id, str) or not _REPLAY_ID.fullmatch(replay_id):
        raise ValidationError("replay_id must be the id of a replay (from its start)")
    item = ctx.store.get(space.replay_key(replay_id))
    if item is None:
        raise MessageNotFound(f"replay {replay_id!r} not found")
    return item


@dataclass
class _Batch:
    """A batch read from where the job stood (`since`): its last place, its sends and what it passed over."""

    since: str
    at: str = ""
    sends: list[TransactSend] = field(default_factory=list)
    removals: list[Write] = field(default_factory=list)
    removed: list[Item] = field(default_factory=list)
    groups: set[str] = field(default_factory=set)
    items: int = 1  # the job's own update
    skipped: int = 0
    failed: int = 0
    error: str | None = None


class _Runner:
    """One run of one replay: reads its selection a page at a time and commits it a batch at a time."""

    def __init__(self, ctx: Context, target: Target, item: Item, sleep: Callable[[float], None]) -> None:
        self._ctx = ctx
        self._target = target
        self._sleep = sleep
        self._fifo = target.settings.fifo
        self._key = target.space.replay_key(item["replay_id"])
        self._load(item)

    def _load(self, item: Item) -> None:
        self._item = item
        self._reached = str(item["reached"])
        ids = item.get("message_ids")
        self._selection = Selection(
            _int_or_none(item.get("since")),
            _int_or_none(item.get("until")),
            list(ids) if ids is not None else None,
            dict(item.get("attributes", {})),
            str(item.get("source", ARCHIVE)),
            item.get("reason"),
        )
        self._page: list[_Pick] = []
        self._exhausted = False  # the page is the selection's last

    def _reload(self) -> None:
        self._load(_job(self._ctx, self._target.space, self._item["replay_id"]))

    @property
    def item(self) -> Item:
        return self._item

    def run(self, seconds: float) -> bool:
        """True when the run ended the replay (its selection exhausted): `item` is then the job as it stands."""
        clock = self._ctx.clock
        began = clock()
        sent = 0
        rate = int(self._item["rate"])
        while self._item["phase"] == jobs.RUNNING:
            if not self._page:
                self._page = self._next_page()
                if not self._page:
                    self._finish()
                    return True
            wait = began + sent / rate - clock()
            if wait > 0:
                self._sleep(wait)  # before the batch is built: its messages are sent as of the time they go
            sent += self._commit(self._batch())
            if clock() - began >= seconds:
                return False
        return False

    # Reading the selection.
    def _next_page(self) -> list[_Pick]:
        """The next places after `reached` and what the archive (or the DLQ) holds there."""
        now = self._ctx.now_ms()
        chosen = self._selection
        after = None if self._reached == START else self._reached
        space = self._target.space
        if chosen.source == dead_letter_replays.SOURCE:
            found = dead_letter_replays.page_after(
                self._ctx, space, self._target.settings, after, chosen.since, chosen.until, chosen.reason, PAGE, now
            )
            self._exhausted = len(found) < PAGE
            return [_Pick(pick.place, pick.message, pick.copy, pick.removal, pick.item) for pick in found]
        if chosen.message_ids is None:
            items = archive.oldest_after(self._ctx, space, after, chosen.since, chosen.until, PAGE)
            self._exhausted = len(items) < PAGE
            shown = [(str(item["sk"]), self._shown(item, now)) for item in items]
            return [_Pick(place, message, _archived_copy(message)) for place, message in shown]
        first = 0 if after is None else int(after[1:]) + 1
        self._exhausted = first + BATCH >= len(chosen.message_ids)
        page = []
        for index in range(first, min(first + BATCH, len(chosen.message_ids))):
            copies = archive.find(self._ctx, space, chosen.message_ids[index], now)
            latest = copies[-1] if copies else None
            page.append(_Pick(f"i{index:06d}", latest, _archived_copy(latest)))
        return page

    def _shown(self, item: Item, now: int) -> ArchivedMessage | None:
        if archive.is_expired(item, now):
            return None
        try:
            return archive.shown(item, self._ctx.bodies)
        except MessageBodyMissing:
            return None

    def _batch(self) -> _Batch:
        """Takes places off the page while they fit one transaction: up to `BATCH` sends, one per FIFO group."""
        batch = _Batch(since=self._reached)
        while self._page and len(batch.sends) < BATCH:
            pick = self._page[0]
            message = pick.message
            if message is not None and self._fifo and message.group_id in batch.groups:
                break
            send = None
            if message is None or not self._selection.matches(message):
                batch.skipped += 1
            else:
                try:
                    send = self._send(message, pick.copy)
                except (ValidationError, MessageTooLarge) as error:
                    # This message cannot be sent as it is (no room for `replayed_from`, ...): counted, passed.
                    # Anything else (a throttle while the send is built) stops the run: it is tried again.
                    batch.failed += 1
                    batch.error = f"{message.message_id}: {error}"[:_ERROR_CHARS]
            removing = send is not None and pick.removal is not None
            if send is not None and batch.items + len(send.items) + removing > limits.MAX_TRANSACTION_ITEMS:
                break
            self._page.pop(0)
            batch.at = pick.place
            if send is not None:
                batch.sends.append(send)
                batch.items += len(send.items) + removing
                batch.groups.add(str(message.group_id) if message is not None else "")
                if pick.removal is not None and pick.item is not None:
                    batch.removals.append(pick.removal)
                    batch.removed.append(pick.item)
        return batch

    def _send(self, message: ArchivedMessage | Message, copy: str) -> TransactSend:
        replay_id = str(self._item["replay_id"])
        origin = json.dumps({"message_id": message.message_id, "replay_id": replay_id}, separators=(",", ":"))
        attributes = {**message.attributes, REPLAYED_FROM: origin}
        types = {name: kind for name, kind in message.attribute_types.items() if name != REPLAYED_FROM}
        return self._target.send_transact_items(
            message.body,
            attributes=attributes,
            attribute_types=types or None,
            group_id=message.group_id if self._fifo else None,
            dedup_id=_dedup_id(replay_id, copy),
            priority=None if self._fifo else message.priority or None,
        )

    # Writing.
    def _commit(self, batch: _Batch) -> int:
        """The batch's messages and the job's move in one transaction; the number of messages it sent."""
        counts = (len(batch.sends), batch.skipped, batch.failed)
        last = self._exhausted and not self._page
        move = jobs.advance(self._key, batch.since, batch.at, *counts, self._ctx.now_ms(), batch.error, last)
        table = self._ctx.store.table
        try:
            if batch.sends:
                removals = [removal.transact_item(table) for removal in batch.removals]
                commit(self._ctx.store, [*batch.sends, *removals, move.transact_item(table)])
            else:
                self._ctx.store.write(move)
        except (TransactionConditionFailed, DuplicateMessage, ConditionFailed):
            # Another runner moved the job on, or a dead letter's copy left meanwhile: the page is read again from
            # where the job stands (`_load`), without what is gone.
            self._reload()
            if self._reached != batch.at:
                return 0
            # Our own commit, applied before its answer was lost and repeated without its token; or another
            # runner's over the same places, which may have passed a copy this batch holds (a redrive took it,
            # object and all): the DLQ copies' objects are left to the bucket's lifecycle rule.
            for send in batch.sends:
                send.committed()
            return len(batch.sends)
        self._reached = batch.at
        if last:
            self._item = {**self._item, "phase": jobs.DONE}
        with contextlib.suppress(QueueError):  # the removed DLQ copies' objects; each new message has its own
            self._ctx.bodies.discard(batch.removed)
        return len(batch.sends)

    def _finish(self) -> None:
        """Done, as the write answers it (its counts included); read again when a cancel came first (it stands),
        or when the answer was lost and the SDK's repeat failed on this very write."""
        try:
            item = self._ctx.store.write(jobs.finish(self._key, self._ctx.now_ms()))
        except ConditionFailed:
            item = None
        if item is None:
            self._reload()
        else:
            self._load(item)


def _archived_copy(message: ArchivedMessage | None) -> str:
    return "" if message is None else f"{fixed_ms(message.acked_at)}#{message.message_id}"


def _dedup_id(replay_id: str, copy: str) -> str:
    """The same for every send of one copy (archived, or a dead letter's) by one replay, new for another replay
    or another copy."""
    return "replay-" + hashlib.sha256(f"{replay_id}|{copy}".encode()).hexdigest()[:40]
