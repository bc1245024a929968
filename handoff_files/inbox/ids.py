"""Request ids as people type them: git-style prefixes, matched and shortened."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from typing import Final

from handoff_files.foundation.errors import InvalidNameError, UnknownRequestError

__all__ = ["MIN_PREFIX", "SHORT_ID", "is_id_prefix", "matching", "resolve", "shortest_prefixes"]

#: The fewest hex digits that name a request (as git's abbreviated hashes).
MIN_PREFIX: Final = 4
#: The fewest hex digits a listing shows of an id: enough to stay unique while the inbox grows.
SHORT_ID: Final = 8

_MAX_NAMED: Final = 10  # an ambiguous prefix's error names this many candidates, then counts the rest
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


def resolve(prefix: str, ids: Callable[[], Iterable[str]], where: str) -> str:
    """The one id among *ids()* that starts with *prefix*; a full id (32 digits) as it is, *ids* not called.

    :raises InvalidNameError: if *prefix* is not 4 to 32 lowercase hex digits (naming the inbox, *where*).
    :raises UnknownRequestError: if no id starts with *prefix*, or several do (named, more digits asked for).
    """
    if not is_id_prefix(prefix):
        msg = (
            f"handoff id {str(prefix)[:80]!r} is not an id this inbox makes, nor the start of one "
            f"({MIN_PREFIX} to 32 lowercase hex digits)"
        )
        raise InvalidNameError(where, msg)
    if len(prefix) == 32:  # a whole id
        return prefix
    found = matching(prefix, ids())
    if not found:
        msg = f"no handoff request in this inbox has an id starting with {prefix}"
        raise UnknownRequestError(where, msg)
    if len(found) > 1:
        more = f" and {len(found) - _MAX_NAMED} more" if len(found) > _MAX_NAMED else ""
        named = f"{', '.join(found[:_MAX_NAMED])}{more}"
        msg = f"handoff id {prefix} is ambiguous: {len(found)} requests start with it ({named}); give more digits"
        raise UnknownRequestError(where, msg)
    return found[0]
