"""FIFO sub-queues: message groups.

Each non-empty group has one *group item* (`pk = F#{queue}#{client}#{shard}`, `sk = {group}`) whose index entry
`gsi1sk = {available_at}#{group}` says when the group can be received from; its messages live in their own
partition (`pk = G#{queue}#{client}#{group}`, `sk = {group sequence}`), read head first. A receive queries the index
for available groups, claims a group with a conditional update (which also locks it until the visibility timeout),
then reads the group's head. A group whose head is in flight sorts after now, so a receive never reads blocked
groups' backlogs. A group's sequence comes from its group item inside the send transaction (a condition on the
last sequence), so producers' clocks and retries can never reorder a group.

Every write is safe when DynamoDB applied it, its answer was lost and the SDK sent it again: counts are kept as
sets of sequences (`acked`, `gone`) or guarded by a condition that the repeat fails, and a failed condition whose
old item shows the write already done (our token, our sequence in the set) counts as success.

The parts, each in its own module with its invariant: `fifo_groups` (places and bookkeeping), `fifo_sends`
(sequences), `fifo_claims` (locks and marks), `fifo_heads` (heads that cannot be delivered), `fifo_holds` (actions
by handle: only while the handle's own message is held by it), `fifo_looks` (looks and the sweep).
"""

from __future__ import annotations

from .fifo_claims import FifoClaims
from .fifo_heads import STUCK_RETRY_SECONDS, FifoHeads
from .fifo_holds import FifoHolds
from .fifo_looks import FifoLooks
from .fifo_sends import FifoSends

__all__ = ["STUCK_RETRY_SECONDS", "FifoQueue"]


class FifoQueue(FifoSends, FifoClaims, FifoHeads, FifoHolds, FifoLooks):
    """The message operations of one `(queue, client)` of a FIFO queue: each idea in its own module, over the
    group items every one of them shares (`fifo_groups`)."""
