"""Every `dq` command on both targets, asserted on its JSON output and exit status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dq.cli import app
from tests.cli.conftest import CLEAN_ENV, TABLE, Cli


def test_queue_lifecycle_create_list_show_delete(cli: Cli) -> None:
    name = "orders-lifecycle"
    settings = ["--visibility-timeout", "45", "--max-receive-count", "3", "--shards", "2"]
    created = cli.json("queues", "create", name, *settings)
    assert (created["name"], created["visibility_timeout"], created["max_receive_count"]) == (name, 45, 3)
    assert (created["fifo"], created["shards"], created["retention_seconds"]) == (False, 2, 345_600)

    again = cli.run("queues", "create", name, *settings)
    assert again.exit_code == 0 and f"queue {name} exists with these settings" in again.stdout
    conflict = cli.run("queues", "create", name, "--visibility-timeout", "46")
    assert conflict.exit_code == 1 and conflict.stderr.startswith("error: QueueExists: ")

    assert name in [queue["name"] for queue in cli.json("queues", "ls")["queues"]]
    shown = cli.json("queues", "show", name)
    assert shown["visibility_timeout"] == 45
    assert shown["stats"] == {
        "visible": 0,
        "in_flight": 0,
        "delayed": 0,
        "dlq": 0,
        "oldest_age_seconds": None,
        "approximate": False,
    }
    human = cli.run("queues", "show", "-q", name)
    assert human.exit_code == 0 and "visibility 45 s, 3 receives before the DLQ" in human.stdout

    assert cli.json("queues", "delete", name) == {"deleted": True}
    assert name not in [queue["name"] for queue in cli.json("queues", "ls")["queues"]]
    gone = cli.run("queues", "show", name)
    assert (gone.exit_code, gone.stderr) == (1, f"error: QueueNotFound: queue '{name}' does not exist\n")


def test_update_changes_a_live_queues_settings(cli: Cli) -> None:
    queue = cli.queue(visibility_timeout=30)
    message_id = cli.json("send", "kept", "-q", queue, "-c", "a")["message_id"]
    updated = cli.json(
        "queues",
        "update",
        queue,
        "--visibility-timeout",
        "90",
        "--max-receive-count",
        "2",
        "--retention-seconds",
        "7200",
        "--delay-seconds",
        "0",
        "--dedup-window-seconds",
        "600",
        "--shards",
        "4",
    )
    assert {key: updated[key] for key in ("name", "visibility_timeout", "max_receive_count", "shards")} == {
        "name": queue,
        "visibility_timeout": 90,
        "max_receive_count": 2,
        "shards": 4,
    }
    assert (updated["retention_seconds"], updated["delay_seconds"], updated["dedup_window_seconds"]) == (7200, 0, 600)
    assert cli.json("queues", "show", queue)["shards"] == 4
    [received] = cli.json("receive", "-q", queue, "-c", "a")["messages"]
    assert received["message_id"] == message_id, "resharding loses nothing"

    human = cli.run("queues", "update", queue, "--shards", "2")
    assert human.exit_code == 0 and human.stdout.startswith(f"updated queue {queue}: ") and "2 shards" in human.stdout


def test_update_refuses_nothing_to_change_bad_values_and_unknown_queues(cli: Cli) -> None:
    queue = cli.queue()
    nothing = cli.run("queues", "update", queue)
    assert nothing.exit_code == 2 and "nothing to change" in nothing.output
    assert cli.run("queues", "update", queue, "--fifo").exit_code == 2
    bad = cli.run("queues", "update", queue, "--shards", "0")
    assert bad.exit_code == 1 and bad.stderr.startswith("error: ValidationError: ") and "shards" in bad.stderr
    missing = cli.run("queues", "update", "never-made", "--shards", "2")
    assert (missing.exit_code, missing.stderr) == (1, "error: QueueNotFound: queue 'never-made' does not exist\n")


def test_create_takes_every_setting_as_an_option(cli: Cli) -> None:
    created = cli.json(
        "queues",
        "create",
        "settings-all",
        "--fifo",
        "--visibility-timeout",
        "10",
        "--max-receive-count",
        "0",
        "--retention-seconds",
        "3600",
        "--delay-seconds",
        "5",
        "--dedup-window-seconds",
        "600",
        "--content-based-dedup",
        "--shards",
        "3",
        "--archive-days",
        "3",
    )
    del created["created_at"]
    assert created == {
        "name": "settings-all",
        "fifo": True,
        "visibility_timeout": 10,
        "max_receive_count": 0,
        "retention_seconds": 3600,
        "delay_seconds": 5,
        "dedup_window_seconds": 600,
        "content_based_dedup": True,
        "shards": 3,
        "auto_shards": False,
        "min_shards": 1,
        "max_shards": 512,
        "max_message_bytes": 1024 * 1024,
        "receive_wait_seconds": 0,
        "queue_wide": False,
        "archive_days": 3,
    }


def test_send_peek_get_receive_delete(cli: Cli) -> None:
    queue = cli.queue()
    sent = cli.json("send", "hello", "-q", queue, "-c", "a", "--attribute", "kind=greeting", "-a", "lang=en")
    message_id = sent["message_id"]
    assert sent["failed"] == [] and sent["successful"][0]["message_id"] == message_id

    [peeked] = cli.json("peek", "-q", queue, "-c", "a")["messages"]
    assert (peeked["message_id"], peeked["state"], peeked["receive_count"]) == (message_id, "visible", 0)
    got = cli.json("get", message_id, "-q", queue, "-c", "a")
    assert (got["body"], got["attributes"]) == ("hello", {"kind": "greeting", "lang": "en"})

    [received] = cli.json("receive", "-q", queue, "-c", "a", "--max", "10")["messages"]
    assert (received["message_id"], received["body"], received["receive_count"]) == (message_id, "hello", 1)
    assert cli.json("get", message_id, "-q", queue, "-c", "a")["state"] == "in_flight"
    assert cli.json("receive", "-q", queue, "-c", "b") == {"messages": []}, "another client's sub-queue is empty"

    deleted = cli.json("delete", received["receipt_handle"], "-q", queue, "-c", "a")
    assert deleted == {"successful": [{"index": 0}], "failed": []}
    stats = cli.json("stats", "-q", queue, "-c", "a")
    assert (stats["visible"], stats["in_flight"]) == (0, 0)


def test_human_output_shows_the_message_and_its_receipt_handle(cli: Cli) -> None:
    queue = cli.queue()
    message_id = cli.json("send", "for people", "-q", queue, "-c", "a")["message_id"]
    result = cli.run("receive", "-q", queue, "-c", "a")
    assert result.exit_code == 0
    header, body, receipt = result.stdout.splitlines()
    assert header.startswith(message_id) and "receive 1" in header
    assert body == "for people"
    handle = receipt.removeprefix("receipt ")
    assert cli.json("delete", handle, "-q", queue, "-c", "a")["failed"] == []


def test_receive_delete_takes_the_messages_for_good(cli: Cli) -> None:
    queue = cli.queue()
    for body in ("one", "two"):
        cli.json("send", body, "-q", queue, "-c", "a")
    answer = cli.json("receive", "-q", queue, "-c", "a", "-n", "10", "--delete", "--visibility", "0")
    assert sorted(message["body"] for message in answer["messages"]) == ["one", "two"]
    assert len(answer["deleted"]["successful"]) == 2
    assert cli.json("peek", "-q", queue, "-c", "a") == {"messages": []}


def test_receive_without_a_client_takes_every_clients_messages_by_priority(cli: Cli) -> None:
    queue = cli.queue()
    cli.json("send", "low", "-q", queue, "-c", "a")
    cli.json("send", "high", "-q", queue, "-c", "b", "--priority", "9")
    refused = cli.run("send", "later", "-q", queue, "-c", "c", "--at", "2999-01-01T00:00:00Z")
    assert refused.exit_code != 0 and "retention" in refused.output
    answer = cli.json("receive", "-q", queue, "-n", "10", "--delete")
    assert [(m["client"], m["body"], m["priority"]) for m in answer["messages"]] == [("b", "high", 9), ("a", "low", 0)]
    assert len(answer["deleted"]["successful"]) == 2
    cli.json("send", "soon", "-q", queue, "-c", "c", "--at", "60", "--priority", "3")  # epoch 60: the past, now
    stats = cli.json("stats", "-q", queue)
    assert stats["total"]["by_priority"] == {"3": {"visible": 1, "in_flight": 0, "delayed": 0}}
    assert "priority 3: 1 visible" in cli.run("stats", "-q", queue).output


def test_release_and_visibility_move_a_received_message(cli: Cli) -> None:
    queue = cli.queue()
    cli.json("send", "work", "-q", queue, "-c", "a")
    [message] = cli.json("receive", "-q", queue, "-c", "a")["messages"]
    handle = message["receipt_handle"]

    later = cli.json("visibility", handle, "600", "-q", queue, "-c", "a")["visible_at"]
    assert later >= message["sent_at"] + 590_000
    released = cli.json("release", handle, "--delay", "0", "-q", queue, "-c", "a")["visible_at"]
    assert released < later
    [again] = cli.json("receive", "-q", queue, "-c", "a")["messages"]
    assert (again["message_id"], again["receive_count"]) == (message["message_id"], 2)

    stale = cli.run("release", handle, "-q", queue, "-c", "a")
    assert stale.exit_code == 1 and stale.stderr.startswith("error: ReceiptHandleStale: ")


def test_cancel_and_purge(cli: Cli) -> None:
    queue = cli.queue()
    ids = [cli.json("send", body, "-q", queue, "-c", "a")["message_id"] for body in ("x", "y", "z")]
    assert cli.json("cancel", ids[0], "-q", queue, "-c", "a") == {"deleted": True}
    missing = cli.run("get", ids[0], "-q", queue, "-c", "a")
    assert missing.exit_code == 1 and missing.stderr.startswith("error: MessageNotFound: ")
    assert cli.json("purge", "-q", queue, "-c", "a", "--yes") == {"purged": 2}
    assert cli.json("peek", "-q", queue, "-c", "a") == {"messages": []}


def test_dlq_list_and_redrive(cli: Cli) -> None:
    queue = cli.queue(max_receive_count=1)
    message_id = cli.json("send", "poison", "-q", queue, "-c", "a")["message_id"]
    cli.json("receive", "-q", queue, "-c", "a", "--visibility", "0")
    assert cli.json("receive", "-q", queue, "-c", "a") == {"messages": []}, "over its limit, it went to the DLQ"

    [dead] = cli.json("dlq", "ls", "-q", queue, "-c", "a")["messages"]
    assert (dead["message_id"], dead["state"]) == (message_id, "dlq")
    assert cli.json("dlq", "redrive", "-q", queue, "-c", "a", "--id", message_id) == {"redriven": 1}
    assert cli.json("dlq", "ls", "-q", queue, "-c", "a") == {"messages": []}
    [back] = cli.json("receive", "-q", queue, "-c", "a")["messages"]
    assert (back["message_id"], back["receive_count"]) == (message_id, 1)


def test_release_reason_dlq_reasons_and_redrive_by_reason(cli: Cli) -> None:
    queue = cli.queue(max_receive_count=1)
    message_id = cli.json("send", "poison", "-q", queue, "-c", "a")["message_id"]
    [got] = cli.json("receive", "-q", queue, "-c", "a")["messages"]
    cli.json("release", got["receipt_handle"], "-q", queue, "-c", "a", "--delay", "0", "--reason", "KeyError: 'id'")
    assert cli.json("receive", "-q", queue, "-c", "a") == {"messages": []}, "over its limit, it went to the DLQ"
    grouped = cli.json("dlq", "reasons", "-q", queue, "-c", "a")
    assert [(g["reason"], g["count"]) for g in grouped["reasons"]] == [("KeyError: 'id'", 1)]
    shown = cli.run("dlq", "reasons", "-q", queue, "-c", "a")
    assert shown.exit_code == 0 and "1 x" in shown.stdout and "KeyError: 'id'" in shown.stdout
    assert "attempt 1" in cli.run("get", message_id, "-q", queue, "-c", "a").stdout
    assert cli.json("dlq", "redrive", "-q", queue, "-c", "a", "--reason", "ValueError") == {"redriven": 0}
    assert cli.json("dlq", "redrive", "-q", queue, "-c", "a", "--reason", "KeyError") == {"redriven": 1}


def test_archive_replay_from_the_dlq_by_reason(cli: Cli) -> None:
    queue = cli.queue(max_receive_count=1)
    message_id = cli.json("send", "poison", "-q", queue, "-c", "a")["message_id"]
    [got] = cli.json("receive", "-q", queue, "-c", "a")["messages"]
    cli.json("release", got["receipt_handle"], "-q", queue, "-c", "a", "--delay", "0", "--reason", "KeyError: 'id'")
    assert cli.json("receive", "-q", queue, "-c", "a") == {"messages": []}, "over its limit, it went to the DLQ"
    none = cli.json("archive", "replay", "-q", queue, "-c", "a", "--from-dlq", "--reason", "ValueError")
    assert (none["state"], none["replayed"], none["source"]) == ("done", 0, "dlq")
    shown = cli.run("archive", "replay", "-q", queue, "-c", "a", "--from-dlq", "--reason", "KeyError")
    assert shown.exit_code == 0 and "1 replayed" in shown.stdout and "from the DLQ" in shown.stdout
    [back] = cli.json("receive", "-q", queue, "-c", "a")["messages"]
    assert json.loads(back["attributes"]["replayed_from"])["message_id"] == message_id
    assert back["body"] == "poison" and back["message_id"] != message_id
    assert cli.json("dlq", "ls", "-q", queue, "-c", "a") == {"messages": []}
    assert cli.run("archive", "replay", "-q", queue, "-c", "a", "--reason", "KeyError").exit_code == 1


def test_archive_ls_and_get(cli: Cli) -> None:
    queue = cli.queue(archive_days=2)
    message_id = cli.json("send", "order-1", "-q", queue, "-c", "a")["message_id"]
    cli.json("receive", "-q", queue, "-c", "a", "--delete")
    [listed] = cli.json("archive", "ls", "-q", queue, "-c", "a")["messages"]
    assert (listed["message_id"], listed["body"]) == (message_id, "order-1")
    assert [m["client"] for m in cli.json("archive", "ls", "-q", queue)["messages"]] == ["a"]
    [copy] = cli.json("archive", "get", message_id, "-q", queue, "-c", "a")["messages"]
    assert copy["acked_at"] >= copy["sent_at"]
    assert "order-1" in cli.run("archive", "ls", "-q", queue, "-c", "a", "--since", "2020-01-01T00:00:00Z").stdout
    assert cli.run("archive", "ls", "-q", queue, "--since", "yesterday").exit_code == 2


def test_archive_replay_start_status_resume_and_cancel(cli: Cli) -> None:
    queue = cli.queue(archive_days=2)
    ids = [cli.json("send", f"order-{n}", "-q", queue, "-c", "a")["message_id"] for n in range(3)]
    cli.json("receive", "-q", queue, "-c", "a", "--max", "10", "--delete")
    done = cli.json("archive", "replay", "-q", queue, "-c", "a", "--id", ids[0], "--id", ids[2])
    assert (done["state"], done["replayed"], done["total"]) == ("done", 2, 2)
    [shown] = cli.json("archive", "replay", "status", done["replay_id"], "-q", queue, "-c", "a")["replays"]
    assert (shown["replay_id"], shown["replayed"]) == (done["replay_id"], 2)
    replayed = cli.json("receive", "-q", queue, "-c", "a", "--max", "10", "--delete")["messages"]
    assert sorted(json.loads(m["attributes"]["replayed_from"])["message_id"] for m in replayed) == sorted(
        [ids[0], ids[2]]
    )
    detached = cli.json("archive", "replay", "-q", queue, "-c", "a", "--until", "4102444800", "--detach")
    assert (detached["state"], detached["replayed"]) == ("running", 0)
    resumed = cli.json("archive", "replay", "resume", detached["replay_id"], "-q", queue, "-c", "a")
    assert (resumed["state"], resumed["replayed"]) == ("done", 5)
    other = cli.json("archive", "replay", "-q", queue, "-c", "a", "--attribute", "k=v", "--detach")
    cancelled = cli.json("archive", "replay", "cancel", other["replay_id"], "-q", queue, "-c", "a")
    assert cancelled["state"] == "cancelled"
    table = cli.run("archive", "replay", "status", "-q", queue, "-c", "a").stdout
    assert other["replay_id"] in table and "cancelled" in table
    assert (
        "cancelled, 0 replayed"
        in cli.run("archive", "replay", "cancel", other["replay_id"], "-q", queue, "-c", "a").stdout
    )
    assert cli.run("archive", "replay", "-q", queue, "-c", "a", "--rate", "0").exit_code == 1


def test_move_to_dlq_marks_a_waiting_message_invalid(cli: Cli) -> None:
    queue = cli.queue()
    message_id = cli.json("send", "invalid", "-q", queue, "-c", "a")["message_id"]
    assert cli.json("move-to-dlq", message_id, "-q", queue, "-c", "a") == {"moved": True}
    [dead] = cli.json("dlq", "ls", "-q", queue, "-c", "a")["messages"]
    assert (dead["message_id"], dead["state"]) == (message_id, "dlq")

    again = cli.run("move-to-dlq", message_id, "-q", queue, "-c", "a")
    assert again.exit_code == 1 and again.stderr.startswith("error: MessageNotFound: ")
    in_flight = cli.json("send", "being worked on", "-q", queue, "-c", "a")["message_id"]
    cli.json("receive", "-q", queue, "-c", "a")
    refused = cli.run("move-to-dlq", in_flight, "-q", queue, "-c", "a")
    assert refused.exit_code == 1 and refused.stderr.startswith("error: ValidationError: ")
    human = cli.run("move-to-dlq", cli.json("send", "x", "-q", queue, "-c", "b")["message_id"], "-q", queue, "-c", "b")
    assert human.exit_code == 0 and human.stdout.startswith("moved ") and human.stdout.endswith(" to the DLQ\n")


def test_fifo_group_and_dedup_id(cli: Cli) -> None:
    queue = cli.queue("jobs.fifo")
    first = cli.json("send", "step 1", "-q", queue, "-c", "a", "--group", "order-7", "--dedup-id", "d1")
    again = cli.json("send", "step 1", "-q", queue, "-c", "a", "--group", "order-7", "--dedup-id", "d1")
    assert (again["message_id"], again["duplicate"]) == (first["message_id"], True)
    cli.json("send", "step 2", "-q", queue, "-c", "a", "--group", "order-7")
    [head] = cli.json("receive", "-q", queue, "-c", "a", "-n", "1")["messages"]
    assert (head["body"], head["group_id"]) == ("step 1", "order-7")


def test_send_reads_the_body_from_stdin_or_a_file_and_delay_hides_it(cli: Cli, tmp_path: Path) -> None:
    queue = cli.queue()
    from_stdin = cli.json("send", "-", "-q", queue, "-c", "a", input="piped body\n")["message_id"]
    body_file = tmp_path / "body.txt"
    body_file.write_text("line 1\nline 2\n")
    from_file = cli.json("send", "--file", str(body_file), "-q", queue, "-c", "a")["message_id"]
    delayed = cli.json("send", "later", "--delay", "300", "-q", queue, "-c", "a")["message_id"]

    assert cli.json("get", from_stdin, "-q", queue, "-c", "a")["body"] == "piped body"
    assert cli.json("get", from_file, "-q", queue, "-c", "a")["body"] == "line 1\nline 2\n"
    assert cli.json("get", delayed, "-q", queue, "-c", "a")["state"] == "delayed"


def test_receive_follow_streams_json_lines_until_its_count(cli: Cli) -> None:
    queue = cli.queue()
    for body in ("a", "b", "c"):
        cli.json("send", body, "-q", queue, "-c", "a")
    lines = cli.lines("receive", "-q", queue, "-c", "a", "--follow", "--count", "3", "--max", "2", "--delete")
    assert sorted(line["body"] for line in lines) == ["a", "b", "c"]
    assert all("receipt_handle" in line for line in lines)


def test_stats_of_a_queue_per_client(cli: Cli) -> None:
    queue = cli.queue()
    for client, count in (("a", 2), ("b", 1)):
        for n in range(count):
            cli.json("send", f"m{n}", "-q", queue, "-c", client)
    stats = cli.json("stats", "-q", queue)
    assert (stats["queue"], stats["total"]["visible"]) == (queue, 3)
    assert {client: figures["visible"] for client, figures in stats["clients"].items()} == {"a": 2, "b": 1}
    assert cli.json("stats", "-q", queue, "-c", "b")["visible"] == 1

    table = cli.run("stats", "-q", queue)
    assert table.exit_code == 0
    rows = {line.split()[0]: line.split()[1] for line in table.stdout.splitlines()[2:] if line.strip()}
    assert rows == {"a": "2", "b": "1", "total": "3"}
    shown = cli.run("queues", "show", queue)
    assert shown.exit_code == 0 and "a, b" in shown.stdout


def test_stats_watch_refreshes_count_times(cli: Cli) -> None:
    queue = cli.queue()
    cli.json("send", "m", "-q", queue, "-c", "a")
    snapshots = cli.lines("stats", "-q", queue, "--watch", "--count", "2", "--interval", "0.05")
    assert len(snapshots) == 2 and all(snapshot["total"]["visible"] == 1 for snapshot in snapshots)
    assert snapshots[0]["at"] <= snapshots[1]["at"]

    view = cli.run("stats", "-q", queue, "-c", "a", "--watch", "--count", "2", "--interval", "0.05")
    assert view.exit_code == 0 and view.stdout.count("depth trend") == 2
    assert "▁" in view.stdout or "█" in view.stdout


@pytest.mark.parametrize("command", [["receive"], ["peek"], ["dlq", "ls"]])
def test_fail_empty_exits_3_when_there_is_nothing(cli: Cli, command: list[str]) -> None:
    queue = cli.queue()
    empty = cli.run(*command, "-q", queue, "-c", "a", "--fail-empty")
    assert (empty.exit_code, empty.stdout) == (3, "")
    assert cli.run(*command, "-q", queue, "-c", "a").exit_code == 0


def test_fail_empty_exits_0_when_there_is_something(cli: Cli) -> None:
    queue = cli.queue()
    cli.json("send", "m", "-q", queue, "-c", "a")
    assert cli.run("peek", "-q", queue, "-c", "a", "--fail-empty").exit_code == 0
    assert cli.run("receive", "-q", queue, "-c", "a", "--fail-empty").exit_code == 0


@pytest.mark.parametrize("command", [["peek"], ["send", "x"], ["stats"], ["dlq", "ls"], ["receive"]])
def test_an_unknown_queue_is_one_line_and_status_1(cli: Cli, command: list[str]) -> None:
    result = cli.run(*command, "-q", "never-made", "-c", "a")
    assert result.exit_code == 1
    assert result.stderr == "error: QueueNotFound: queue 'never-made' does not exist\n"
    assert result.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ["receive", "--bogus"],
        ["peek", "-c", "a"],
        ["send", "-q", "q", "-c", "a"],
        ["send", "body", "-q", "q", "-c", "a", "--attribute", "novalue"],
        ["visibility", "handle", "soon", "-q", "q", "-c", "a"],
        ["queues", "create"],
    ],
    ids=["unknown-option", "no-queue", "no-body", "bad-attribute", "not-a-number", "no-name"],
)
def test_bad_usage_exits_2(cli: Cli, args: list[str]) -> None:
    result = cli.run(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


def test_queue_and_client_come_from_the_environment(cli: Cli) -> None:
    queue = cli.queue()
    env = {"DQ_QUEUE": queue, "DQ_CLIENT": "from-env"}
    assert cli.run("send", "via env", "--json", env=env).exit_code == 0
    [message] = json.loads(cli.run("peek", "--json", env=env).stdout)["messages"]
    assert message["body"] == "via env"


def test_the_target_comes_from_the_environment(cli: Cli) -> None:
    option, value = cli.target_args
    variable = {"--endpoint": "DQ_ENDPOINT", "--table": "DQ_TABLE"}[option]
    result = Cli(cli.kind, []).run("queues", "ls", "--json", env={variable: value})
    assert result.exit_code == 0 and "queues" in json.loads(result.stdout)


def test_endpoint_and_table_together_are_a_usage_error(cli: Cli) -> None:
    result = Cli(cli.kind, []).run("--endpoint", "http://127.0.0.1:1", "--table", "t", "queues", "ls")
    assert result.exit_code == 2 and "not both" in result.output


@pytest.mark.parametrize("cli", ["http"], indirect=True)
def test_the_core_on_the_local_servers_dynamodb_sees_what_the_api_wrote(cli: Cli) -> None:
    queue = cli.queue()
    message_id = cli.json("send", "written over HTTP", "-q", queue, "-c", "a")["message_id"]
    core = Cli("core", ["--table", TABLE, "--dynamodb-endpoint", str(cli.dynamodb_endpoint)])
    assert core.json("get", message_id, "-q", queue, "-c", "a")["body"] == "written over HTTP"
    assert list(core.json("stats", "-q", queue)["clients"]) == ["a"]


@pytest.mark.parametrize("cli", ["http"], indirect=True)
def test_a_table_on_the_command_line_wins_over_an_endpoint_in_the_environment(cli: Cli) -> None:
    """`--table T --dynamodb-endpoint URL` with DQ_ENDPOINT set (the README's own session): the command line
    chooses the target; `--dynamodb-endpoint` goes with `--table` and is no second choice."""
    queue = cli.queue()
    cli.json("send", "seen through the table", "-q", queue, "-c", "a")
    core = Cli("core", ["--table", TABLE, "--dynamodb-endpoint", str(cli.dynamodb_endpoint)])
    result = core.run("stats", "-q", queue, "--json", env={"DQ_ENDPOINT": "http://127.0.0.1:1"})
    assert result.exit_code == 0, result.output
    assert list(json.loads(result.stdout)["clients"]) == ["a"]


def test_a_dynamodb_endpoint_without_a_table_is_a_usage_error(cli: Cli) -> None:
    result = Cli(cli.kind, []).run("--dynamodb-endpoint", "http://127.0.0.1:1", "queues", "ls")
    assert result.exit_code == 2 and "--dynamodb-endpoint is for --table" in result.output


def test_a_body_file_that_is_not_text_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    binary = tmp_path / "image.bin"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    result = cli.run("send", "--file", str(binary), "-q", "q", "-c", "a")
    assert result.exit_code == 2 and "not UTF-8 text" in result.output


def test_local_help_shows_the_consumer_format_whole_in_80_columns() -> None:
    result = CliRunner().invoke(app, ["local", "--help"], env={**CLEAN_ENV, "COLUMNS": "80"})
    assert result.exit_code == 0
    assert "QUEUE/CLIENT=module:function" in result.output
    assert "--dynamodb-port" in result.output and "8081" in result.output


def test_browse_lists_every_state_filters_and_pages(cli: Cli) -> None:
    queue = cli.queue()
    taken = cli.json("send", "taken", "-q", queue, "-c", "a")["message_id"]
    [received] = cli.json("receive", "-q", queue, "-c", "a", "--visibility", "300")["messages"]
    assert received["message_id"] == taken
    later = cli.json("send", "later", "-q", queue, "-c", "a", "--delay", "600")["message_id"]
    ready = cli.json("send", "ready", "-q", queue, "-c", "a")["message_id"]

    answer = cli.json("browse", "-q", queue, "-c", "a")
    assert {m["message_id"]: m["state"] for m in answer["messages"]} == {
        taken: "in_flight",
        later: "delayed",
        ready: "visible",
    }
    assert answer["cursor"] is None
    [delayed] = cli.json("browse", "-q", queue, "-c", "a", "--state", "delayed")["messages"]
    assert delayed["message_id"] == later and delayed["until"] > delayed["sent_at"]

    first = cli.json("browse", "-q", queue, "-c", "a", "-n", "2")
    rest = cli.json("browse", "-q", queue, "-c", "a", "-n", "2", "--cursor", first["cursor"])
    assert len(first["messages"]) == 2 and len(rest["messages"]) == 1 and rest["cursor"] is None

    table = cli.run("browse", "-q", queue, "-c", "a", "-n", "2")
    assert table.exit_code == 0 and "more: --cursor " in table.stderr
    shown = cli.run("browse", "-q", queue, "-c", "a", "--state", "in_flight").stdout
    assert taken in shown and "in_flight" in shown and "until" in shown

    refused = cli.run("browse", "-q", queue, "-c", "a", "--state", "gone")
    assert refused.exit_code == 1 and "ValidationError" in refused.stderr
    assert cli.run("browse", "-q", queue, "-c", "nobody", "--fail-empty").exit_code == 3
