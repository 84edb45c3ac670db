"""The `dq` command line: run the queue locally, manage queues, send, receive and look at messages.

Every command is written once against `targets.Target` and so works the same on the HTTP API (`--endpoint`, the
local server by default) and on a table through the core (`--table`). Exit codes: 0 ok, 1 error, 2 usage,
3 nothing found where `--fail-empty` asked for something.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Final
from urllib.parse import urlsplit

import typer
from queue_core.limits import MAX_BATCH, MAX_REPLAY_RUN_SECONDS, MAX_WAIT_SECONDS
from queue_core.version import __version__
from rich.console import RenderableType
from typer.core import TyperGroup

from . import local_defaults
from .batches import numbered_lines, send_lines
from .output import (
    Output,
    archive_table,
    archive_views,
    epoch_ms,
    message_view,
    messages_table,
    metrics_table,
    priority_lines,
    queue_view,
    queues_table,
    reasons_table,
    received_lines,
    relative,
    replay_line,
    replays_table,
    report_error,
    settings_summary,
    stats_table,
)
from .session import Session, UsageProblem
from .targets import LOCAL_ENDPOINT, CoreTarget, TargetChoice, TargetError
from .watch import take, watch

EMPTY: Final = 3
MAX_LISTED_FAILURES: Final = 20


class Commands(TyperGroup):
    """Turns a `TargetError` from any command into its one-line report and exit status 1, in one place."""

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except TargetError as error:
            report_error(error.code, error.message)
            raise typer.Exit(1) from None


SETTINGS = {"help_option_names": ["-h", "--help"]}
app = typer.Typer(cls=Commands, no_args_is_help=True, add_completion=False, context_settings=SETTINGS)
queues_app = typer.Typer(no_args_is_help=True, help="Create, list, show, update and delete queues.")
dlq_app = typer.Typer(no_args_is_help=True, help="A sub-queue's dead-letter queue: list it, redrive it.")
app.add_typer(queues_app, name="queues")
app.add_typer(dlq_app, name="dlq")
archive_app = typer.Typer(
    no_args_is_help=True, help="The archive of acknowledged messages (a queue with archive_days): list it, get one."
)
app.add_typer(archive_app, name="archive")
replay_app = typer.Typer(
    help="Replay archived messages into their sub-queue as new messages: start one (options below), or its "
    "status, resume or cancel."
)
archive_app.add_typer(replay_app, name="replay")

QueueOption = Annotated[
    str | None,
    typer.Option("--queue", "-q", help="Queue name; default $DQ_QUEUE or the shell's `use`.", show_default=False),
]
ClientOption = Annotated[
    str | None,
    typer.Option("--client", "-c", help="Client id; default $DQ_CLIENT or the shell's `use`.", show_default=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of tables.")]
FailEmptyOption = Annotated[bool, typer.Option("--fail-empty", help="Exit with status 3 when there is nothing.")]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation on a terminal.")]


def _endpoint(value: str | None) -> str | None:
    if value is not None:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise typer.BadParameter(f"{value!r} is not an http:// or https:// URL")
    return value


def _print_version(value: bool) -> None:
    """`dq --version`: the release, and the table layout it writes (what `dq migrate` upgrades a table to)."""
    if value:
        from queue_core.layout import CURRENT_LAYOUT  # the store and boto3: only for this answer

        typer.echo(f"dq {__version__} (table layout {CURRENT_LAYOUT})")
        raise typer.Exit()


@app.callback()
def dq(
    ctx: typer.Context,
    endpoint: Annotated[
        str | None,
        typer.Option(
            envvar="DQ_ENDPOINT",
            callback=_endpoint,
            help="The HTTP API: the local server or a deployed API (SigV4-signed). Default http://127.0.0.1:8080.",
            show_default=False,
        ),
    ] = None,
    table: Annotated[
        str | None,
        typer.Option(envvar="DQ_TABLE", help="Use this DynamoDB table directly, through the core.", show_default=False),
    ] = None,
    dynamodb_endpoint: Annotated[
        str | None,
        typer.Option(help="With --table: a local DynamoDB's URL.", show_default=False),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Show the version and table layout, and exit."
        ),
    ] = False,
) -> None:
    """A message queue on Amazon DynamoDB: run it locally, manage queues, send and receive."""
    if ctx.invoked_subcommand == "local":
        return
    named = _named_on_command_line(ctx)
    if endpoint and table:
        # One from the environment, the other on the command line: the command line wins (`--dynamodb-endpoint`
        # goes with `--table` and chooses nothing).
        chosen = named & {"endpoint", "table"}
        if len(chosen) == 1:
            endpoint, table = (endpoint, None) if "endpoint" in chosen else (None, table)
        else:
            raise UsageProblem("give --endpoint or --table, not both")
    if dynamodb_endpoint and not table:
        raise UsageProblem("--dynamodb-endpoint is for --table: the HTTP API has its own DynamoDB")
    choice = TargetChoice(endpoint, table, dynamodb_endpoint)
    if isinstance(ctx.obj, Session):
        if named:
            ctx.obj = ctx.obj.with_choice(choice)
    else:
        ctx.obj = Session(choice)


def _named_on_command_line(ctx: typer.Context) -> set[str]:
    """Which target options the command line gave: they win over the environment (and, in the shell, over the
    shell's own target for that one line)."""
    return {
        name
        for name in ("endpoint", "table", "dynamodb_endpoint")
        if getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE"
    }


def _session(ctx: typer.Context) -> Session:
    return ctx.ensure_object(Session)


def _sub_queue(ctx: typer.Context, queue: str | None, client: str | None) -> tuple[Session, str, str]:
    """The command's `Session` and the sub-queue it works on: the options given, else `$DQ_QUEUE`/`$DQ_CLIENT` or
    the shell's `use`."""
    session = _session(ctx)
    return session, session.resolve_queue(queue), session.resolve_client(client)


def _print(as_json: bool, answer: Any, human: Callable[[], str | RenderableType]) -> Output:
    """A command's answer: the JSON document with --json, else what `human` makes of it for people, a line of
    prose or a view. `human` runs only then, so it may ask the target for more."""
    out = Output(as_json)
    if as_json:
        out.document(answer)
    else:
        shown = human()
        if isinstance(shown, str):
            out.say(shown)
        else:
            out.show(shown)
    return out


def _confirm(question: str, yes: bool) -> None:
    """Asks only a person at a terminal; scripts have said what they mean by running the command."""
    if not yes and sys.stdin.isatty() and not typer.confirm(question):
        raise typer.Abort()


@app.command()
def migrate(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would change; change nothing.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Upgrade the table (--table) in place to the layout this release writes. Idempotent: a run stopped halfway
    is finished by the next. Producers and consumers of this release may keep running; stop or upgrade those
    of earlier releases first."""
    session = _session(ctx)
    target = session.target
    if not isinstance(target, CoreTarget):
        raise UsageProblem("dq migrate works on a table: give --table NAME or set DQ_TABLE")
    out = Output(as_json)
    answer = target.migrate(dry_run, on_step=None if as_json else out.say)
    _print(as_json, answer, lambda: _migration_summary(answer))


def _migration_summary(report: dict[str, Any]) -> str:
    table, target = report["table"], report["target_layout"]
    if not report["changes"]:
        return f"table {table}: {report['found']}; nothing to do"
    resumed = f", resumed after {report['resumed_after']}" if report["resumed_after"] else ""
    looked = f"{report['sub_queues']} sub-queues looked at, {report['markers']} ready markers"
    if report["dry_run"]:
        return f"dry run, nothing changed: table {table} would go to layout {target} ({looked} to put{resumed})"
    return f"table {table} is at layout {target} ({looked} put{resumed})"


# ---- queues ------------------------------------------------------------------------------------------------


@queues_app.command("create")
def queues_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Queue name; a name ending in .fifo makes a FIFO queue.")],
    fifo: Annotated[bool | None, typer.Option("--fifo", help="A FIFO queue.", show_default=False)] = None,
    visibility_timeout: Annotated[int | None, typer.Option(help="Seconds a received message stays hidden.")] = None,
    max_receive_count: Annotated[int | None, typer.Option(help="Receives before the DLQ; 0: never.")] = None,
    retention_seconds: Annotated[int | None, typer.Option(help="Seconds a message is kept.")] = None,
    delay_seconds: Annotated[int | None, typer.Option(help="Default delay of a new message.")] = None,
    dedup_window_seconds: Annotated[int | None, typer.Option(help="FIFO: seconds a dedup id is remembered.")] = None,
    content_based_dedup: Annotated[
        bool | None, typer.Option("--content-based-dedup", help="FIFO: the body's hash is the dedup id.")
    ] = None,
    shards: Annotated[int | None, typer.Option(help="Partitions per client, past 1,000 writes/s.")] = None,
    archive_days: Annotated[
        int | None, typer.Option(help="Days acknowledged messages are kept in the archive (1-90); 0: none.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a queue; again with the same settings is a no-op.

    Other settings for an existing queue are refused (QueueExists). Settings left out take the API's defaults."""
    given = {
        "fifo": fifo,
        "visibility_timeout": visibility_timeout,
        "max_receive_count": max_receive_count,
        "retention_seconds": retention_seconds,
        "delay_seconds": delay_seconds,
        "dedup_window_seconds": dedup_window_seconds,
        "content_based_dedup": content_based_dedup,
        "shards": shards,
        "archive_days": archive_days,
    }
    settings, created = _session(ctx).target.create_queue(name, {k: v for k, v in given.items() if v is not None})
    outcome = f"created queue {name}" if created else f"queue {name} exists with these settings"
    _print(as_json, settings, lambda: f"{outcome}: {settings_summary(settings)}")


@queues_app.command("ls")
def queues_ls(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the queues and their settings."""
    answer = _session(ctx).target.list_queues()
    out = Output(as_json)
    if as_json:
        out.document(answer)
    elif answer["queues"]:
        out.show(queues_table(answer["queues"]))
    else:
        out.note("no queues; create one with `dq queues create NAME`")


@queues_app.command("show")
def queues_show(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="Queue name; default --queue.", show_default=False)] = None,
    queue: QueueOption = None,
    as_json: JsonOption = False,
) -> None:
    """A queue's settings and its message figures summed over its clients."""
    session = _session(ctx)
    name = session.resolve_queue(name or queue)
    answer = session.target.get_queue(name)
    _print(as_json, answer, lambda: queue_view(answer, session.target.clients(name)))


@queues_app.command("update")
def queues_update(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Queue name.")],
    visibility_timeout: Annotated[int | None, typer.Option(help="Seconds a received message stays hidden.")] = None,
    max_receive_count: Annotated[int | None, typer.Option(help="Receives before the DLQ; 0: never.")] = None,
    retention_seconds: Annotated[int | None, typer.Option(help="Seconds a message is kept.")] = None,
    delay_seconds: Annotated[int | None, typer.Option(help="Default delay of a new message.")] = None,
    dedup_window_seconds: Annotated[int | None, typer.Option(help="FIFO: seconds a dedup id is remembered.")] = None,
    shards: Annotated[
        int | None, typer.Option(help="Partitions per client; messages already sent are not lost.")
    ] = None,
    archive_days: Annotated[
        int | None, typer.Option(help="Days acknowledged messages are kept in the archive (1-90); 0: none.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Change a live queue's settings; those not given keep their values.

    Whether a queue is FIFO and content-based dedup are fixed when it is created."""
    given = {
        "visibility_timeout": visibility_timeout,
        "max_receive_count": max_receive_count,
        "retention_seconds": retention_seconds,
        "delay_seconds": delay_seconds,
        "dedup_window_seconds": dedup_window_seconds,
        "shards": shards,
        "archive_days": archive_days,
    }
    changes = {key: value for key, value in given.items() if value is not None}
    if not changes:
        options = ", ".join(f"--{key.replace('_', '-')}" for key in given)
        raise UsageProblem(f"nothing to change: give at least one of {options}")
    settings = _session(ctx).target.update_queue(name, changes)
    _print(as_json, settings, lambda: f"updated queue {name}: {settings_summary(settings)}")


@queues_app.command("delete")
def queues_delete(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Queue name.")],
    yes: YesOption = False,
    as_json: JsonOption = False,
) -> None:
    """Delete a queue and every message of every client."""
    _confirm(f"Delete queue {name} and all its messages?", yes)
    answer = _session(ctx).target.delete_queue(name)
    _print(as_json, answer, lambda: f"deleted queue {name} and its messages")


# ---- messages ----------------------------------------------------------------------------------------------


def _attributes(pairs: Sequence[str]) -> dict[str, str]:
    attributes = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--attribute")
        attributes[key] = value
    return attributes


def _body(body: str | None, file: Path | None) -> str:
    if (body is None) == (file is None):
        raise UsageProblem("give the body as an argument, - for stdin, --file PATH, or --batch FILE.jsonl")
    if file is not None:
        try:
            return file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise typer.BadParameter(f"{file} is not UTF-8 text; a body is text", param_hint="--file") from None
    if body == "-":
        text = sys.stdin.read()
        return text[:-1] if text.endswith("\n") else text
    return str(body)


@app.command()
def send(
    ctx: typer.Context,
    body: Annotated[
        str | None, typer.Argument(help="The body; - reads stdin (one trailing newline dropped).", show_default=False)
    ] = None,
    queue: QueueOption = None,
    client: ClientOption = None,
    file: Annotated[
        Path | None,
        typer.Option("--file", "-f", exists=True, dir_okay=False, help="Read the body from a file, as it is."),
    ] = None,
    attribute: Annotated[
        list[str] | None, typer.Option("--attribute", "-a", help="KEY=VALUE, repeatable.", show_default=False)
    ] = None,
    delay: Annotated[int | None, typer.Option(help="Seconds before it can be received.", show_default=False)] = None,
    group: Annotated[str | None, typer.Option(help="FIFO: the message group.", show_default=False)] = None,
    dedup_id: Annotated[str | None, typer.Option(help="Deduplication id.", show_default=False)] = None,
    priority: Annotated[
        int | None, typer.Option(help="0-9, 9 received first (standard queues).", show_default=False)
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            help="Deliver at this time: epoch seconds or ISO-8601 with a zone (up to the retention less 60 s).",
            show_default=False,
        ),
    ] = None,
    batch: Annotated[
        str | None,
        typer.Option(help="Send every line of a JSON lines file (- for stdin), 25 per request.", show_default=False),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Send one message, or many with --batch.

    The body comes from the argument, stdin (-) or --file. With --batch each line is a message object of the
    HTTP API: {"body": …, "attributes": {…}, "delay_seconds": …, "group_id": …, "dedup_id": …}."""
    session, queue, client = _sub_queue(ctx, queue, client)
    if batch is not None:
        single = [body, file, attribute, delay, group, dedup_id, priority, at]
        if any(value for value in single):
            raise UsageProblem("--batch takes each message from its line; give no body or message options")
        _send_batch(session, queue, client, batch, Output(as_json))
        return
    message: dict[str, Any] = {"body": _body(body, file)}
    if attribute:
        message["attributes"] = _attributes(attribute)
    for key, value in (
        ("delay_seconds", delay),
        ("group_id", group),
        ("dedup_id", dedup_id),
        ("priority", priority),
        ("deliver_at", _deliver_at(at)),
    ):
        if value is not None:
            message[key] = value
    answer = session.target.send(queue, client, message)
    _print(
        as_json,
        answer,
        lambda: (
            f"duplicate of {answer['message_id']}: its dedup id was seen inside the window, nothing sent"
            if answer.get("duplicate")
            else f"sent {answer['message_id']}"
        ),
    )


def _send_batch(session: Session, queue: str, client: str, source: str, out: Output) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    if source == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as error:
            raise typer.BadParameter(f"cannot read {source}: {error.strerror}", param_hint="--batch") from None
    lines = numbered_lines(text.splitlines())
    if out.errors.is_terminal:
        columns = (TextColumn("sending"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, console=out.errors, transient=True) as progress:
            task = progress.add_task("send", total=len(lines))
            report = send_lines(session.target, queue, client, lines, lambda n: progress.advance(task, n))
    else:
        report = send_lines(session.target, queue, client, lines)
    if out.as_json:
        out.document(report.to_dict())
    else:
        failed = len(report.failed)
        out.say(f"sent {report.sent} of {len(lines)} messages" + (f", {failed} failed" if failed else ""))
        for failure in report.to_dict()["failed"][:MAX_LISTED_FAILURES]:
            out.error(failure["code"], f"line {failure['line']}: {failure['message']}")
        if failed > MAX_LISTED_FAILURES:
            out.note(f"and {failed - MAX_LISTED_FAILURES} more failed lines")
    if report.stopped is not None:
        message = f"{report.stopped.message} (stopped at line {report.stopped_at}; it and later lines were not sent)"
        if not out.as_json:
            out.error(report.stopped.code, message)
    if report.failed or report.stopped is not None:
        raise typer.Exit(1)


def _deliver_at(at: str | None) -> float | str | None:
    """Epoch seconds as a number, anything else as the ISO-8601 text it should be (the queue checks both)."""
    if at is None:
        return None
    try:
        return float(at)
    except ValueError:
        return at


@app.command()
def receive(
    ctx: typer.Context,
    queue: QueueOption = None,
    client: Annotated[
        str | None,
        typer.Option(
            "--client", "-c", help="One client; default every client of the queue, fairly.", show_default=False
        ),
    ] = None,
    max_messages: Annotated[int, typer.Option("--max", "-n", help="Messages per receive, 1-10.")] = 1,
    wait: Annotated[
        int | None, typer.Option("--wait", "-w", help="Long poll: wait up to this many seconds (0-20).")
    ] = None,
    visibility: Annotated[
        int | None, typer.Option(help="Seconds the messages stay hidden; default the queue's.", show_default=False)
    ] = None,
    newest: Annotated[bool, typer.Option("--newest", help="Newest first (standard queues).")] = False,
    delete: Annotated[bool, typer.Option("--delete", help="Delete what was received: read and done.")] = False,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep receiving (20 s long polls) until Ctrl-C.")
    ] = False,
    count: Annotated[
        int | None, typer.Option(help="With --follow: stop after this many messages.", show_default=False)
    ] = None,
    fail_empty: FailEmptyOption = False,
    as_json: JsonOption = False,
) -> None:
    """Receive messages: hidden from other receivers until deleted, released or their visibility ends. Without a
    client, from every client of the queue: the highest priority first, the clients in a fair rotation."""
    session = _session(ctx)
    queue, client = session.resolve_queue(queue), session.client_or_all(client)
    if follow and fail_empty:
        raise UsageProblem("--fail-empty is for one receive, not with --follow")
    if count is not None and not follow:
        raise UsageProblem("--count is for --follow")
    request: dict[str, Any] = {"max_messages": max_messages}
    if wait is not None or follow:
        request["wait_seconds"] = MAX_WAIT_SECONDS if wait is None else wait
    if visibility is not None:
        request["visibility_timeout"] = visibility
    if newest:
        request["order"] = "newest"
    out = Output(as_json)
    if follow:
        _follow(session, queue, client, request, delete, count, out)
        return
    answer = session.target.receive(queue, client, request)
    messages = answer["messages"]
    deleted = _delete_received(session, queue, client, messages) if delete and messages else None
    if as_json:
        out.document(answer if deleted is None else {**answer, "deleted": deleted})
    elif messages:
        out.lines(received_lines(messages, deleted=delete))
    else:
        out.note("no messages")
    if deleted is not None and deleted["failed"]:
        _report_failures(out, deleted["failed"], "deleting")
        raise typer.Exit(1)
    if fail_empty and not messages:
        raise typer.Exit(EMPTY)


def _delete_received(
    session: Session, queue: str, client: str | None, messages: list[dict[str, Any]]
) -> dict[str, Any]:
    return session.target.delete(queue, client, [message["receipt_handle"] for message in messages])


def _report_failures(out: Output, failures: list[dict[str, Any]], doing: str) -> None:
    for failure in failures:
        out.error(str(failure.get("code")), f"{doing} #{failure.get('index')}: {failure.get('message')}")


def _follow(
    session: Session,
    queue: str,
    client: str | None,
    request: dict[str, Any],
    delete: bool,
    count: int | None,
    out: Output,
) -> None:
    """Long polls back to back, printing each message as it comes (a JSON line each with --json); Ctrl-C or
    `count` messages end it, with status 0."""
    received = 0
    try:
        while count is None or received < count:
            ask = dict(request)
            if count is not None:
                ask["max_messages"] = min(request["max_messages"], count - received)
            messages = session.target.receive(queue, client, ask)["messages"]
            if not messages:
                continue
            deleted = _delete_received(session, queue, client, messages) if delete else None
            received += len(messages)
            if out.as_json:
                for message in messages:
                    out.line(message)
            else:
                out.lines(received_lines(messages, deleted=delete))
            if deleted is not None and deleted["failed"]:
                _report_failures(out, deleted["failed"], "deleting")
    except KeyboardInterrupt:
        out.note(f"stopped after {received} messages")


@app.command("delete")
def delete_messages(
    ctx: typer.Context,
    receipt_handles: Annotated[list[str], typer.Argument(help="Receipt handles from `dq receive`.")],
    queue: QueueOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete received messages by receipt handle: done with them."""
    session, queue, client = _sub_queue(ctx, queue, client)
    answer: dict[str, list[dict[str, Any]]] = {"successful": [], "failed": []}
    for start in range(0, len(receipt_handles), MAX_BATCH):
        part = session.target.delete(queue, client, receipt_handles[start : start + MAX_BATCH])
        for key in ("successful", "failed"):
            answer[key] += [{**entry, "index": entry["index"] + start} for entry in part[key]]
    out = _print(as_json, answer, lambda: f"deleted {len(answer['successful'])} of {len(receipt_handles)} messages")
    if answer["failed"]:
        if not as_json:
            _report_failures(out, answer["failed"], "receipt handle")
        raise typer.Exit(1)


@app.command()
def release(
    ctx: typer.Context,
    receipt_handle: Annotated[str, typer.Argument(help="Receipt handle from `dq receive`.")],
    delay: Annotated[
        int | None,
        typer.Option(help="Seconds before it is visible again; default a randomized backoff.", show_default=False),
    ] = None,
    reason: Annotated[
        str | None, typer.Option(help="Why it failed, kept with the message.", show_default=False)
    ] = None,
    queue: QueueOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
) -> None:
    """Give a received message back (nack) for another receive, now, later, or after a backoff."""
    session, queue, client = _sub_queue(ctx, queue, client)
    answer = session.target.release(queue, client, receipt_handle, delay, reason)
    _print(as_json, answer, lambda: f"released: visible again {relative(answer['visible_at'])}")


@app.command()
def visibility(
    ctx: typer.Context,
    receipt_handle: Annotated[str, typer.Argument(help="Receipt handle from `dq receive`.")],
    seconds: Annotated[int, typer.Argument(help="Hidden for this many seconds from now (0-43200).")],
    queue: QueueOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change a received message's visibility timeout: more time to work on it, or 0 to give it back now."""
    session, queue, client = _sub_queue(ctx, queue, client)
    answer = session.target.change_visibility(queue, client, receipt_handle, seconds)
    _print(as_json, answer, lambda: f"visible again {relative(answer['visible_at'])}")


@app.command()
def peek(
    ctx: typer.Context,
    queue: QueueOption = None,
    client: ClientOption = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many (1-100).")] = 10,
    fail_empty: FailEmptyOption = False,
    as_json: JsonOption = False,
) -> None:
    """Look at visible messages, oldest first, without receiving them."""
    session, queue, client = _sub_queue(ctx, queue, client)
    _list_messages(session.target.peek(queue, client, limit), Output(as_json), fail_empty)


@app.command()
def browse(
    ctx: typer.Context,
    queue: QueueOption = None,
    client: ClientOption = None,
    state: Annotated[
        str | None, typer.Option(help="Only messages in this state: visible, in_flight or delayed.", show_default=False)
    ] = None,
    priority: Annotated[
        int | None, typer.Option(help="Only this priority (0-9; standard queues).", show_default=False)
    ] = None,
    group: Annotated[str | None, typer.Option(help="Only this group (FIFO queues).", show_default=False)] = None,
    cursor: Annotated[
        str | None, typer.Option(help="Go on from where the previous page stopped.", show_default=False)
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many (1-100).")] = 10,
    fail_empty: FailEmptyOption = False,
    as_json: JsonOption = False,
) -> None:
    """List waiting messages in every state (visible, in flight, delayed) without receiving them, page by page.

    Each call reads a bounded part of the sub-queue: with filters a page may be short, and `--cursor` goes on."""
    session, queue, client = _sub_queue(ctx, queue, client)
    filters = {"state": state, "priority": priority, "group": group, "cursor": cursor}
    answer = session.target.browse(queue, client, limit, filters)
    out = Output(as_json)
    if not as_json:
        answer = {**answer, "messages": [{**m, "state": _state_until(m)} for m in answer["messages"]]}
    _list_messages(answer, out, fail_empty)
    if not as_json and answer.get("cursor"):
        out.note(f"more: --cursor {answer['cursor']}")


def _state_until(message: dict[str, Any]) -> str:
    until = message.get("until")
    return str(message.get("state")) if until is None else f"{message.get('state')} until {relative(until)}"


def _list_messages(answer: dict[str, Any], out: Output, fail_empty: bool) -> None:
    if out.as_json:
        out.document(answer)
    elif answer["messages"]:
        out.show(messages_table(answer["messages"]))
    else:
        out.note("no messages")
    if fail_empty and not answer["messages"]:
        raise typer.Exit(EMPTY)


@app.command()
def get(
    ctx: typer.Context,
    message_id: Annotated[str, typer.Argument(help="Message id from `dq send`.")],
    queue: QueueOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
) -> None:
    """One message by id, with its state: visible, in_flight, delayed or dlq."""
    session, queue, client = _sub_queue(ctx, queue, client)
    answer = session.target.get(queue, client, message_id)
    _print(as_json, answer, lambda: message_view(answer))


@app.command()
def cancel(
    ctx: typer.Context,
    message_id: Annotated[str, typer.Argument(help="Message id from `dq send`.")],
    queue: QueueOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
) -> None:
    """Cancel a message before it is processed, wherever it is (waiting, in flight, in the DLQ)."""
    session, queue, client = _sub_queue(ctx, queue, client)
    answer = session.target.cancel(queue, client, message_id)
    _print(as_json, answer, lambda: f"cancelled {message_id}")


@app.command()
def purge(
    ctx: typer.Context,
    queue: QueueOption = None,
    client: ClientOption = None,
    yes: YesOption = False,
    as_json: JsonOption = False,
) -> None:
    """Remove every waiting and in-flight message of a sub-queue (its DLQ stays)."""
    session, queue, client = _sub_queue(ctx, queue, client)
    _confirm(f"Remove every message of {queue}/{client}?", yes)
    answer = session.target.purge(queue, client)
    _print(as_json, answer, lambda: f"purged {answer['purged']} messages from {queue}/{client}")


@app.command("move-to-dlq")
def move_to_dlq(
    ctx: typer.Context,
    message_id: Annotated[str, typer.Argument(help="Message id of a waiting message.")],
    queue: QueueOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
) -> None:
    """Mark a waiting message as invalid: it goes to the DLQ now, whatever its receive count."""
    session, queue, client = _sub_queue(ctx, queue, client)
    answer = session.target.move_to_dlq(queue, client, message_id)
    _print(as_json, answer, lambda: f"moved {message_id} to the DLQ")


@app.command()
def stats(
    ctx: typer.Context,
    queue: QueueOption = None,
    client: Annotated[
        str | None, typer.Option("--client", "-c", help="One client; default every client.", show_default=False)
    ] = None,
    watch_: Annotated[bool, typer.Option("--watch", "-w", help="A live view, refreshed until Ctrl-C.")] = False,
    interval: Annotated[float, typer.Option(help="With --watch: seconds between refreshes.")] = 2.0,
    count: Annotated[
        int | None, typer.Option(help="With --watch: stop after this many refreshes.", show_default=False)
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Depth, in flight, delayed, DLQ and oldest age, per client of a queue and in total.

    Depth is the visible messages. With --client, that one client's figures."""
    session = _session(ctx)
    queue = session.resolve_queue(queue)
    out = Output(as_json)
    if watch_:
        if interval <= 0:
            raise typer.BadParameter("must be more than 0", param_hint="--interval")
        try:
            watch(session.target, queue, client, out, interval, count)
        except KeyboardInterrupt:
            out.note("stopped")
        return
    if count is not None:
        raise UsageProblem("--count is for --watch")
    snapshot = take(session.target, queue, client)
    if as_json:
        out.document(snapshot.total if client else snapshot.to_dict())
    else:
        out.show(stats_table(snapshot.rows(), title=queue))
        out.lines(priority_lines(snapshot.total))


@app.command()
def metrics(
    ctx: typer.Context,
    queue: QueueOption = None,
    client: Annotated[
        str | None, typer.Option("--client", "-c", help="One client; default the queue's.", show_default=False)
    ] = None,
    minutes: Annotated[int, typer.Option(min=5, max=1440, help="How far back.")] = 60,
    period: Annotated[int, typer.Option(min=60, max=3600, help="Seconds per point (a multiple of 60).")] = 60,
    namespace: Annotated[
        str, typer.Option(help="The stack's metrics namespace (its metrics_namespace).")
    ] = "DynamoQueue",
    region: Annotated[
        str | None, typer.Option(help="Default the API host's region, else the profile's.", show_default=False)
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """What a deployed stack published to CloudWatch: depths and oldest age per minute, for a queue or a client.

    Read with the caller's credentials (GetMetricData, Maximum per period). A queue's depths are its clients'
    summed (oldest age: their maximum), with its shard count. The local server publishes no metric."""
    from .metrics import Window, reader_for

    session = _session(ctx)
    queue = session.resolve_queue(queue)
    if session.choice.table:
        raise UsageProblem("metrics are read for a deployed API: give --endpoint, not --table")
    reader = reader_for(session.choice.endpoint or LOCAL_ENDPOINT, namespace, region)
    answer = reader.read(queue, client, Window(minutes, period))
    _print(as_json, answer, lambda: metrics_table(answer))


# ---- dead-letter queue -------------------------------------------------------------------------------------


@dlq_app.command("ls")
def dlq_ls(
    ctx: typer.Context,
    queue: QueueOption = None,
    client: ClientOption = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many (1-100).")] = 10,
    fail_empty: FailEmptyOption = False,
    as_json: JsonOption = False,
) -> None:
    """List the messages in a sub-queue's DLQ."""
    session, queue, client = _sub_queue(ctx, queue, client)
    _list_messages(session.target.dlq_list(queue, client, limit), Output(as_json), fail_empty)


@dlq_app.command("redrive")
def dlq_redrive(
    ctx: typer.Context,
    queue: QueueOption = None,
    client: ClientOption = None,
    max_messages: Annotated[
        int | None, typer.Option("--max", "-n", help="At most this many, oldest first.", show_default=False)
    ] = None,
    message_id: Annotated[
        list[str] | None, typer.Option("--id", help="Only this message, repeatable.", show_default=False)
    ] = None,
    reason: Annotated[
        str | None,
        typer.Option(help="Only the dead letters whose last reason contains this text.", show_default=False),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Move DLQ messages back to the queue with their receive counts reset: all, the oldest --max, or --id."""
    session, queue, client = _sub_queue(ctx, queue, client)
    answer = session.target.redrive(queue, client, max_messages, message_id or None, reason)
    _print(as_json, answer, lambda: f"redrove {answer['redriven']} messages from the DLQ of {queue}/{client}")


@dlq_app.command("reasons")
def dlq_reasons(
    ctx: typer.Context,
    queue: QueueOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
) -> None:
    """Why the dead letters failed: each distinct last reason with its count and first and last seen."""
    session, queue, client = _sub_queue(ctx, queue, client)
    answer = session.target.dlq_reasons(queue, client)
    _print(as_json, answer, lambda: reasons_table(answer))


# ---- archive -------------------------------------------------------------------------------------------------


@archive_app.command("ls")
def archive_ls(
    ctx: typer.Context,
    queue: QueueOption = None,
    client: Annotated[
        str | None, typer.Option("--client", "-c", help="One client; default every client.", show_default=False)
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Acknowledged at or after: epoch seconds or ISO-8601.", show_default=False)
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Acknowledged at or before: epoch seconds or ISO-8601.", show_default=False)
    ] = None,
    oldest: Annotated[bool, typer.Option("--oldest", help="Oldest first (default newest first).")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many (1-100).")] = 10,
    cursor: Annotated[str | None, typer.Option(help="The previous page's cursor.", show_default=False)] = None,
    as_json: JsonOption = False,
) -> None:
    """List acknowledged messages the archive keeps, by time range, a page at a time (the next page's --cursor is
    printed on stderr)."""
    session = _session(ctx)
    queue, client = session.resolve_queue(queue), session.client_or_all(client)
    try:
        bounds = {"since": epoch_ms(since), "until": epoch_ms(until)}
    except ValueError as problem:
        raise UsageProblem(str(problem)) from None
    query = {
        **bounds,
        "order": "oldest" if oldest else "newest",
        "limit": limit,
        "cursor": cursor,
    }
    answer = session.target.archive_list(queue, client, query)
    _print(as_json, answer, lambda: archive_table(answer["messages"]))
    if answer.get("cursor") and not as_json:
        print(f"next page: --cursor {answer['cursor']}", file=sys.stderr)


@archive_app.command("get")
def archive_get(
    ctx: typer.Context,
    message_id: Annotated[str, typer.Argument(help="The message's id.")],
    queue: QueueOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
) -> None:
    """One acknowledged message from the archive: each time it was acknowledged, with its attempts."""
    session, queue, client = _sub_queue(ctx, queue, client)
    answer = session.target.archive_get(queue, client, message_id)
    _print(as_json, answer, lambda: archive_views(answer["messages"]))


@replay_app.callback(invoke_without_command=True)
def archive_replay(
    ctx: typer.Context,
    queue: QueueOption = None,
    client: ClientOption = None,
    since: Annotated[
        str | None, typer.Option(help="Acknowledged at or after: epoch seconds or ISO-8601.", show_default=False)
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(help="Acknowledged at or before: epoch seconds or ISO-8601; default now.", show_default=False),
    ] = None,
    message_id: Annotated[
        list[str] | None,
        typer.Option("--id", help="This message (its latest archived copy) instead of a range; repeatable."),
    ] = None,
    attribute: Annotated[
        list[str] | None,
        typer.Option("--attribute", "-a", help="Only messages with KEY=VALUE, repeatable.", show_default=False),
    ] = None,
    rate: Annotated[
        int | None, typer.Option(help="New messages a second, at most (1-1000; default 100).", show_default=False)
    ] = None,
    from_dlq: Annotated[
        bool,
        typer.Option(
            "--from-dlq", help="The DLQ's dead letters instead (--since/--until: when they died), each leaving the DLQ."
        ),
    ] = False,
    reason: Annotated[
        str | None,
        typer.Option(help="With --from-dlq: only dead letters whose last reason contains this.", show_default=False),
    ] = None,
    detach: Annotated[
        bool, typer.Option("--detach", help="Start it and print its id; run it later with `replay resume`.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Replay archived messages into their sub-queue as new messages carrying `replayed_from`: a time range (or
    --id), narrowed by --attribute, at --rate; runs it to its end, printing progress (Ctrl-C leaves it to resume).
    With --from-dlq, the dead letters (by --reason) instead, as `dq dlq reasons` groups them."""
    if ctx.invoked_subcommand is not None:
        return
    session, queue, client = _sub_queue(ctx, queue, client)
    try:
        bounds = {"since": epoch_ms(since), "until": epoch_ms(until)}
    except ValueError as problem:
        raise UsageProblem(str(problem)) from None
    request = {
        **bounds,
        "message_ids": message_id or None,
        "attributes": _attributes(attribute) if attribute else None,
        "rate": rate,
        "source": "dlq" if from_dlq else None,
        "reason": reason,
    }
    answer = session.target.replay_start(queue, client, request)
    if not detach:
        answer = _replay_to_end(session, queue, client, answer, as_json)
    _print(as_json, answer, lambda: replay_line(answer))


def _replay_to_end(session: Session, queue: str, client: str, answer: Any, as_json: bool) -> Any:
    """Runs a replay a call at a time until it is done or cancelled, a progress line on stderr after each."""
    try:
        while answer["state"] == "running":
            answer = session.target.replay_run(queue, client, answer["replay_id"], MAX_REPLAY_RUN_SECONDS)
            if not as_json and answer["state"] == "running":
                print(replay_line(answer), file=sys.stderr)
    except KeyboardInterrupt:
        print(f"stopped; go on with: dq archive replay resume {answer['replay_id']}", file=sys.stderr)
        raise typer.Exit(130) from None
    return answer


@replay_app.command("status")
def archive_replay_status(
    ctx: typer.Context,
    replay_id: Annotated[str | None, typer.Argument(help="The replay's id; default the latest replays.")] = None,
    queue: QueueOption = None,
    client: ClientOption = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many (1-100).")] = 10,
    as_json: JsonOption = False,
) -> None:
    """Where a replay stands (or the sub-queue's latest replays): state, messages replayed, skipped and failed."""
    session, queue, client = _sub_queue(ctx, queue, client)
    answer = session.target.replay_list(queue, client, replay_id, limit)
    _print(as_json, answer, lambda: replays_table(answer["replays"]))


@replay_app.command("resume")
def archive_replay_resume(
    ctx: typer.Context,
    replay_id: Annotated[str, typer.Argument(help="The replay's id.")],
    queue: QueueOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
) -> None:
    """Go on with a running replay from where it stopped (after a crash, an error or --detach) to its end."""
    session, queue, client = _sub_queue(ctx, queue, client)
    [answer] = session.target.replay_list(queue, client, replay_id, 1)["replays"]
    answer = _replay_to_end(session, queue, client, answer, as_json)
    _print(as_json, answer, lambda: replay_line(answer))


@replay_app.command("cancel")
def archive_replay_cancel(
    ctx: typer.Context,
    replay_id: Annotated[str, typer.Argument(help="The replay's id.")],
    queue: QueueOption = None,
    client: ClientOption = None,
    as_json: JsonOption = False,
) -> None:
    """Cancel a running replay: nothing more is sent; its counts are final."""
    session, queue, client = _sub_queue(ctx, queue, client)
    answer = session.target.replay_cancel(queue, client, replay_id)
    _print(as_json, answer, lambda: replay_line(answer))


# ---- local server and shell --------------------------------------------------------------------------------


@app.command()
def local(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = local_defaults.DEFAULT_PORT,
    dynamodb_endpoint: Annotated[
        str | None,
        typer.Option(help="Use this DynamoDB instead of the embedded one.", envvar="AWS_ENDPOINT_URL_DYNAMODB"),
    ] = None,
    dynamodb_port: Annotated[
        int, typer.Option(help="The embedded DynamoDB's port on 127.0.0.1.")
    ] = local_defaults.DEFAULT_DYNAMODB_PORT,
    table: Annotated[str, typer.Option(help="Table name.")] = local_defaults.DEFAULT_TABLE,
    sweep_interval: Annotated[
        float, typer.Option(help="Seconds between sweeps; 0: never.")
    ] = local_defaults.DEFAULT_SWEEP_INTERVAL,
    consumer: Annotated[
        list[str] | None,
        typer.Option(
            metavar="SPEC",
            help="Push a sub-queue's messages to a function as SQS events. SPEC is "
            "QUEUE/CLIENT=module:function (repeatable; the module is imported from the working directory).",
        ),
    ] = None,
    data_dir: Annotated[
        str | None,
        typer.Option(
            help=f"The embedded DynamoDB's folder, kept across restarts (default ./{local_defaults.DEFAULT_DATA_DIR}).",
            show_default=False,
        ),
    ] = None,
    in_memory: Annotated[bool, typer.Option("--in-memory", help="Keep no data: it is gone when this stops.")] = False,
    reset: Annotated[bool, typer.Option("--reset", help="Empty the data folder before starting.")] = False,
) -> None:
    """Serve the HTTP API on 127.0.0.1 with an embedded DynamoDB and the sweeper on its schedule.

    Queues and messages are kept across restarts in ./.dq-local (--data-dir), each write on disk before its answer.
    --in-memory keeps nothing; --reset starts empty."""
    from . import local_server

    try:
        local_server.serve(
            port,
            dynamodb_endpoint or None,
            table,
            sweep_interval,
            consumer or [],
            dynamodb_port,
            data_dir,
            in_memory,
            reset,
        )
    except local_server.LocalServerError as error:
        typer.echo(f"dq local: {error}", err=True)
        raise typer.Exit(1) from None


@app.command()
def console(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1; default a free one.")] = 0,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the console in the default browser.")] = False,
    api: Annotated[
        str | None,
        typer.Option(
            "--api",
            callback=_endpoint,
            help="The HTTP API, as the global --endpoint (which it overrides).",
            show_default=False,
        ),
    ] = None,
    namespace: Annotated[
        str, typer.Option(help="With a deployed API: the metrics namespace its charts read from CloudWatch.")
    ] = "DynamoQueue",
    region: Annotated[
        str | None,
        typer.Option(help="CloudWatch's region; default the API host's, else the profile's.", show_default=False),
    ] = None,
) -> None:
    """A web console on 127.0.0.1 over the same API as every dq command: queues, clients, messages, the DLQ.

    Prints its URL with a secret. Calls to a deployed API are signed here; no credential reaches the browser.
    Against a deployed API the charts also show what its functions published to CloudWatch (as `dq metrics`)."""
    from .console import server as console_server
    from .metrics import MetricsUnavailable, reader_for
    from .targets import HttpTarget

    choice = _session(ctx).choice
    if choice.table and not api:
        raise UsageProblem("the console works over the HTTP API: give --endpoint or --api, not --table")
    endpoint = api or choice.endpoint or LOCAL_ENDPOINT
    try:
        reader, no_metrics = reader_for(endpoint, namespace, region), ""
    except MetricsUnavailable as error:
        reader, no_metrics = None, error.message
    try:
        console_server.serve(HttpTarget(endpoint), port, open_browser, reader, no_metrics)
    except console_server.ConsoleError as error:
        typer.echo(f"dq console: {error}", err=True)
        raise typer.Exit(1) from None


@app.command()
def shell(ctx: typer.Context) -> None:
    """An interactive dq with history, Tab completion and `use QUEUE CLIENT`.

    Each line is a dq command without the `dq`. Without a terminal it runs the lines of stdin, so it can be
    scripted."""
    from .shell import Shell

    interactive = Shell(_session(ctx), typer.main.get_command(app), run_line)
    status = interactive.interact() if sys.stdin.isatty() else interactive.run_lines(sys.stdin)
    raise typer.Exit(status)


def run_line(words: list[str], session: Session) -> int:
    """One shell line through the same command tree as the command line; its exit status."""
    try:
        status = app(args=words, prog_name="dq", standalone_mode=False, obj=session)
    except typer.TyperException as error:
        report_error("UsageError", error.format_message())
        return error.exit_code
    except typer.Abort:
        return 1
    return status if isinstance(status, int) else 0


def main() -> None:
    app(prog_name="dq")


if __name__ == "__main__":
    main()
