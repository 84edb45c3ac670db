"""The entry point of the core: queues and their registry, sub-queues, the sweep."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from . import autoshard, keys, layout, leases, limits, migration, validation
from .bodies import Bodies
from .clock import Clock
from .context import Context
from .errors import QueueExists, QueueNotFound, ValidationError
from .migration import MigrationReport
from .models import QueueStats, SweepReport
from .queuewide import QueueWide
from .registry import Registry
from .settings import REDRIVE_FIELDS, QueueSettings
from .store import Store
from .store.objects import ObjectStore
from .subqueue import SubQueue, remove_sub_queue
from .sweep import Sweeper
from .table import TTL_ATTRIBUTE, table_definition
from .transactions import commit


def default_dynamodb() -> Any:
    """A DynamoDB client from the environment (boto3 honours AWS_ENDPOINT_URL_DYNAMODB), with standard-mode
    retries so that short throttling bursts never reach the caller."""
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "max_attempts": 5}, connect_timeout=3, read_timeout=10, max_pool_connections=32
    )
    return boto3.client("dynamodb", config=config)


class QueueClient:
    """The library's entry point on one table: create, change, list and delete queues, reach a `(queue, client)`
    sub-queue with `queue()`, and run the sweep. Thread-safe; keep one per process (it caches settings).

    `bucket` (default `$QUEUE_BUCKET`) is the S3 bucket for bodies too large for an item or over `offload_bytes`
    stored (default `$QUEUE_OFFLOAD_BYTES`, else `limits.DEFAULT_OFFLOAD_BYTES`); `s3` a boto3 S3 client (default:
    one from the environment, built on first use). Without a bucket, nothing is offloaded. `compress=False` keeps
    bodies that fit as sent (no zlib), for readers of the raw items."""

    def __init__(
        self,
        table_name: str,
        dynamodb: Any = None,
        clock: Clock = time.time,
        *,
        s3: Any = None,
        bucket: str | None = None,
        offload_bytes: int | None = None,
        compress: bool = True,
    ) -> None:
        self.table_name = table_name
        self.dynamodb = dynamodb if dynamodb is not None else default_dynamodb()
        store = Store(self.dynamodb, table_name)
        bodies = Bodies(
            objects=ObjectStore(s3),
            bucket=bucket if bucket is not None else os.environ.get("QUEUE_BUCKET") or None,
            offload_bytes=offload_bytes
            if offload_bytes is not None
            else int(os.environ.get("QUEUE_OFFLOAD_BYTES") or limits.DEFAULT_OFFLOAD_BYTES),
            compress=compress,
        )
        self._ctx = Context(store=store, registry=Registry(store), clock=clock, bodies=bodies)

    def create_table(self) -> None:
        """Idempotent: creates the table (the same keys, TTL and index as the CDK stack) if it is missing, and
        records on a table it created the layout of items this release writes (`layout`). A table that exists
        keeps its record, or its lack of one: only `migrate` upgrades it."""
        created = False
        with contextlib.suppress(self.dynamodb.exceptions.ResourceInUseException):
            self.dynamodb.create_table(**table_definition(self.table_name))
            created = True
        self.dynamodb.get_waiter("table_exists").wait(
            TableName=self.table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
        )
        ttl = self.dynamodb.describe_time_to_live(TableName=self.table_name)["TimeToLiveDescription"]
        if ttl.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
            self.dynamodb.update_time_to_live(
                TableName=self.table_name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
            )
        if created:
            layout.record_new_table(self._ctx.store, self._ctx.now_ms())

    def table_layout(self) -> layout.TableLayout:
        """The table's layout record as stored now (not the process's cached check)."""
        return layout.read(self._ctx.store)

    def migrate(self, dry_run: bool = False, on_step: Callable[[str], None] | None = None) -> MigrationReport:
        """Upgrades the table in place to the layout this release writes (`dq migrate`); idempotent and
        resumable, safe beside running producers and consumers of this release. `dry_run` changes nothing and
        reports what a run would change. See `migration`."""
        report = migration.migrate(self._ctx, self.queue, dry_run=dry_run, on_step=on_step)
        self._ctx.registry.layout.forget()
        return report

    def create_queue(self, name: str, tags: dict[str, str] | None = None, **settings: Any) -> QueueSettings:
        """Returns the queue's settings; `.created` says whether this call created it. Creating an existing
        queue with the same settings is a no-op, with other settings raises `QueueExists`. `tags` label a new
        queue (an existing one keeps its own)."""
        redrive = {field: settings.pop(field) for field in REDRIVE_FIELDS if field in settings}
        wanted = QueueSettings.validated(name, self._ctx.now_ms(), **settings)
        if redrive.get("dead_letter_target"):
            self.check_dead_letter_target(wanted.name, wanted.fifo, redrive["dead_letter_target"])
        if redrive:
            wanted = replace(wanted, **redrive)
        if tags:
            wanted = replace(wanted, tags=validation.tags(tags))
        created = self._ctx.registry.create(wanted)
        # The dead-letter fields are compared only when asked for: a create that cannot name them (the REST API)
        # finds an existing queue the same whatever its SQS RedrivePolicy or RedriveAllowPolicy say.
        if not created.created and any(getattr(created, field) != getattr(wanted, field) for field in redrive):
            raise QueueExists(f"queue {name!r} exists with another dead-letter target or redrive allow policy")
        return created

    def tag_queue(self, name: str, tags: dict[str, str]) -> QueueSettings:
        return self._ctx.registry.tag(validation.queue_name(name), tags, [])

    def untag_queue(self, name: str, keys: list[str]) -> QueueSettings:
        return self._ctx.registry.tag(validation.queue_name(name), {}, keys)

    def update_queue(self, name: str, **changes: Any) -> QueueSettings:
        """Changes a live queue's settings (not `fifo` nor `content_based_dedup`). A new `shards` loses nothing:
        receivers keep visiting the old layout's shards for as long as its messages may live, and FIFO groups
        move to their new shard only once empty, after every process has the new settings, so order holds."""
        name = validation.queue_name(name)
        if changes.get("dead_letter_target"):
            self.check_dead_letter_target(name, self.get_queue(name).fifo, changes["dead_letter_target"])
        return self._ctx.registry.update(name, self._ctx.now_ms, **changes)

    def reshard_automatically(self, name: str, shards: int | None = None) -> int | None:
        """The automatic shard decision of a queue with `shards: "auto"`, made now by this process (the sweep
        and throttled senders make it by themselves; see `autoshard`): the new count, or None when it stays.
        `shards` forces a count within the queue's bounds whatever the load, as a test or a drill would; either
        way the change is fenced as `update_queue` is."""
        name = validation.queue_name(name)
        if shards is not None:
            return autoshard.force(self._ctx, name, validation.integer("shards", shards, 1, limits.MAX_SHARDS))
        settings = self._ctx.registry.get(name, fresh=True)
        clients = self._ctx.registry.clients(name, settings.generation)
        reports = autoshard.read_reports(self._ctx, settings, clients)
        decided = autoshard.decide(self._ctx, name, reports=reports, settings=settings)
        return None if decided is None else decided.changed

    def check_dead_letter_target(self, source: str, fifo: bool, target: str) -> None:
        """SQS's rules for a dead-letter target: another existing queue, of the same kind (FIFO or standard),
        whose RedriveAllowPolicy lets `source` name it."""
        if target == source:
            raise ValidationError("a queue cannot be its own dead-letter target")
        try:
            settings = self._ctx.registry.get(validation.queue_name(target), fresh=True)
        except QueueNotFound:
            raise ValidationError(f"the dead-letter target {target!r} does not exist") from None
        if settings.fifo != fifo:
            raise ValidationError(
                "the dead-letter target must be the same type of queue as the source (FIFO or standard)"
            )
        if not settings.permits_dead_letters_from(source):
            raise ValidationError(f"the RedriveAllowPolicy of {target!r} does not allow {source!r} to name it")

    def dead_letter_sources(self, name: str) -> list[QueueSettings]:
        """The queues whose dead letters `name` reads besides its own messages (they name it as their dead-letter
        target), each as its settings say now; a source deleted meanwhile is left out."""
        found = []
        for source in self._ctx.registry.dead_letter_sources(validation.queue_name(name)):
            try:
                settings = self._ctx.registry.get(source)
            except QueueNotFound:
                continue
            if settings.dead_letter_target == name:
                found.append(settings)
        return found

    def get_queue(self, name: str) -> QueueSettings:
        return self._ctx.registry.get(validation.queue_name(name), fresh=True)

    def list_queues(self) -> list[QueueSettings]:
        return self._ctx.registry.list()

    def client_queues(self, client: str) -> list[QueueSettings]:
        """The queues in which `client` has a sub-queue (it was ever sent a message there): what a tenant lists,
        without learning of the other tenants' queues."""
        return self._ctx.registry.registered(self._ctx.registry.list(), validation.client_id(client))

    def delete_queue(self, name: str) -> None:
        """Removes the queue from the registry first, in one transaction that leaves a tombstone of this
        incarnation, then every item of every client. A queue created again under the name is a new generation
        whose keys differ, so it never sees what the old one left: not a send that landed during the delete
        (a process may use cached settings for a few seconds), nor the rest of a removal cut short. The sweep
        passes over the tombstone again once no process can still send to it, then drops it."""
        settings = self._ctx.registry.delete(validation.queue_name(name), self._ctx.now_ms())
        for client in self._ctx.registry.clients(settings.name, settings.generation):
            remove_sub_queue(self._ctx, settings, client, keep_registration=True)

    def clients(self, name: str) -> list[str]:
        settings = self._ctx.registry.get(validation.queue_name(name))
        return self._ctx.registry.clients(settings.name, settings.generation)

    def queue(self, name: str, client: str) -> SubQueue:
        return SubQueue(self._ctx, name, client)

    def queue_wide(self, name: str) -> QueueWide:
        """Every client of the queue at once: a fair receive across them (by priority, then a rotation that puts
        clients with fewer messages in flight first) and the settling of any of their handles."""
        return QueueWide(self._ctx, name)

    def transact(self, items: list[Any], token: str | None = None) -> None:
        """Commits the caller's own TransactWriteItems entries (any table of this account and region) together
        with sends (`send_transact_items`) and acks (`delete_transact_items`), at most 100 entries in all.

        A cancellation is mapped index by index: a failed condition of the caller's own item raises
        `TransactionConditionFailed` (its `index` and the item as it was); a duplicate dedup id raises
        `DuplicateMessage` naming the first message; an ack whose message was received again raises
        `ReceiptHandleStale`. A FIFO group's sequence moved by another sender is not an error: the send is built
        again and the transaction committed again (nothing of the cancelled one was applied). Every attempt
        carries a client request token, so the SDK's repeat of a commit whose answer was lost is answered with
        its success, not failed by its own first write. After a `Throttled`, call again with the same `token`
        within ten minutes to learn whether the first attempt committed (DynamoDB answers it without applying
        it twice); with sends among the items, only while the settings they were built from are young enough
        (`QueueSettings.send_deadline`, seconds), after which that call raises `ValidationError`: check the
        effects, then build new sends. Sends whose settings aged before a first commit are built again."""
        commit(self._ctx.store, items, token)

    def queue_stats(self, name: str) -> QueueStats:
        """Summed over the queue's clients."""
        total = QueueStats()
        for client in self.clients(name):
            total = total + self.queue(name, client).stats()
        return total

    def now_ms(self) -> int:
        return self._ctx.now_ms()

    def take_consumer_slot(self, queue: str, client: str, slots: int, seconds: float) -> tuple[int, str] | None:
        """One of a push consumer's `slots` places for `seconds` at most, as (slot, holder); None when every one
        is held. Slots are tried from a place that differs per call, so dispatchers do not all contend for one."""
        first = time.monotonic_ns() % slots
        order = [(first + offset) % slots for offset in range(slots)]
        now = self._ctx.now_ms()
        places = [keys.consumer_slot_key(queue, client, slot) for slot in order]
        taken = leases.take_any(self._ctx.store, places, now, now + int(seconds * 1000))
        return None if taken is None else (order[taken[0]], taken[1])

    def give_back_consumer_slot(self, queue: str, client: str, slot: int, holder: str) -> None:
        leases.give_back(self._ctx.store, keys.consumer_slot_key(queue, client, slot), holder)

    def sweep(
        self,
        budget_seconds: float | None = None,
        max_items: int | None = None,
        cursor: str | None = None,
        lease_seconds: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> SweepReport:
        """Housekeeping of every sub-queue (see `sweep.Sweeper`); the scheduled sweeper passes `lease_seconds`
        so that two sweeps never run over each other. `sleep` is how a replay the sweep runs on waits for its
        rate (a clock of the caller's own needs a sleep of its own)."""
        return Sweeper(self._ctx, self.queue, sleep).run(budget_seconds, max_items, cursor, lease_seconds)
