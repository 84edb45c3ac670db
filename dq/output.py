"""How `dq` shows answers: Rich tables for people, plain JSON for scripts, one line on stderr for errors.

JSON is written straight to stdout, never through Rich, so it is never wrapped, coloured or cropped whatever the
terminal's width. Human output goes through Rich, which drops colours by itself when stdout is not a terminal.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

SPARK_BLOCKS: Final = "▁▂▃▄▅▆▇█"
BODY_PREVIEW: Final = 60
# The width a table is laid out in when stdout is no terminal and no COLUMNS is set (a pipe, a file): wide enough
# that no header is cut and no row is split, so `dq queues ls | grep` sees whole lines.
PIPE_WIDTH: Final = 10_000
STAT_COLUMNS: Final = (
    ("visible", "depth"),
    ("in_flight", "in flight"),
    ("delayed", "delayed"),
    ("dlq", "DLQ"),
)


class Output:
    """One command's output channel: `--json` picks JSON, otherwise Rich renders for people."""

    def __init__(self, as_json: bool = False) -> None:
        self.as_json = as_json
        self.console = Console(highlight=False, width=None if _terminal_width_known() else PIPE_WIDTH)
        self.errors = Console(stderr=True, highlight=False, soft_wrap=True)

    def document(self, data: Any) -> None:
        """One JSON document: the whole answer of a command."""
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def line(self, data: Any) -> None:
        """One JSON line of a stream (`receive --follow`, `stats --watch`), flushed so a pipe sees it at once."""
        sys.stdout.write(json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def show(self, *renderables: RenderableType) -> None:
        self.console.print(*renderables)

    def say(self, text: str | Text) -> None:
        """One line of prose on stdout, never wrapped."""
        self.console.print(text, soft_wrap=True)

    def lines(self, lines: Sequence[str | Text]) -> None:
        for text in lines:
            self.say(text)

    def note(self, text: str) -> None:
        """Commentary that is not the answer (`no messages`), on stderr so stdout stays the answer."""
        self.errors.print(Text(text, style="dim"))

    def error(self, code: str, message: str) -> None:
        self.errors.print(error_text(code, message))


def _terminal_width_known() -> bool:
    """Whether stdout has a width to fit: a terminal, or COLUMNS given. A pipe has none; Rich would take 80."""
    return sys.stdout.isatty() or "COLUMNS" in os.environ


def error_text(code: str, message: str) -> Text:
    return Text.assemble(("error:", "bold red"), " ", (code, "red"), f": {message}")


def report_error(code: str, message: str) -> None:
    """The one-line error every failed command ends with: `error: QueueNotFound: queue 'x' does not exist`."""
    Console(stderr=True, highlight=False, soft_wrap=True).print(error_text(code, message))


def sparkline(values: Sequence[float]) -> str:
    """Unicode blocks scaled from zero to the largest value, so an empty queue reads as a flat bottom line."""
    top = max(values, default=0)
    if top <= 0:
        return SPARK_BLOCKS[0] * len(values)
    last = len(SPARK_BLOCKS) - 1
    return "".join(SPARK_BLOCKS[min(last, max(0, round(value / top * last)))] for value in values)


def duration(seconds: float | None) -> str:
    """`45 s`, `12 min`, `3 h`, `4 d`: the largest unit that keeps the number whole."""
    if seconds is None:
        return "-"
    whole = int(seconds)
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if whole >= size and whole % size == 0:
            return f"{whole // size} {unit}"
    return f"{whole} s"


def relative(epoch_ms: int | None, now_ms: int | None = None) -> str:
    """`3 s ago` or `in 12 s`, rounded to the second: what a person reads off a time stamp."""
    if epoch_ms is None:
        return "-"
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    seconds = round((epoch_ms - now_ms) / 1000)
    if seconds == 0:
        return "now"
    span = _span(abs(seconds))
    return f"in {span}" if seconds > 0 else f"{span} ago"


def _span(seconds: int) -> str:
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def _attributes(attributes: Mapping[str, str] | None) -> str:
    return ", ".join(f"{key}={value}" for key, value in (attributes or {}).items())


def _preview(body: str) -> str:
    flat = " ".join(body.split())
    return flat if len(flat) <= BODY_PREVIEW else flat[: BODY_PREVIEW - 1] + "…"


def queue_kind(queue: Mapping[str, Any]) -> str:
    return "FIFO" if queue.get("fifo") else "standard"


def settings_summary(queue: Mapping[str, Any]) -> str:
    """The settings in one phrase: `standard, visibility 30 s, 5 receives before the DLQ, 1 shard`."""
    receives = queue.get("max_receive_count", 0)
    parts = [
        queue_kind(queue),
        f"visibility {duration(queue.get('visibility_timeout'))}",
        f"{receives} receives before the DLQ" if receives else "no DLQ",
        f"retention {duration(queue.get('retention_seconds'))}",
    ]
    if queue.get("delay_seconds"):
        parts.append(f"delay {duration(queue['delay_seconds'])}")
    if queue.get("fifo"):
        parts.append(f"dedup window {duration(queue.get('dedup_window_seconds'))}")
        if queue.get("content_based_dedup"):
            parts.append("content-based dedup")
    parts.append(shards_text(queue))
    if queue.get("archive_days"):
        parts.append(f"archive {queue['archive_days']} d")
    return ", ".join(parts)


def shards_text(queue: Mapping[str, Any]) -> str:
    """`4 shards`, or of a queue whose count follows its load `4 shards (auto 1-512)`."""
    shards = queue.get("shards", 1)
    text = f"{shards} shard" + ("" if shards == 1 else "s")
    if queue.get("auto_shards"):
        text += f" (auto {queue.get('min_shards', 1)}-{queue.get('max_shards', shards)})"
    return text


def queues_table(queues: Sequence[Mapping[str, Any]]) -> Table:
    table = Table(box=None, header_style="bold")
    for heading in ("queue", "type", "visibility", "max receives", "retention", "delay", "shards", "created"):
        table.add_column(heading, justify="right" if heading in ("max receives", "shards") else "left")
    for queue in queues:
        table.add_row(
            Text(str(queue["name"]), style="bold cyan"),
            queue_kind(queue),
            duration(queue.get("visibility_timeout")),
            str(queue.get("max_receive_count")),
            duration(queue.get("retention_seconds")),
            duration(queue.get("delay_seconds")),
            f"{queue.get('shards')} auto" if queue.get("auto_shards") else str(queue.get("shards")),
            relative(queue.get("created_at")),
        )
    return table


def queue_view(queue: Mapping[str, Any], clients: Sequence[str]) -> RenderableType:
    """A queue's settings, its figures summed over its clients, and the clients."""
    table = Table(box=None, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("queue", Text(str(queue["name"]), style="bold cyan"))
    table.add_row("settings", settings_summary(queue))
    table.add_row("created", relative(queue.get("created_at")))
    stats = queue.get("stats") or {}
    figures = ", ".join(f"{label} {stats.get(key, 0)}" for key, label in STAT_COLUMNS)
    table.add_row("messages", f"{figures}, oldest {duration(stats.get('oldest_age_seconds'))}")
    table.add_row("clients", ", ".join(clients) or "none yet")
    return table


def priority_lines(total: Mapping[str, Any]) -> list[Text]:
    """A line per priority that has messages, highest first: only when any priority above 0 is in use."""
    bands = total.get("by_priority") or {}
    if not any(priority != "0" for priority in bands):
        return []
    lines = []
    for priority, counts in sorted(bands.items(), reverse=True):
        figures = f"{counts.get('visible', 0)} visible, {counts.get('in_flight', 0)} in flight"
        lines.append(Text(f"priority {priority}: {figures}, {counts.get('delayed', 0)} delayed"))
    return lines


def received_lines(messages: Sequence[Mapping[str, Any]], deleted: bool = False) -> list[Text]:
    """Each message as a few lines: its id and facts, the body, and the receipt handle needed to delete, release
    or extend it (unless it was deleted already). Printed unwrapped, so a handle is copied whole."""
    lines: list[Text] = []
    for message in messages:
        facts = [f"receive {message.get('receive_count')}", f"sent {relative(message.get('sent_at'))}"]
        if message.get("client"):
            facts.append(f"client {message['client']}")
        if message.get("priority"):
            facts.append(f"priority {message['priority']}")
        if message.get("group_id"):
            facts.append(f"group {message['group_id']}")
        if message.get("attributes"):
            facts.append(_attributes(message["attributes"]))
        if deleted:
            facts.append("deleted")
        lines.append(Text.assemble((str(message["message_id"]), "bold cyan"), "  ", (" · ".join(facts), "dim")))
        lines.append(Text(str(message.get("body", ""))))
        if not deleted:
            lines.append(Text.assemble(("receipt ", "dim"), str(message.get("receipt_handle", ""))))
    return lines


def messages_table(messages: Sequence[Mapping[str, Any]]) -> Table:
    """Messages looked at without claiming them (peek, the DLQ). Columns two spaces apart with no outer padding,
    so that a message's row fits in 80 columns with its id whole."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    # An id is what `dq get`, `dq cancel` and `dq dlq redrive --id` take: never cut, the body and the
    # attributes wrap instead when the terminal is narrow.
    id_width = max((len(str(message["message_id"])) for message in messages), default=10)
    table.add_column("message id", no_wrap=True, min_width=id_width)
    for heading in ("state", "body", "attributes", "recv", "sent"):
        table.add_column(heading, justify="right" if heading == "recv" else "left")
    reasons = any(message.get("last_reason") for message in messages)
    if reasons:
        table.add_column("last reason")
    for message in messages:
        cells: list[RenderableType] = [
            Text(str(message["message_id"]), style="cyan"),
            str(message.get("state", "")),
            _preview(str(message.get("body", ""))),
            _attributes(message.get("attributes")),
            str(message.get("receive_count", 0)),
            relative(message.get("sent_at")),
        ]
        if reasons:
            cells.append(Text(_preview(str(message.get("last_reason") or ""))))
        table.add_row(*cells)
    return table


def message_view(message: Mapping[str, Any]) -> Table:
    table = Table(box=None, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("message id", Text(str(message["message_id"]), style="bold cyan"))
    table.add_row("state", str(message.get("state")))
    table.add_row("body", Text(str(message.get("body", ""))))
    if message.get("attributes"):
        table.add_row("attributes", _attributes(message["attributes"]))
    if message.get("group_id"):
        table.add_row("group", str(message["group_id"]))
    if message.get("dedup_id"):
        table.add_row("dedup id", str(message["dedup_id"]))
    table.add_row("receives", str(message.get("receive_count", 0)))
    table.add_row("sent", relative(message.get("sent_at")))
    if message.get("first_received_at"):
        table.add_row("first received", relative(message["first_received_at"]))
    if message.get("visible_at") is not None:
        table.add_row("visible", relative(message["visible_at"]))
    table.add_row("expires", relative(message.get("expires_at")))
    if message.get("moved_reason"):
        table.add_row("moved because", Text(str(message["moved_reason"])))
    for attempt in message.get("attempts") or []:
        ended = relative(attempt.get("at")) if attempt.get("at") else "claim ran out"
        text = Text(f"{attempt.get('reason', '')} ({attempt.get('outcome', '')}, {ended})")
        if attempt.get("detail"):
            text.append("\n" + str(attempt["detail"]), style="dim")
        table.add_row(f"attempt {attempt.get('attempt')}", text)
    if message.get("reasons_dropped"):
        table.add_row("reasons", f"dropped {message['reasons_dropped']} times to keep the body in its item")
    return table


def reasons_table(answer: Mapping[str, Any]) -> Table:
    """The dead letters' distinct last reasons, the most frequent first: `47 x KeyError: 'customer_id'`."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    for heading in ("count", "last reason", "first seen", "last seen"):
        table.add_column(heading, justify="right" if heading == "count" else "left")
    for group in answer.get("reasons") or []:
        count = f"{group.get('count')}{'+' if answer.get('approximate') else ''} x"
        seen = (relative(group.get("first_seen")), relative(group.get("last_seen")))
        table.add_row(count, Text(str(group.get("reason", ""))), *seen)
    return table


def stats_table(
    rows: Sequence[tuple[str, Mapping[str, Any]]], trends: Mapping[str, Sequence[int]] | None = None, title: str = ""
) -> Table:
    """One row per client (and a total), with a sparkline of each row's depth when there is a history."""
    table = Table(box=None, header_style="bold", title=title or None, title_justify="left", title_style="bold")
    table.add_column("client")
    for _, label in STAT_COLUMNS:
        table.add_column(label, justify="right")
    table.add_column("oldest", justify="right")
    if trends is not None:
        table.add_column("depth trend")
    for name, stats in rows:
        cells: list[RenderableType] = [Text(name, style="bold" if name == "total" else "cyan")]
        for key, _ in STAT_COLUMNS:
            value = stats.get(key, 0)
            style = "red" if key == "dlq" and value else ""
            cells.append(Text(f"{value}{'+' if stats.get('approximate') else ''}", style=style))
        cells.append(duration(stats.get("oldest_age_seconds")))
        if trends is not None:
            cells.append(Text(sparkline(trends.get(name, ())), style="green"))
        table.add_row(*cells)
    return table


def metrics_table(answer: Mapping[str, Any]) -> RenderableType:
    """One row per period that CloudWatch holds a point for (local time, minute), the depths' columns as in
    `stats_table`; a queue's also its shard count. An empty period has no row: no sweep published in it."""
    series = answer.get("series", {})
    keys = [key for key, _ in STAT_COLUMNS] + ["oldest_age_seconds"] + (["shards"] if "shards" in series else [])
    by_time: dict[float, dict[str, float]] = {}
    for key in keys:
        for stamp, value in series.get(key, []):
            by_time.setdefault(stamp, {})[key] = value
    where = answer["queue"] + (f"/{answer['client']}" if answer.get("client") else "")
    title = f"{where}: {answer['statistic']} per {duration(answer['period'])} from CloudWatch ({answer['namespace']})"
    if "clients" in answer:
        title += f", {len(answer['clients'])} clients summed" + (
            " (the first by name)" if answer["more_clients"] else ""
        )
    table = Table(box=None, header_style="bold")
    table.add_column("time")
    for _, label in STAT_COLUMNS:
        table.add_column(label, justify="right")
    table.add_column("oldest", justify="right")
    if "shards" in series:
        table.add_column("shards", justify="right")
    for stamp in sorted(by_time):
        row = by_time[stamp]
        cells = [time.strftime("%H:%M", time.localtime(stamp))]
        for key in keys:
            value = row.get(key)
            cells.append("-" if value is None else duration(value) if key == "oldest_age_seconds" else f"{value:g}")
        table.add_row(*cells)
    return Group(Text(title, style="bold"), table)


def epoch_ms(moment: str | None) -> int | None:
    """A time given on the command line, epoch seconds or ISO-8601 with a zone, as epoch milliseconds."""
    if moment is None:
        return None
    try:
        return int(float(moment) * 1000)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(moment)
    except ValueError:
        raise ValueError(f"not a time: {moment!r} (epoch seconds or ISO-8601 with a zone)") from None
    if parsed.tzinfo is None:
        raise ValueError(f"give a zone with {moment!r} (for example Z or +02:00)")
    return int(parsed.timestamp() * 1000)


def archive_table(messages: Sequence[Mapping[str, Any]]) -> Table:
    """Archived messages: id, client, body, receives, when acknowledged."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    id_width = max((len(str(message["message_id"])) for message in messages), default=10)
    table.add_column("message id", no_wrap=True, min_width=id_width)
    for heading in ("client", "body", "recv", "acknowledged"):
        table.add_column(heading, justify="right" if heading == "recv" else "left")
    for message in messages:
        table.add_row(
            Text(str(message["message_id"]), style="cyan"),
            str(message.get("client", "")),
            _preview(str(message.get("body", ""))),
            str(message.get("receive_count", 0)),
            relative(message.get("acked_at")),
        )
    return table


def replay_line(replay: Mapping[str, Any]) -> str:
    """One replay in a line: its id, state and counts, and how far it got."""
    line = (
        f"replay {replay['replay_id']}: {replay['state']}, {replay['replayed']} replayed, "
        f"{replay['skipped']} skipped, {replay['failed']} failed"
    )
    if replay.get("source") == "dlq":
        line += " from the DLQ" + (f" (reason contains {replay['reason']!r})" if replay.get("reason") else "")
    if replay.get("total") is not None:
        line += f" of {replay['total']} ids"
    elif replay.get("reached_at") is not None:
        line += f", reached {relative(replay['reached_at'])}"
    if replay.get("last_error"):
        line += f" (last error: {replay['last_error']})"
    return line


def replays_table(replays: Sequence[Mapping[str, Any]]) -> Table:
    """Replays: id, state, counts, started."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("replay id", no_wrap=True)
    for heading in ("state", "replayed", "skipped", "failed", "rate", "started"):
        table.add_column(heading, justify="right" if heading in ("replayed", "skipped", "failed", "rate") else "left")
    for replay in replays:
        table.add_row(
            Text(str(replay["replay_id"]), style="cyan"),
            str(replay["state"]),
            str(replay["replayed"]),
            str(replay["skipped"]),
            str(replay["failed"]),
            f"{replay['rate']}/s",
            relative(replay.get("created_at")),
        )
    return table


def archive_views(messages: Sequence[Mapping[str, Any]]) -> RenderableType:
    """Each archived copy of a message as `message_view` shows a message, with when it was acknowledged."""
    views: list[RenderableType] = []
    for message in messages:
        view = message_view({**message, "state": "acknowledged"})
        view.add_row("acknowledged", relative(message.get("acked_at")))
        views.append(view)
    return Group(*views)
