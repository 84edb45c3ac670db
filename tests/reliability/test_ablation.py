"""The condition ablation's reading of the store (the ablation itself is a long run of its own,
`python -m tests.reliability.ablation`; docs/testing.md)."""

from __future__ import annotations

import re

from tests.reliability.ablation import (
    STORE,
    Clause,
    _capped,
    all_clauses,
    clauses_of,
    conditions,
    parse,
    placeholders,
    without,
)


def test_the_ablation_finds_every_conditional_write_of_the_store_and_reads_each_condition_whole() -> None:
    found = conditions()
    source = "\n".join(path.read_text() for path in STORE.glob("*.py"))
    written = set(re.findall(r'\bcondition="([^"]+)"', source))

    assert {"messages.claim", "messages.mark", "groups.ack", "groups.unlock", "registry.take_lease"} <= set(found)
    sent = {condition for forms in found.values() for condition in forms}
    assert written <= sent, f"conditions in the source the ablation does not see: {written - sent}"
    for forms in found.values():
        for condition in forms:
            assert parse(condition).render() == " ".join(condition.split())
    assert len(all_clauses(found)) > 60


def test_composed_conditions_are_known_in_each_form() -> None:
    found = conditions()

    assert "tok = :tok AND NOT contains(acked, :seq) AND NOT contains(gone, :goneseq)" in found["groups.ack"]
    assert any(condition.endswith("AND dlq_tok = :tok") for condition in found["messages.hold_dead_letter"])
    assert (
        "receive_count = :rc AND released_by = :rel AND noted = :noted AND visible_at <= :now"
        in found["messages.leave_for_dlq"]
    )


def test_a_removed_clause_leaves_the_rest_of_its_condition_and_only_the_values_that_rest_uses() -> None:
    condition = "visible_at <= :now AND expires_at > :nows AND (attribute_not_exists(tok) OR tok <> :tok)"
    clauses = {clause.name for clause in clauses_of("messages.claim", condition)}

    assert clauses == {
        "messages.claim: AND visible_at <= :now",
        "messages.claim: AND expires_at > :nows",
        "messages.claim: AND (attribute_not_exists(tok) OR tok <> :tok)",
        "messages.claim: OR attribute_not_exists(tok) in (attribute_not_exists(tok) OR tok <> :tok)",
        "messages.claim: OR tok <> :tok in (attribute_not_exists(tok) OR tok <> :tok)",
    }
    alternative = Clause("messages.claim", "tok <> :tok", "OR", "(attribute_not_exists(tok) OR tok <> :tok)")
    assert (
        without(condition, alternative) == "visible_at <= :now AND expires_at > :nows AND (attribute_not_exists(tok))"
    )
    left = without(condition, Clause("messages.claim", "(attribute_not_exists(tok) OR tok <> :tok)", "AND"))
    assert left == "visible_at <= :now AND expires_at > :nows"
    assert placeholders("SET tok = :new", left) == {":new", ":now", ":nows"}
    assert without("tok = :tok", Clause("messages.fenced_delete", "tok = :tok", "AND")) is None


def test_the_and_of_a_between_belongs_to_its_clause() -> None:
    clauses = clauses_of("w", "a BETWEEN :lo AND :hi AND NOT contains(b, :c)")

    assert [clause.text for clause in clauses] == ["a BETWEEN :lo AND :hi", "NOT contains(b, :c)"]


def test_a_cap_keeps_the_cheapest_tests_up_to_its_seconds_and_at_least_one() -> None:
    recorded = {"tests": {"a": {"duration": 2.0}, "b": {"duration": 3.0}, "c": {"duration": 1.0}}}

    assert _capped(["a", "b", "c"], recorded, 5.0) == ["a", "b"]
    assert _capped(["b", "a"], recorded, 1.0) == ["b"]
    assert _capped(["a", "b", "c"], recorded, None) == ["a", "b", "c"]
