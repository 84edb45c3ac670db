"""`dq shell`: dq commands at a prompt, with history, Tab completion and a selected queue and client.

Every line is a dq command line without the `dq` (`send hello`, `receive --delete`), run through the same
command tree as the command line, on one session: `use QUEUE CLIENT` selects the sub-queue later lines work on,
and the target is opened once. On a terminal the prompt is prompt_toolkit's; otherwise lines are read from the
given source, so the shell can be scripted and tested.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Final

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from typer.core import TyperGroup

from .output import Output
from .session import Session
from .targets import TargetError

BUILTINS: Final = ("use", "help", "exit", "quit")
NOT_IN_SHELL: Final = {
    "shell": "you are in the shell already",
    "local": "dq local runs a server in the foreground; start it in another terminal",
    "console": "dq console runs a web server in the foreground; start it in another terminal",
}
QUEUE_OPTIONS: Final = ("-q", "--queue")
CLIENT_OPTIONS: Final = ("-c", "--client")
# Subcommands whose first argument is a queue name.
QUEUE_ARGUMENT: Final = {("queues", "show"), ("queues", "update"), ("queues", "delete")}

# Runs one command line (the words after `dq`) on the session; returns its exit status.
Runner = Callable[[list[str], Session], int]


def history_path() -> Path:
    return Path(os.environ.get("DQ_HISTORY") or Path.home() / ".dq_history")


class Names:
    """Queue and client names for completion, read from the target once and forgotten after each command (a
    command may have created or deleted one). Completion must never fail a prompt: errors give no names."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._queues: list[str] | None = None
        self._clients: dict[str, list[str]] = {}

    def queues(self) -> list[str]:
        if self._queues is None:
            try:
                self._queues = [str(queue["name"]) for queue in self._session.target.list_queues()["queues"]]
            except TargetError:
                self._queues = []
        return self._queues

    def clients(self, queue: str | None) -> list[str]:
        if not queue:
            return []
        if queue not in self._clients:
            try:
                self._clients[queue] = self._session.target.clients(queue)
            except TargetError:
                self._clients[queue] = []
        return self._clients[queue]

    def forget(self) -> None:
        self._queues = None
        self._clients.clear()


class DqCompleter(Completer):
    """Commands and subcommands, their options, and queue and client names where one is expected."""

    def __init__(self, root: TyperGroup, names: Names, session: Session) -> None:
        self._root = root
        self._names = names
        self._session = session

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        try:
            words = shlex.split(text)
        except ValueError:
            return
        current = "" if not text or text[-1].isspace() else (words.pop() if words else "")
        for candidate in sorted(set(self.candidates(words, current))):
            if candidate.startswith(current):
                yield Completion(candidate, start_position=-len(current))

    def candidates(self, words: list[str], current: str) -> list[str]:
        """What may come after `words`, the complete words before the cursor."""
        if not words:
            return [*self._root.commands, *BUILTINS]
        if words[-1] in QUEUE_OPTIONS:
            return self._names.queues()
        if words[-1] in CLIENT_OPTIONS:
            return self._names.clients(_option_value(words, QUEUE_OPTIONS) or self._session.queue)
        if words[0] == "use":
            return self._names.queues() if len(words) == 1 else self._names.clients(words[1])
        path, command = self._command(words)
        if command is None:
            return []
        if current.startswith("-"):
            return [name for parameter in command.params for name in parameter.opts if name.startswith("--")]
        if isinstance(command, TyperGroup) and len(path) == len(words):
            return list(command.commands)
        if tuple(path) in QUEUE_ARGUMENT and len(words) == len(path):
            return self._names.queues()
        return []

    def _command(self, words: list[str]) -> tuple[list[str], Any]:
        """The deepest command the words name, and the words that named it."""
        command: Any = self._root
        path: list[str] = []
        for word in words:
            if not isinstance(command, TyperGroup):
                break
            sub = command.commands.get(word)
            if sub is None:
                break
            command = sub
            path.append(word)
        return path, (command if path else None)


def _option_value(words: list[str], options: tuple[str, ...]) -> str | None:
    for index, word in enumerate(words[:-1]):
        if word in options:
            return words[index + 1]
    return None


class Shell:
    def __init__(self, session: Session, root: TyperGroup, run: Runner) -> None:
        self.session = session
        self.root = root
        self.run = run
        self.names = Names(session)
        self.status = 0
        self.output = Output()

    def prompt(self) -> str:
        selected = "/".join(part for part in (self.session.queue, self.session.client) if part)
        return f"dq {selected}> " if selected else "dq> "

    def execute(self, line: str) -> bool:
        """Runs one line; False when it asks the shell to end."""
        try:
            words = shlex.split(line, comments=True)
        except ValueError as error:
            self.output.error("UsageError", f"cannot split the line: {error}")
            self.status = 2
            return True
        if not words:
            return True
        head = words[0]
        if head in ("exit", "quit"):
            return False
        if head == "use":
            self.use(words[1:])
            return True
        if head in NOT_IN_SHELL:
            self.output.error("UsageError", NOT_IN_SHELL[head])
            self.status = 2
            return True
        if head == "help":
            words = [*words[1:], "--help"]
        self.status = self.run(words, self.session)
        self.names.forget()
        return True

    def use(self, arguments: list[str]) -> None:
        """`use QUEUE [CLIENT]` selects; `use` alone says what is selected. A queue that does not exist (yet) is
        still selected, with a note, so `use` can come before `queues create`."""
        if len(arguments) > 2:
            self.output.error("UsageError", "use QUEUE [CLIENT]")
            self.status = 2
            return
        if arguments:
            self.session.queue = arguments[0]
            if len(arguments) == 2:
                self.session.client = arguments[1]
            try:
                self.session.target.get_queue(arguments[0])
            except TargetError as error:
                self.output.note(f"{error.code}: {error.message}")
        self.status = 0
        queue = self.session.queue or "none"
        client = self.session.client or "none"
        self.output.say(f"queue {queue}, client {client} on {self.session.target.name}")

    def run_lines(self, lines: Iterable[str]) -> int:
        """The shell without a terminal: each line of `lines` in turn, until one says `exit`. The status is the
        last command's, as a shell script's is."""
        for line in lines:
            if not self.execute(line):
                break
        return self.status

    def interact(self) -> int:
        """The prompt on a terminal, until `exit` or Ctrl-D; Ctrl-C drops the line being typed."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory

        path = history_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        prompt: PromptSession[str] = PromptSession(
            history=FileHistory(str(path)),
            completer=DqCompleter(self.root, self.names, self.session),
            complete_while_typing=False,
        )
        self.output.note(
            f"dq shell on {self.session.target.name}: `use QUEUE CLIENT` selects, Tab completes, "
            "`help` lists commands, Ctrl-D leaves"
        )
        while True:
            try:
                line = prompt.prompt(self.prompt())
            except KeyboardInterrupt:
                continue
            except EOFError:
                return self.status
            if not self.execute(line):
                return self.status
