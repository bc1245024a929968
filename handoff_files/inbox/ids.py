"""Request ids as people type them: git-style prefixes, matched and shortened."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from typing import Final

__all__ = ["MIN_PREFIX", "SHORT_ID", "is_id_prefix", "matching", "shortest_prefixes"]

#: The fewest hex digits that name a request (as git's abbreviated hashes).
MIN_PREFIX: Final = 4
#: The fewest hex digits a listing shows of an id: enough to stay unique while the inbox grows.
SHORT_ID: Final = 8

_PREFIX: Final = re.compile(rf"[0-9a-f]{{{MIN_PREFIX},32}}")


def is_id_prefix(text: object) -> bool:
    """Whether *text* can start a request id: :data:`MIN_PREFIX` to 32 lowercase hex digits."""
    return isinstance(text, str) and _PREFIX.fullmatch(text) is not None


def matching(prefix: str, ids: Iterable[str]) -> list[str]:
    """The ids among *ids* that start with *prefix*, sorted."""
    return sorted(i for i in ids if i.startswith(prefix))


def shortest_prefixes(ids: Iterable[str], *, minimum: int = SHORT_ID) -> dict[str, str]:
    """Each id → its shortest prefix no other id in *ids* shares, of at least *minimum* digits (or the whole id)."""
    ordered = sorted(set(ids))
    # sorted, an id shares its longest common prefix with a neighbour: one more digit than that tells it apart
    shared = [_shared(a, b) for a, b in itertools.pairwise(ordered)]
    short = {}
    for n, full in enumerate(ordered):
        before = shared[n - 1] if n > 0 else 0
        after = shared[n] if n < len(shared) else 0
        short[full] = full[: max(minimum, before + 1, after + 1)]
    return short


def _shared(a: str, b: str) -> int:
    """How many leading digits *a* and *b* have in common."""
    return next((n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
