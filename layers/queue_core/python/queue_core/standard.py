"""Standard sub-queues: the visibility index.

Each message is one item `pk = M#{queue}#{client}#{shard}`, `sk = {sequence}`; its index entry is
`gsi1sk = {visible_at}#{sequence}`. A receive queries the index for entries at or before now, so it reads only
visible messages whatever sits in flight or delayed, and claims each candidate with a conditional update that
moves it past now. Visibility is exact: an expired claim is visible again by itself.

The parts, each in its own module: `standard_space` (shards), `standard_sends`, `standard_claims` (claims and the
DLQ by receive limit), `standard_holds` (actions by handle: only while the handle's own message is held by it),
`standard_looks` (looks and the sweep).
"""

from __future__ import annotations

from .standard_claims import StandardClaims
from .standard_holds import StandardHolds
from .standard_looks import StandardLooks
from .standard_sends import StandardSends


class StandardQueue(StandardSends, StandardClaims, StandardHolds, StandardLooks):
    """The message operations of one `(queue, client)` of a standard queue: each idea in its own module, over the
    sub-queue's identity and shards (`standard_space`)."""
