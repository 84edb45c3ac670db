"""What one `dq` invocation knows beyond its own options: the target, and the queue and client selected.

A command line makes one; the shell keeps one for all its lines, so `use QUEUE CLIENT` carries over and the
target (and its connections) is opened once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import typer

from .targets import Target, TargetChoice


class UsageProblem(typer.BadParameter):
    """A command line that cannot work as given (exit status 2, like any usage error), told in plain words."""

    def format_message(self) -> str:
        return self.message


@dataclass
class Session:
    choice: TargetChoice = field(default_factory=TargetChoice)
    queue: str | None = None
    client: str | None = None
    _target: Target | None = field(default=None, repr=False)

    @property
    def target(self) -> Target:
        """Opened on first use, so `--help` and commands that need no target never build one."""
        if self._target is None:
            self._target = self.choice.open()
        return self._target

    def with_choice(self, choice: TargetChoice) -> Session:
        """The same selection on another target: one shell line that names its own target."""
        return Session(choice, self.queue, self.client)

    def resolve_queue(self, queue: str | None) -> str:
        """The option, else the selection (`use`), else `DQ_QUEUE`."""
        chosen = queue or self.queue or os.environ.get("DQ_QUEUE")
        if not chosen:
            raise UsageProblem("no queue: give --queue/-q, set DQ_QUEUE, or `use QUEUE CLIENT` in the shell")
        return chosen

    def client_or_all(self, client: str | None) -> str | None:
        """The option, else the selection, else `DQ_CLIENT`; None when none is given: every client."""
        return client or self.client or os.environ.get("DQ_CLIENT") or None

    def resolve_client(self, client: str | None) -> str:
        """The option, else the selection (`use`), else `DQ_CLIENT`."""
        chosen = client or self.client or os.environ.get("DQ_CLIENT")
        if not chosen:
            raise UsageProblem("no client: give --client/-c, set DQ_CLIENT, or `use QUEUE CLIENT` in the shell")
        return chosen
