"""A FIFO DLQ's groups: one holder at a time, each group given in its order, as a FIFO queue gives its groups.

A FIFO DLQ keeps a group's dead letters together and in the group's order (their sort key is the group, then its
sequence). A DLQ receive (`SubQueue.dlq_receive`: SQS's ReceiveMessage at a FIFO DLQ's URL, or at a FIFO queue
other queues name as their dead-letter target) takes a group as a whole. It first takes the group's claim item
(`store.dead_letter_groups.claim`), only where no claim holds the group; then it stamps the group's oldest dead
letters, in order, with the same claim (`dead_letters.claimed`), so each handle names the group's claim. While the
claim holds any of its dead letters and its time lasts, no other receive is given any dead letter of the group,
whatever its view: the group's one condition decides. A handle moves the group's time with its own (only ever
later while the claim holds other dead letters), a release or a delete gives its dead letter back, and the last
one given back frees the group at once; so does the claim's time running out. A receive then takes the group again
from its oldest remaining dead letter. A handle whose claim no longer holds the group moves nothing. Dead letters
also leave the DLQ without their claim's handle (a redrive, a move task, a look's handle): a claim that holds only
such dead letters holds nothing, and the next receive takes the group over from it.

The stamps on the dead letters say which claim was each one's latest, for its handle's delete, and are a second
fence: a receive stops in a group at the first dead letter it cannot stamp (taken meanwhile, or stamped by a claim
made before groups had one), and gives the rest back, so it never holds a later dead letter of a group past an
earlier one.

Cost of a FIFO DLQ receive in DynamoDB calls: the strongly consistent Query of the DLQ's partition that any DLQ
receive makes (one per 1 MB read, as far as the last group it looks at); then, per group taken, one UpdateItem for
the group's claim and one per dead letter taken (`limit` at most in all), and one more giving back the rest when a
dead letter was taken from under it. A group whose dead letters show a live hold costs nothing more; one held by a
claim its dead letters do not show (a claim made longer by another of its dead letters) costs one refused
UpdateItem, and a claim whose dead letters all left the DLQ one BatchGetItem and one more UpdateItem to take the
group over. Offloaded bodies are read from S3 as any read of the DLQ does. A change of visibility with a handle
costs one TransactWriteItems of two updates (twice a plain write's units: four for items up to 1 KB, more for a
dead letter whose body is stored in its item); when the group is held as long already, that transaction is refused
(charged as one write of each item) and a TransactWriteItems of a check that the claim still holds the group and
the dead letter, and the dead letter's update, follows. A release costs one
TransactWriteItems of two updates (the claim's giving back, the dead letter's), a delete a DeleteItem and an
UpdateItem.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import groupby

from . import dead_letters
from .context import Context
from .dead_letters import DeadLetter, DeadLetterReceipt
from .errors import MessageBodyMissing
from .keys import MessageRef, Space
from .messages import DLQ, looked_at
from .models import Message
from .store import ConditionFailed, Item, TransactionCancelled
from .store import dead_letter_groups as writes


def receive(
    ctx: Context, space: Space, items: Iterable[Item], secret: str, limit: int, until: int, now: int
) -> list[DeadLetter]:
    """Up to `limit` dead letters of the groups no claim holds, each group's from its oldest, in order, claimed
    until `until`; `items` are the DLQ's copies as its partition keeps them (group by group, each in order)."""
    found: list[DeadLetter] = []
    for group, copies in groupby(_refs(items), key=lambda pair: pair[1].group):
        if len(found) >= limit:
            break
        read = list(copies)
        if any(int(item.get("dlq_until", 0)) > now for item, _ in read):
            continue  # its claim shows: the group is held
        planned = list(_readable(ctx, read, limit - len(found)))
        if planned:
            present = {ref.sequence for _, ref in read}
            found += _take(ctx, space, str(group), planned, present, secret, until, now)
    return found


def _refs(items: Iterable[Item]) -> Iterator[tuple[Item, MessageRef]]:
    for item in items:
        yield item, MessageRef.from_dlq_sk(item["sk"], 0, True)


def _readable(
    ctx: Context, read: list[tuple[Item, MessageRef]], room: int
) -> Iterator[tuple[Item, MessageRef, Message]]:
    """The group's oldest dead letters that can be answered, up to `room`: one whose body is gone is passed
    over, as every read of the DLQ passes it over."""
    taken = 0
    for item, ref in read:
        if taken >= room:
            return
        try:
            message = looked_at(item, ref, DLQ, ctx.bodies)
        except MessageBodyMissing:
            continue
        taken += 1
        yield item, ref, message


def _take(
    ctx: Context,
    space: Space,
    group: str,
    planned: list[tuple[Item, MessageRef, Message]],
    present: set[str],
    secret: str,
    until: int,
    now: int,
) -> list[DeadLetter]:
    """The group's claim, then its dead letters `planned` in order. `present`: the sequences of the group's dead
    letters in the DLQ, as read: a claim that holds none of them holds nothing."""
    token = dead_letters.new_token()
    key = space.dlq_group_key(group)
    sequences = [ref.sequence for _, ref, _ in planned]
    if not _claimed(ctx, space, group, token, sequences, present, until, now):
        return []
    taken: list[DeadLetter] = []
    for position, (item, _, message) in enumerate(planned):
        dead = dead_letters.claimed(ctx, item, message, space, secret, until, now, token)
        if dead is None:
            _give_back(ctx, key, token, sequences[position:])
            break
        taken.append(dead)
    return taken


def held(ctx: Context, space: Space, ref: MessageRef, receipt: DeadLetterReceipt) -> Item | None:
    """`dead_letters.held`, and the claim still holds the dead letter's group for it. Two reads."""
    item = dead_letters.held(ctx, space, ref, receipt)
    if item is None:
        return None
    group = ctx.store.get(space.dlq_group_key(ref.group or ""))
    if group is None or group.get("tok") != receipt.token or ref.sequence not in group.get("held_copies", set()):
        return None
    return item


def _claimed(
    ctx: Context,
    space: Space,
    group: str,
    token: str,
    sequences: list[str],
    present: set[str],
    until: int,
    now: int,
) -> bool:
    """False when another claim holds the group. A claim the SDK repeated finds its own token. A claim whose dead
    letters are all gone from the DLQ is taken over: those it holds that this receive did not read (`present`)
    are looked up (one BatchGetItem), since they may have come after its read."""
    emptied = None
    while True:
        try:
            ctx.store.write(writes.claim(space.dlq_group_key(group), token, sequences, until, now, emptied))
            return True
        except ConditionFailed as failed:
            old = failed.item or {}
            if old.get("tok") == token:
                return True
            held = set(old.get("held_copies", set()))
            if emptied is not None or held & present or _any_left(ctx, space, group, held):
                return False
            emptied = str(old.get("tok"))


def _any_left(ctx: Context, space: Space, group: str, sequences: set[str]) -> bool:
    refs = [MessageRef(shard=0, sequence=sequence, group=group) for sequence in sorted(sequences)]
    return bool(ctx.store.batch_get([ref.dlq_key(space) for ref in refs]))


def hold(
    ctx: Context, space: Space, ref: MessageRef, receipt: DeadLetterReceipt, until: int, now: int, again: bool = False
) -> bool:
    """Moves the end of the claim `receipt` was handed out with, for its dead letter and its group (to now:
    gives the dead letter back, and the group once its claim holds no other). False when that claim no longer
    holds the group, or the dead letter is gone or was taken by a later claim: nothing is held."""
    if not receipt.token:
        return False
    key = space.dlq_group_key(ref.group or "")
    if until <= now:
        # The dead letter and the claim's giving it back in one transaction, on the claim's still holding the group:
        # a later receive that took the group without reaching this dead letter left its stamp as it was.
        try:
            given_back = writes.give_back(key, receipt.token, [ref.sequence])
            ctx.store.transact_writes([given_back, dead_letters.hold_write(space, ref, receipt, until, again)])
        except TransactionCancelled:
            return False
        return True
    # The group and the dead letter in one transaction: the dead letter is never held past its group, and a
    # handle whose dead letter is gone (a move task took it) or was taken since moves the group's time no more than
    # the dead letter's (a group held on for nobody).
    group = writes.hold(key, receipt.token, ref.sequence, until)
    try:
        ctx.store.transact_writes([group, dead_letters.hold_write(space, ref, receipt, until, again)])
        return True
    except TransactionCancelled as cancelled:
        old = cancelled.reasons[0][1] if 0 in cancelled.failed() else None
    if old is not None:
        if old.get("tok") != receipt.token or ref.sequence not in old.get("held_copies", set()):
            return False  # the claim holds the group no longer
        # Held as long already, for the claim's other dead letters: the dead letter alone, on the claim's still
        # holding the group and it (a later receive may take the group, or the claim give the dead letter back,
        # between the read of `old` and this write, and leave the dead letter's stamp as it was).
        alone = [
            writes.still_holds(key, receipt.token, ref.sequence),
            dead_letters.hold_write(space, ref, receipt, until, again),
        ]
        try:
            ctx.store.transact_writes(alone)
            return True
        except TransactionCancelled:
            pass
    if not again:  # a repeat refused for a change by the holder: the holder still holds it, and the group for it
        _give_back(ctx, key, receipt.token, [ref.sequence])
    return False


def delete(ctx: Context, space: Space, ref: MessageRef, receipt: DeadLetterReceipt) -> bool:
    """`dead_letters.delete`, then the claim gives the dead letter back (whoever removed it: gone, it holds the
    group no longer)."""
    removed = dead_letters.delete(ctx, space, ref, receipt)
    if receipt.token:
        _give_back(ctx, space.dlq_group_key(ref.group or ""), receipt.token, [ref.sequence])
    return removed


def _give_back(ctx: Context, key: dict[str, str], token: str, sequences: list[str]) -> bool:
    """False when the group has passed to another claim (nothing written)."""
    try:
        ctx.store.write(writes.give_back(key, token, sequences))
    except ConditionFailed:
        return False
    return True
