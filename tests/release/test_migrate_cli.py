"""`dq migrate [--dry-run]` as an operator runs it, on a table written by an earlier release."""

from __future__ import annotations

from typing import Any

from queue_core.version import __version__
from typer.testing import CliRunner, Result

from dq.cli import app
from tests.cli.conftest import CLEAN_ENV
from tests.release.tables import TABLE, load, restore, scan


def dq(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env=CLEAN_ENV)


def test_dq_migrate_says_what_it_would_do_then_does_it_once(dynamodb: Any) -> None:
    restore(dynamodb, load("layout1"))
    before = scan(dynamodb)

    planned = dq("--table", TABLE, "migrate", "--dry-run")
    assert planned.exit_code == 0, planned.output
    assert "orders/tenant-b: would put a ready marker (priority 0, due" in planned.stdout
    assert planned.stdout.splitlines()[-1] == (
        f"dry run, nothing changed: table {TABLE} would go to layout 2 (6 sub-queues looked at, 4 ready markers to put)"
    )
    assert scan(dynamodb) == before

    done = dq("--table", TABLE, "migrate")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[-1] == f"table {TABLE} is at layout 2 (6 sub-queues looked at, 4 ready markers put)"
    again = dq("--table", TABLE, "migrate")
    assert again.stdout.strip() == f"table {TABLE}: layout 2, written by dynamo-queue {__version__}; nothing to do"


def test_dq_migrate_needs_a_table() -> None:
    result = dq("--endpoint", "http://127.0.0.1:9", "migrate")
    assert result.exit_code == 2
    assert "dq migrate works on a table: give --table NAME or set DQ_TABLE" in result.output


def test_dq_version_names_the_release_and_its_table_layout() -> None:
    result = dq("--version")
    assert (result.exit_code, result.stdout) == (0, f"dq {__version__} (table layout 2)\n")
