"""The messages the scenarios send: bodies of a given size that no compression or caching could flatter."""

from __future__ import annotations

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
