"""The table's layout: which shape of items it holds, recorded in one item, checked once per process.

Layouts shipped since queues were keyed by generation (each one is served by this code and upgraded by
`dq migrate`, `migration.migrate`):

* **1**: the generation-keyed registry. Settings at `Q#{queue}` without a secret, a listing entry and
  tombstones under `REGISTRY`, clients registered per generation with their receipt-signing secret, every
  message key carrying the queue's generation. (Tables of the layout before it keep the settings in the
  listing entry; that change shipped without a migration and such queues had to be created again.)
* **2**: layout 1 plus the set of clients with visible messages, ready markers `R#{queue}#{client}#{generation}`,
  that queue-wide receives read, and priorities in the index keys of standard messages (priority 0 keeps
  layout 1's keys). A layout-1 table is readable as it is, but its waiting messages have no markers: queue-wide
  receives would not see them until the sweep or a drain put one. The migration puts them.

A table created by this release records its layout (`create_table`); a table written before layouts were recorded
has no record. Such a table is served: it holds layout 1 or 2 (the settings items this code reads carry the
generation of layout 1 and later; those of earlier tables do not exist, so their queues are not found), and
`dq migrate` puts the markers a layout-1 table lacks and records layout 2. A table recorded at a layout this code
does not serve, a newer release's or one older than `OLDEST_SERVED_LAYOUT`, is refused with
`TableLayoutMismatch` before any item is read: misreading it could lose messages.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Any, Final

from . import keys, limits
from .errors import TableLayoutMismatch
from .store import ConditionFailed, Store
from .store import layout as writes
from .version import __version__

CURRENT_LAYOUT: Final = 2
OLDEST_SERVED_LAYOUT: Final = 1
# Layouts `dq migrate` upgrades from (None: a table with no record, which holds layout 1 or 2).
MIGRATES_FROM: Final = (None, 1)


@dataclass(frozen=True)
class TableLayout:
    """The table's record as read: `layout` None when the table has none (written before layouts were recorded);
    `migrating_to` set while a migration is under way (or stopped halfway), with its `cursor`."""

    layout: int | None
    written_by: str | None = None
    migrating_to: int | None = None
    cursor: str | None = None

    @classmethod
    def from_item(cls, item: dict[str, Any] | None) -> TableLayout:
        if item is None:
            return cls(None)

        def number(name: str) -> int | None:
            return None if item.get(name) is None else int(item[name])

        return cls(
            number("layout"),
            item.get("written_by"),
            number("migrating_to"),
            item.get("migration_cursor"),
        )

    def describe(self) -> str:
        if self.layout is None:
            return "no layout recorded (written before layouts were recorded: layout 1 or 2)"
        by = f", written by dynamo-queue {self.written_by}" if self.written_by else ""
        return f"layout {self.layout}{by}"


def read(store: Store) -> TableLayout:
    return TableLayout.from_item(store.get(keys.layout_key()))


def refusal(table: str, found: TableLayout) -> TableLayoutMismatch | None:
    """Why this code cannot serve the table, or None when it can."""
    served = f"this code (dynamo-queue {__version__}) serves layouts {OLDEST_SERVED_LAYOUT} to {CURRENT_LAYOUT}"
    if found.layout is None or OLDEST_SERVED_LAYOUT <= found.layout <= CURRENT_LAYOUT:
        return None
    if found.layout > CURRENT_LAYOUT:
        return TableLayoutMismatch(
            f"table {table} is at layout {found.layout}{_by(found)}; {served}. `dq migrate` of a newer release "
            f"upgraded it: run that release (dynamo-queue {found.written_by or 'newer'}) here, not this one"
        )
    return TableLayoutMismatch(
        f"table {table} is at layout {found.layout}; {served}. Upgrade it with `dq migrate --table {table}` "
        "of this release"
    )


def _by(found: TableLayout) -> str:
    return f" (written by dynamo-queue {found.written_by})" if found.written_by else ""


def new_table_record(now_ms: int) -> dict[str, Any]:
    return {**keys.layout_key(), "layout": CURRENT_LAYOUT, "written_by": __version__, "updated_at": now_ms}


def record_new_table(store: Store, now_ms: int) -> None:
    """Records the current layout on a table just created. A record already there (a repeat of this very put
    after a lost answer, or a concurrent create) is left as it is."""
    with contextlib.suppress(ConditionFailed):
        store.write(writes.record_new(new_table_record(now_ms)))


class LayoutGuard:
    """Reads the record once per process (one GetItem, then nothing per message) and refuses a table this code
    cannot serve. A refusal is read again after `limits.SETTINGS_CACHE_SECONDS`, so a long-lived process serves
    the table once it was migrated, without a restart."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._served = False
        self._lock = threading.Lock()
        self._refused: tuple[float, str] | None = None

    def ensure(self) -> None:
        if self._served:
            return
        with self._lock:
            if self._served:
                return
            if self._refused and time.monotonic() - self._refused[0] < limits.SETTINGS_CACHE_SECONDS:
                raise TableLayoutMismatch(self._refused[1])
            error = refusal(self._store.table, read(self._store))
            if error is not None:
                self._refused = (time.monotonic(), error.message)
                raise error
            self._served, self._refused = True, None

    def forget(self) -> None:
        """The next use reads the record again (after a migration in this process)."""
        with self._lock:
            self._served = False
