"""`dq send --batch`: a JSON lines file, 25 messages per request, every line accounted for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Cli


def test_every_line_of_a_file_is_sent_and_receivable(cli: Cli, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Ten requests' worth of lines and a part batch; `--stress` sends a thousand (a minute of moto per transport)."""
    count = 1000 if request.config.getoption("--stress") else 260
    queue = cli.queue()
    lines = [json.dumps({"body": f"message {n}", "attributes": {"n": str(n)}}) for n in range(count)]
    batch = tmp_path / "messages.jsonl"
    batch.write_text("\n".join(lines) + "\n")

    assert cli.json("send", "-q", queue, "-c", "bulk", "--batch", str(batch)) == {"sent": count, "failed": []}
    assert cli.json("stats", "-q", queue, "-c", "bulk")["visible"] == count

    received = cli.lines(
        "receive", "-q", queue, "-c", "bulk", "--follow", "--count", str(count), "--max", "10", "--delete"
    )
    assert sorted(message["body"] for message in received) == sorted(f"message {n}" for n in range(count))
    assert all(message["attributes"] == {"n": message["body"].split()[1]} for message in received)
    assert cli.json("stats", "-q", queue, "-c", "bulk")["visible"] == 0


def test_bad_lines_fail_on_their_own_and_the_rest_is_sent(cli: Cli, tmp_path: Path) -> None:
    queue = cli.queue()
    batch = tmp_path / "mixed.jsonl"
    lines = ['{"body": "good 1"}', "not json", '{"body": ""}', "", '["a list"]', '{"body": "good 2", "colour": "red"}']
    batch.write_text("\n".join([*lines, '{"body": "good 3"}']) + "\n")

    result = cli.run("send", "-q", queue, "-c", "a", "--batch", str(batch), "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["sent"] == 2
    assert [(failure["line"], failure["code"]) for failure in report["failed"]] == [
        (2, "ValidationError"),
        (3, "ValidationError"),
        (5, "ValidationError"),
        (6, "ValidationError"),
    ]
    bodies = [message["body"] for message in cli.json("peek", "-q", queue, "-c", "a")["messages"]]
    assert sorted(bodies) == ["good 1", "good 3"]

    human = cli.run("send", "-q", queue, "-c", "a", "--batch", str(batch))
    assert human.exit_code == 1 and "sent 2 of 6 messages, 4 failed" in human.stdout
    assert "error: ValidationError: line 2: not JSON" in human.stderr


def test_a_batch_to_a_missing_queue_stops_at_the_first_line(cli: Cli) -> None:
    result = cli.run("send", "-q", "never-made", "-c", "a", "--batch", "-", "--json", input='{"body": "x"}\n' * 30)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["sent"] == 0 and report["stopped"]["code"] == "QueueNotFound" and report["stopped"]["line"] == 1
