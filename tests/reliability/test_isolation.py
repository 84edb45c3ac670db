"""Tenants cannot reach each other's messages, and receipt handles cannot be forged or bent.

A sub-queue is `(queue, client)`. A receipt handle names its sub-queue and is signed with its queue's secret, so a
handle used on another client of the queue fails the owner check, one used on another queue fails the signature,
and one altered in any character fails as malformed or forged; none of them changes anything.
"""

from __future__ import annotations

import base64
import string

import pytest
from queue_core import MessageNotFound, QueueClient, QueueError, SubQueue, ValidationError

from tests.conftest import FakeClock
from tests.reliability.ledger import receipt_token

VISIBILITY = 30
ALPHABET = string.ascii_letters + string.digits + "-_"


@pytest.fixture
def tenants(client: QueueClient) -> dict[str, SubQueue]:
    """(q, a), (q, b) and (p, a), each holding one message; (q, a)'s is received."""
    client.create_queue("q", visibility_timeout=VISIBILITY)
    client.create_queue("p", visibility_timeout=VISIBILITY)
    subs = {"q/a": client.queue("q", "a"), "q/b": client.queue("q", "b"), "p/a": client.queue("p", "a")}
    for name, sub in subs.items():
        sub.send(f"secret of {name}")
    return subs


def _assert_untouched(sub: SubQueue, clock: FakeClock, body: str) -> None:
    """Still there, still held by its receiver: visible again only once its visibility has run out."""
    assert sub.receive() == []
    assert sub.stats().in_flight == 1
    clock.advance(VISIBILITY + 1)
    [again] = sub.receive()
    assert (again.body, again.receive_count) == (body, 2)


@pytest.mark.parametrize("other", ["q/b", "p/a"])
def test_a_handle_used_on_another_sub_queue_is_refused_and_changes_nothing(
    tenants: dict[str, SubQueue], clock: FakeClock, other: str
) -> None:
    owner = tenants["q/a"]
    [message] = owner.receive()
    intruder = tenants[other]

    for attempt in (
        lambda: intruder.delete(message.receipt_handle),
        lambda: intruder.change_visibility(message.receipt_handle, 0),
        lambda: intruder.release(message.receipt_handle, delay_seconds=0),
    ):
        with pytest.raises(ValidationError):
            attempt()
    [failed] = intruder.delete_batch([message.receipt_handle]).failed
    assert failed["code"] == "ValidationError"

    assert intruder.stats().to_dict()["visible"] == 1, "the intruder's own message is untouched too"
    _assert_untouched(owner, clock, "secret of q/a")


def test_another_clients_message_ids_find_nothing_and_cancel_nothing(
    tenants: dict[str, SubQueue], clock: FakeClock
) -> None:
    [theirs] = tenants["q/a"].peek(10)
    intruder = tenants["q/b"]
    with pytest.raises(MessageNotFound):
        intruder.get(theirs.message_id)
    with pytest.raises(MessageNotFound):
        intruder.cancel(theirs.message_id)
    assert [message.body for message in intruder.receive(max_messages=10)] == ["secret of q/b"]
    assert [message.body for message in tenants["q/a"].peek(10)] == ["secret of q/a"]


def test_claim_tokens_carry_128_random_bits_and_never_repeat(client: QueueClient) -> None:
    client.create_queue("q", visibility_timeout=0, max_receive_count=0)
    sub = client.queue("q", "a")
    sub.send_batch([{"body": f"m{n}"} for n in range(10)])
    tokens = [receipt_token(message.receipt_handle) for _ in range(30) for message in sub.receive(max_messages=10)]
    assert len(tokens) == 300 and len(set(tokens)) == 300
    assert all(len(bytes.fromhex(token)) * 8 >= 128 for token in tokens)
    ones = sum(bin(int(token, 16)).count("1") for token in tokens)
    assert 0.45 < ones / (128 * len(tokens)) < 0.55, "the bits look random, not counted"


def _alterations(handle: str) -> list[str]:
    """Every one-character change of a handle: each character replaced by its alphabet neighbour, by a
    character outside the alphabet and by padding, a character inserted at every place, and truncations."""
    altered = []
    for position, character in enumerate(handle):
        neighbour = ALPHABET[(ALPHABET.find(character) + 1) % len(ALPHABET)] if character in ALPHABET else "A"
        for replacement in (neighbour, "!", "="):
            altered.append(handle[:position] + replacement + handle[position + 1 :])
        altered.append(handle[:position] + "!" + handle[position:])
        altered.append(handle[:position] + "A" + handle[position:])
    altered += [handle[:-1], handle + "A", handle + "="]
    return [candidate for candidate in altered if candidate != handle]


@pytest.mark.parametrize("queue", ["q", "q.fifo"])
def test_a_receipt_handle_altered_in_any_character_is_refused(
    client: QueueClient, clock: FakeClock, queue: str
) -> None:
    client.create_queue(queue, visibility_timeout=VISIBILITY)
    sub = client.queue(queue, "a")
    sub.send("m", group_id="g" if queue.endswith(".fifo") else None)
    [message] = sub.receive()

    alterations = _alterations(message.receipt_handle)
    accepted = []
    for altered in alterations:
        try:
            sub.change_visibility(altered, 0)
        except ValidationError:
            continue
        except QueueError as error:
            accepted.append(f"{altered}: {error.code}")
        else:
            accepted.append(altered)
    assert not accepted, f"{len(accepted)} of {len(alterations)} altered handles accepted, e.g. {accepted[:3]}"
    _assert_untouched(sub, clock, "m")


def test_a_handle_forged_with_a_guessed_token_and_no_secret_is_refused(
    tenants: dict[str, SubQueue], clock: FakeClock
) -> None:
    owner = tenants["q/a"]
    [message] = owner.receive()
    payload, _ = message.receipt_handle.split(".")
    fields = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode().split("|")
    fields[4] = "0" * 32
    forged_payload = base64.urlsafe_b64encode("|".join(fields).encode()).decode().rstrip("=")
    for mac in ("A" * 22, base64.urlsafe_b64encode(b"\0" * 16).decode().rstrip("=")):
        with pytest.raises(ValidationError):
            owner.delete(f"{forged_payload}.{mac}")
    _assert_untouched(owner, clock, "secret of q/a")
