"""moto as an embedded DynamoDB, with DynamoDB's per-request atomicity.

moto applies concurrent requests without a lock: racing conditional writes on one item can both succeed, and a
query beside writes can fail. DynamoDB applies each request atomically, so every request is serialized here;
threads still interleave between requests, as they do against the real service.

The patches replace moto internals, read against the source of the moto versions in `MOTO_VERSIONS`; on any other
version they refuse to load rather than change moto's behaviour unseen.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import json
import logging
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Final, Protocol

# The moto versions whose source the patches below were read against (requirements-dev.txt pins one of them).
MOTO_VERSIONS: Final = frozenset({"5.2.5"})

_LOCK = threading.RLock()
# DynamoDB keeps a transaction's client request token this long after the transaction completed.
TRANSACTION_TOKEN_SECONDS: Final = 600
# The wall-clock time the patches see while a request is applied under `applied_at` (None: now).
_applied_at: float | None = None


@contextlib.contextmanager
def applied_at(moment: float | None) -> Iterator[None]:
    """Under `_LOCK`: the patches take `moment` as the time of the request being applied, so that a request
    replayed from a journal meets the transaction tokens of its time, as it did when it was first applied."""
    global _applied_at
    with _LOCK:
        previous, _applied_at = _applied_at, moment
        try:
            yield
        finally:
            _applied_at = previous


def request_time() -> float:
    """Under `_LOCK`: the wall-clock time of the request being applied."""
    return time.time() if _applied_at is None else _applied_at


class UnsupportedMotoVersion(RuntimeError):
    """A patch of moto internals was asked to load on a moto version it was not written for."""


def require_moto_version(patch: str, written_for: frozenset[str]) -> None:
    """Raises `UnsupportedMotoVersion` unless the installed moto is one of the versions `patch` was written for."""
    import moto

    installed = moto.__version__
    if installed not in written_for:
        raise UnsupportedMotoVersion(
            f"{patch} patches moto internals and was written for moto {', '.join(sorted(written_for))}, but moto "
            f"{installed} is installed: check the patch against moto {installed}'s source and add the version, "
            "or install the pinned version from requirements-dev.txt"
        )


def serialize_moto_requests() -> None:
    """Idempotent: wraps moto's DynamoDB request dispatch in one process-wide lock."""
    require_moto_version("serialize_moto_requests", MOTO_VERSIONS)
    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler.call_action, "_serialized", False):
        return
    original = DynamoHandler.call_action

    @functools.wraps(original)
    def call_action(self: Any) -> Any:
        with _LOCK:
            return original(self)

    call_action._serialized = True  # type: ignore[attr-defined]
    DynamoHandler.call_action = call_action  # type: ignore[method-assign]


class Store(Protocol):
    """Where the embedded DynamoDB keeps its data (`dq.data_dir.DataDir`): given moto's WSGI app at start, it
    fills moto from what it kept and answers the app that serves requests while it keeps them."""

    def attach(self, app: Callable[..., Any]) -> Callable[..., Any]: ...


class EmbeddedDynamoDB:
    """moto's server on 127.0.0.1 (a free port unless one is given), its requests serialized: the local
    server's DynamoDB, reached over HTTP like the real one. Its data lives in this process unless a `store`
    keeps it."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, store: Store | None = None) -> None:
        self._host = host
        self._port = port
        self._store = store
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.endpoint_url = ""

    def start(self) -> str:
        """Starts the server in a daemon thread and returns its endpoint URL; raises `OSError` (EADDRINUSE) when
        its port is taken. Its transactions back up only the items they name (`fast_transactions`): moto's copy
        of every table a transaction touches made each one cost the table's size, and the process grow by
        gigabytes with a thousand queues."""
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        serialize_moto_requests()
        fast_queries()
        fast_transactions()
        idempotent_transactions()
        untracked_items()
        fast_serialization()
        # Werkzeug would otherwise log every DynamoDB call to the console.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        listener = _listen(self._host, self._port)
        try:
            app: Callable[..., Any] = DomainDispatcherApplication(create_backend_app)
            if self._store is not None:
                app = self._store.attach(app)
            self._server = make_server(
                self._host, self._port, app, threaded=True, request_handler=MotoRequestHandler, fd=listener.fileno()
            )
        finally:
            listener.close()
        self._thread = threading.Thread(target=self._server.serve_forever, name="dq-dynamodb", daemon=True)
        self._thread.start()
        host, port = self._server.server_address[:2]
        self.endpoint_url = f"http://{host}:{port}"
        return self.endpoint_url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> EmbeddedDynamoDB:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def _listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound here: werkzeug would exit the process when the port is taken, this raises
    `OSError` (EADDRINUSE)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)
    except BaseException:
        listener.close()
        raise
    return listener


def fast_queries() -> None:
    """Idempotent: moto's query lists every item of the table, sorted, then keeps those of the asked partition (or,
    on an index, those carrying its key), so each query cost a sort of the whole table: most of the time of a
    table of a few thousand items. The query is given the partition's items alone (a query of the table), or the
    table's items unsorted (a query of an index, which sorts what it keeps), and the rest of moto's query is left
    as it is: the same items, in the same order, in the same pages. Relies on `serialize_moto_requests` (the list
    is handed to the query through its table for the length of the call)."""
    require_moto_version("fast_queries", MOTO_VERSIONS)
    from moto.dynamodb.models.table import Table

    if getattr(Table.query, "_partition_only", False):
        return
    original = Table.query

    @functools.wraps(original)
    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        if "all_items" in vars(self):  # a view of the table given for this call (a lagging index's): kept
            return original(self, hash_key, *args, **kwargs)
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name is None and hash_key is not None:
            found = self.items.get(hash_key)
            items = [] if found is None else list(found.values()) if self.range_key_attr else [found]
        elif self.range_key_attr:
            items = [item for partition in self.items.values() for item in partition.values()]
        else:
            items = list(self.items.values())
        self.all_items = lambda: items
        try:
            return original(self, hash_key, *args, **kwargs)
        finally:
            del self.all_items

    query._partition_only = True  # type: ignore[attr-defined]
    Table.query = query  # type: ignore[method-assign]


def fast_serialization() -> None:
    """Idempotent: moto builds each answer by looking up every field of every structure it answers (each of an
    item's attribute values included) through a chain of alias providers, a new object of each per field, for
    the names a Python object might hold the field under: a fifth of the time of a test that reads much. For a
    plain dict, what the chain can name is a function of the field's name and shape alone (a dict has no `Meta`,
    and its class is always `dict`), so the names are worked out once per field and shape and then only looked
    up; the answer is the same, byte for byte. Other objects, other pickers and pickers that transform what they
    pick go through the chain as before. Each request also listed every member of its handler's class to find the
    action's method: the names are listed once per class."""
    require_moto_version("fast_serialization", MOTO_VERSIONS)
    from moto.core import responses
    from moto.core.serialize import (
        DEFAULT_ALIAS_PROVIDERS,
        MISSING,
        AttributePickerContext,
        ResponseSerializer,
        XFormedAttributePicker,
    )

    if getattr(ResponseSerializer.get_value, "_by_shape", False):
        return
    original = ResponseSerializer.get_value
    # (field name, id of its shape) -> (the shape, kept so that its id is not reused; the names, in order)
    names: dict[tuple[str, int], tuple[Any, tuple[str, ...]]] = {}

    def get_value(self: Any, value: Any, key: str, shape: Any) -> Any:
        picker = self._value_picker
        if (
            type(value) is not dict
            or type(picker) is not XFormedAttributePicker
            or picker.alias_providers is not DEFAULT_ALIAS_PROVIDERS
            or picker.response_transformers
        ):
            return original(self, value, key, shape)
        known = names.get((key, id(shape)))
        if known is None or known[0] is not shape:
            context = AttributePickerContext(
                obj=value,
                key=key,
                shape=shape,
                operation_model=self.operation_model,
                service_model=self.operation_model.service_model,
                key_path=".".join(self.path),
            )
            known = names[(key, id(shape))] = (shape, tuple(picker.get_possible_keys(context)))
        for name in known[1]:
            found = value.get(name, MISSING)
            if found is not MISSING:
                return found
        return None

    get_value._by_shape = True  # type: ignore[attr-defined]
    ResponseSerializer.get_value = get_value  # type: ignore[method-assign]
    responses.method_names_from_class = functools.cache(responses.method_names_from_class)


def untracked_items() -> None:
    """Idempotent: every moto model keeps each instance it ever made in a list of its class (for moto's dashboard),
    so each DynamoDB item, and each copy of one moto makes (an update copies the old item; a scan or query copies
    what it answers), stayed in memory until the mock was reset: a stress run grew by about 1 GB every 20 minutes,
    almost all of it items no table held any more. Items are now made without that record; nothing else reads it."""
    require_moto_version("untracked_items", MOTO_VERSIONS)
    from moto.dynamodb.models.dynamo_type import Item

    if "__new__" in vars(Item):
        return

    def new(cls: type[Item], *_args: Any, **_kwargs: Any) -> Item:
        return object.__new__(cls)

    Item.__new__ = staticmethod(new)  # type: ignore[assignment, method-assign]


def fast_transactions() -> None:
    """Idempotent: moto backs up every table a transaction touches with a deep copy, so each transaction costs
    time in proportion to the table's size (seconds at a few thousand items). This keeps moto's transaction logic
    and replaces the backup with one of just the items the transaction names and of the length of each touched
    table's stream, restored when the transaction fails (cancelled or refused): tables, indexes and streams end as
    moto's own rollback leaves them."""
    require_moto_version("fast_transactions", MOTO_VERSIONS)
    from moto.dynamodb import models
    from moto.dynamodb.models.dynamo_type import DynamoType

    backend = models.DynamoDBBackend
    if getattr(backend.transact_write_items, "_item_level", False):
        return
    original = backend.transact_write_items

    class _TablesNotCopied:
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, models.Table) else copy.deepcopy(value, memo)

    models.copy = _TablesNotCopied  # type: ignore[assignment]

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        saved = []
        streams: dict[int, tuple[Any, list[Any], int]] = {}
        for entry in transact_items:
            try:
                ((_, operation),) = entry.items()
                table = self.tables[operation["TableName"]]
                key = operation.get("Key") or operation["Item"]
                hash_key = DynamoType(key[table.hash_key_attr])
                range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
                saved.append((table, hash_key, range_key, copy.deepcopy(table.get_item(hash_key, range_key))))
            except (KeyError, ValueError, TypeError, AttributeError):
                continue
            shard = table.stream_shard
            if shard is not None and id(shard) not in streams:
                streams[id(shard)] = (shard, shard.items, len(shard.items))
        try:
            original(self, transact_items)
        except Exception:
            for table, hash_key, range_key, old in reversed(saved):
                _restore(table, hash_key, range_key, old)
            for shard, records, length in streams.values():
                del records[length:]
                shard.items = records
            raise

    transact_write_items._item_level = True  # type: ignore[attr-defined]
    backend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def idempotent_transactions() -> None:
    """Idempotent: moto ignores `TransactWriteItems`' `ClientRequestToken`; DynamoDB does not. A repeat of a
    transaction that committed, with the same token and the same request, within ten minutes, is answered with
    success and applies nothing; the same token with another request is `IdempotentParameterMismatchException`.
    Without this a test cannot show what a commit repeated by the SDK after a lost answer does in the service."""
    require_moto_version("idempotent_transactions", MOTO_VERSIONS)
    from moto.dynamodb.exceptions import DynamodbException
    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler.transact_write_items, "_idempotent", False):
        return
    original = DynamoHandler.transact_write_items
    # In the order they committed, so that expired tokens are dropped from the front.
    committed: OrderedDict[tuple[str, str], tuple[str, float]] = OrderedDict()

    @functools.wraps(original)
    def transact_write_items(self: Any) -> Any:
        token = self.body.get("ClientRequestToken")
        if not token:
            return original(self)
        items = json.dumps(self.body.get("TransactItems"), sort_keys=True, default=str)
        request = hashlib.sha256(items.encode()).hexdigest()
        with _LOCK:
            now = request_time()
            while committed and now - next(iter(committed.values()))[1] > TRANSACTION_TOKEN_SECONDS:
                committed.popitem(last=False)
            seen = committed.get((self.current_account, token))
            if seen is not None:
                if seen[0] != request:
                    raise DynamodbException(
                        "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException",
                        "The request uses the same client token as a previous, but non-identical request.",
                    )
                return _empty_transaction_answer()
            answer = original(self)
            committed[(self.current_account, token)] = (request, now)
            return answer

    transact_write_items._idempotent = True  # type: ignore[attr-defined]
    DynamoHandler.transact_write_items = transact_write_items  # type: ignore[method-assign]


def _empty_transaction_answer() -> Any:
    from moto.core.responses import ActionResult

    return ActionResult({"ConsumedCapacity": [], "ItemCollectionMetrics": {}})


def _restore(table: Any, hash_key: Any, range_key: Any, old: Any) -> None:
    if range_key is None:
        if old is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = old
    elif old is None:
        table.items.get(hash_key, {}).pop(range_key, None)
    else:
        table.items[hash_key][range_key] = old
