"""`dq shell` driven by a script on stdin, and its Tab completion."""

from __future__ import annotations

import json

import typer
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from dq.cli import app, run_line
from dq.session import Session
from dq.shell import DqCompleter, Names, Shell
from tests.cli.conftest import Cli


def test_a_scripted_shell_keeps_the_selected_queue_and_client(cli: Cli) -> None:
    queue = cli.queue()
    script = "\n".join(
        [
            f"use {queue} tenant-a",
            "send 'hello from the shell' --json",
            "# a comment line, then a blank one",
            "",
            "receive --json",
            "receive --bogus",
            "stats -c tenant-a --json",
            "exit",
            "send 'never sent'",
        ]
    )
    result = cli.run("shell", input=script + "\n")
    assert result.exit_code == 0, result.output
    assert f"queue {queue}, client tenant-a" in result.stdout
    documents = _json_documents(result.stdout)
    sent, received, stats = documents
    assert received["messages"][0]["message_id"] == sent["message_id"]
    assert received["messages"][0]["body"] == "hello from the shell"
    assert stats["in_flight"] == 1, "'never sent' came after exit"
    assert "error: UsageError: No such option: --bogus" in result.stderr


def test_the_shell_status_is_the_last_commands(cli: Cli) -> None:
    result = cli.run("shell", input="use never-made a\npeek\n")
    assert result.exit_code == 1
    assert "error: QueueNotFound: queue 'never-made' does not exist" in result.stderr


def test_the_shell_refuses_to_nest_or_serve(cli: Cli) -> None:
    result = cli.run("shell", input="shell\nlocal\n")
    assert result.exit_code == 2
    assert "you are in the shell already" in result.stderr and "another terminal" in result.stderr


def test_a_line_naming_its_own_target_leaves_the_shells_alone(cli: Cli) -> None:
    queue = cli.queue()
    session = Session(queue=queue, client="a")
    shell = Shell(session, typer.main.get_command(app), run_line)
    option, value = cli.target_args
    assert shell.run_lines([f"{option} {value} send one-off"]) == 0
    assert session.queue == queue and session.choice.endpoint is None and session.choice.table is None


def _json_documents(text: str) -> list[dict]:
    decoder = json.JSONDecoder()
    documents, position = [], 0
    while (start := text.find("{", position)) != -1:
        document, position = decoder.raw_decode(text, start)
        documents.append(document)
    return documents


class _Names(Names):
    def __init__(self) -> None:
        super().__init__(Session())

    def queues(self) -> list[str]:
        return ["orders", "orders.fifo", "billing"]

    def clients(self, queue: str | None) -> list[str]:
        return {"orders": ["tenant-a", "tenant-b"]}.get(queue or "", [])


def _complete(text: str, session: Session | None = None) -> list[str]:
    completer = DqCompleter(typer.main.get_command(app), _Names(), session or Session())
    return [completion.text for completion in completer.get_completions(Document(text), CompleteEvent())]


def test_tab_completes_commands_subcommands_options_and_names() -> None:
    assert _complete("qu") == ["queues", "quit"]
    assert _complete("queues ") == ["create", "delete", "ls", "show", "update"]
    assert _complete("dlq re") == ["reasons", "redrive"]
    assert _complete("receive --fo") == ["--follow"]
    assert _complete("peek -q ord") == ["orders", "orders.fifo"]
    assert _complete("use b") == ["billing"]
    assert _complete("use orders ") == ["tenant-a", "tenant-b"]
    assert _complete("send -q orders -c tenant-") == ["tenant-a", "tenant-b"]
    assert _complete("queues show ") == ["billing", "orders", "orders.fifo"]
    assert _complete("queues update ord") == ["orders", "orders.fifo"]
    assert _complete("receive -c ", Session(queue="orders")) == ["tenant-a", "tenant-b"]
