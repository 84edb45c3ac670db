"""The messages the scenarios send: bodies of a given size that no compression or caching could flatter."""

from __future__ import annotations

import base64
import random
import string
from typing import Final

KB: Final = 1024
VISIBILITY_SECONDS: Final = 600  # long enough that no claim expires during a scenario
DELAY_SECONDS: Final = 900  # the longest delay the core allows: a delayed message stays delayed throughout


def body(size: int = KB, seed: int = 0) -> str:
    """`size` bytes of random letters (ASCII: one byte each)."""
    rng = random.Random(seed)
    return "".join(rng.choices(string.ascii_letters + string.digits, k=size))


_SERVICES: Final = ("checkout", "payments", "inventory", "shipping", "search", "accounts")
_ACTIONS: Final = ("order.created", "order.paid", "item.reserved", "parcel.shipped", "query.served", "user.login")
_LEVELS: Final = ("INFO", "INFO", "INFO", "WARN", "DEBUG", "ERROR")


def event_log(size: int, seed: int = 0) -> str:
    """Exactly `size` bytes of realistic JSON: an event log of records that repeat their field names, services and
    actions but not their ids and times, as a chatty producer would send (what compression meets in practice)."""
    rng = random.Random(seed)
    head, tail = '{"source":"bench","events":[', '],"pad":""}'
    records: list[str] = []
    length = len(head) + len(tail)
    at = 1_800_000_000_000
    while True:
        at += rng.randrange(1, 5_000)
        index = rng.randrange(len(_SERVICES))
        record = (
            f'{{"ts":{at},"id":"{rng.getrandbits(64):016x}","service":"{_SERVICES[index]}",'
            f'"action":"{_ACTIONS[index]}","level":"{rng.choice(_LEVELS)}","user":"user-{rng.randrange(500)}",'
            f'"amount_cents":{rng.randrange(100, 99_999)},"region":"{rng.choice(("us-east-1", "eu-west-1"))}",'
            f'"latency_ms":{rng.randrange(1, 900)},"ok":{"true" if rng.random() > 0.05 else "false"}}}'
        )
        extra = len(record) + (1 if records else 0)
        if length + extra > size:
            break
        records.append(record)
        length += extra
    text = head + ",".join(records) + tail
    return text[: -len('"}')] + "x" * (size - len(text)) + '"}'


def random_bytes(size: int, seed: int = 0) -> str:
    """Exactly `size` bytes of base64 of random bytes: binary content as a text body carries it. Compression gets
    only base64's own redundancy back (about a quarter)."""
    rng = random.Random(seed)
    raw = rng.randbytes(size * 3 // 4 + 3)
    return base64.b64encode(raw).decode()[:size]
