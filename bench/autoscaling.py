"""Application Auto Scaling's target tracking on a provisioned table, moving the units of the throttling backend.

What the service does (DynamoDB's "Managing throughput capacity automatically with DynamoDB auto scaling"): for
each of the table's and each index's read and write units, a CloudWatch alarm watches the units consumed each
minute against those provisioned. When the consumed share stays above the target for `SCALE_OUT_MINUTES` minutes
in a row, the units go to what was consumed divided by the target (never past the ceiling); when it stays under the
target less 20 points for `SCALE_IN_MINUTES` minutes, they come down the same way (never under the floor). Consumed
units cannot exceed what was provisioned (plus what burst capacity held): a throttled load shows as 100 % and the
units grow by 1/target a step, a few minutes apart, until the load fits. That delay is the trade-off of
provisioned capacity, and what this model lets a simulation meet.

It counts consumption through the meter, as the throttler charges it, by capacity (table and index, read and
write), and acts on the simulated clock: call `tick()` as the simulation advances.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Final

from .meter import Call
from .throttling import Provisioned, Throttler

SCALE_OUT_MINUTES: Final = 2
SCALE_IN_MINUTES: Final = 15
SCALE_IN_MARGIN: Final = 0.20
PERIOD_SECONDS: Final = 60.0
DIMENSIONS: Final = ("table_write", "table_read", "index_write", "index_read")


@dataclass(frozen=True)
class Bounds:
    """A dimension's floor and ceiling, in units a second."""

    floor: float
    ceiling: float


@dataclass
class AutoScaling:
    """Target tracking of every dimension of `throttler`'s provisioned table at `target` (0.7: 70 %)."""

    throttler: Throttler
    bounds: dict[str, Bounds]
    target: float = 0.7
    history: list[tuple[float, Provisioned]] = field(default_factory=list)  # (time, units) after each change
    _consumed: Counter = field(default_factory=Counter)
    _above: Counter = field(default_factory=Counter)
    _below: Counter = field(default_factory=Counter)
    _period_start: float = 0.0

    def __post_init__(self) -> None:
        if self.throttler.limits.provisioned is None:
            raise ValueError("auto scaling needs a provisioned table (Limits.provisioned)")
        self._period_start = self.throttler.clock()
        self.throttler.meter.listeners.append(self._count)

    def detach(self) -> None:
        if self._count in self.throttler.meter.listeners:
            self.throttler.meter.listeners.remove(self._count)

    @property
    def units(self) -> Provisioned:
        provisioned = self.throttler.limits.provisioned
        assert provisioned is not None
        return provisioned

    def _count(self, call: Call) -> None:
        for (space, _key), (write, read) in call.partitions.items():
            prefix = "index" if "/" in space else "table"
            self._consumed[f"{prefix}_write"] += write
            self._consumed[f"{prefix}_read"] += read

    def tick(self) -> None:
        """Closes every whole minute passed since the last one and acts on its alarms."""
        while self.throttler.clock() - self._period_start >= PERIOD_SECONDS:
            self._period_start += PERIOD_SECONDS
            self._close_period()

    def _close_period(self) -> None:
        units = self.units
        changes = {}
        for dimension in DIMENSIONS:
            provisioned = getattr(units, dimension)
            rate = self._consumed.pop(dimension, 0.0) / PERIOD_SECONDS
            used = rate / provisioned if provisioned else math.inf
            self._above[dimension] = self._above[dimension] + 1 if used > self.target else 0
            self._below[dimension] = self._below[dimension] + 1 if used < self.target - SCALE_IN_MARGIN else 0
            wanted = None
            if self._above[dimension] >= SCALE_OUT_MINUTES or self._below[dimension] >= SCALE_IN_MINUTES:
                wanted = rate / self.target
            if wanted is not None:
                bounds = self.bounds[dimension]
                new = min(bounds.ceiling, max(bounds.floor, wanted))
                self._above[dimension] = self._below[dimension] = 0
                if new != provisioned:
                    changes[dimension] = new
        if changes:
            changed = replace(units, **changes)
            self.throttler.set_limits(replace(self.throttler.limits, provisioned=changed))
            self.history.append((self.throttler.clock(), changed))
