"""The cold-start scenario runs: fresh interpreters answer a first request, and with tracing as the stack deploys it
(off) the X-Ray SDK is never imported, while tracing on still records through it."""

from __future__ import annotations

from bench.scenarios import first_answer


def test_a_fresh_poller_answers_its_first_receive_without_loading_the_xray_sdk() -> None:
    (poller,) = [subject for subject in first_answer.SUBJECTS if subject.label == "poller receive"]
    figures = first_answer.measure((poller,), repeats=1)
    (row,) = figures["rows"]

    assert figures["tracing_default"] is False
    assert row["seconds"] > 0 and row["ratio"] > 0 and figures["floors"]["floor-http"] > 0
    assert "queue_core" in row["loaded"]
    assert "aws_xray_sdk.core" not in row["loaded"]
    assert "aws_xray_sdk.core" in row["traced_loaded"]
    summary = first_answer.summary_rows(figures)
    assert summary[0][0].startswith("cold start to first answer")
    assert "| poller | receive | http" in "\n".join(first_answer.section(figures))


def test_every_route_of_every_http_function_is_a_subject() -> None:
    from queue_api.operations import ROUTES

    listed = {(subject.name, subject.route) for subject in first_answer.SUBJECTS}
    assert {(operation.function, operation.name) for operation in ROUTES} <= listed
    assert ("visibility_sweeper", "sweep") in listed and ("sqs", "ReceiveMessage") in listed
