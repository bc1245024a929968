"""Argument types: the parser checks counts, durations and ids, so a bad one is a usage error naming its flag."""

from __future__ import annotations

import argparse
import math
import re
from typing import Final

__all__ = [
    "OUTPUT_RULE",
    "agent",
    "assignment",
    "budget",
    "count",
    "keep",
    "positive",
    "seconds",
    "thread_id",
    "wait",
]


#: What ``-o FILE`` does with what FILE is (docs/protocols.md, "Output a person names"): said in each -o's help.
OUTPUT_RULE: Final = (
    "a file is replaced atomically and durably (keeping its mode), a symlink's target is written, a FIFO or "
    "device is written in place; a hard-linked file is refused (redirect stdout to write into it)"
)


def _whole(text: str, least: int, expected: str) -> int:
    """A whole number, *least* or more; any other text is refused in one wording, *expected*."""
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        msg = f"expected {expected}, not {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def count(text: str) -> int:
    """An argument that counts something: a whole number, 0 or more."""
    return _whole(text, 0, "a whole number, 0 or more")


def positive(text: str) -> int:
    """An argument numbering something from 1 (a generation)."""
    return _whole(text, 1, "a whole number from 1")


def _finite(text: str, *, zero: bool) -> float:
    """A finite number of seconds, more than 0 (or 0 or more, with *zero*); ``nan`` and ``inf`` are refused."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        least = "0 or more" if zero else "more than 0"
        msg = f"expected a number of seconds {least}, not {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def seconds(text: str) -> float:
    """A duration: a finite number of seconds, more than 0."""
    return _finite(text, zero=False)


def _identifier(text: str, what: str) -> str:
    """An id: the rule every id follows (it becomes a directory name); *what* names it in the refusal."""
    from handoff_files.foundation.names import ID_PATTERN  # noqa: PLC0415 -- one regex, only when given

    if not re.fullmatch(ID_PATTERN, text):
        msg = f"{text!r} is not a valid {what}: 1 to 64 letters, digits, '.', '_' or '-', a letter or digit first"
        raise argparse.ArgumentTypeError(msg)
    return text


def agent(text: str) -> str:
    """An agent id."""
    return _identifier(text, "agent id")


def thread_id(text: str) -> str:
    """A thread id (``--thread-id``)."""
    return _identifier(text, "thread id")


def keep(text: str) -> int:
    """``--keep``: how many generations (or checkpoints) a pruning keeps, refused in the library's own words."""
    from handoff_files.thread.retention import KEEP_RULE  # noqa: PLC0415 -- only prune takes it, and loads it anyway

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"must be {KEEP_RULE}, not {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def budget(text: str) -> int:
    """A briefing's budget in characters: at least the smallest a briefing fits in."""
    from handoff_files.uptake.briefing import MIN_BUDGET  # noqa: PLC0415 -- the command imports it anyway

    return _whole(text, MIN_BUDGET, f"a whole number of characters, {MIN_BUDGET} or more")


def assignment(text: str) -> str:
    """``set``'s KEY=VALUE (or KEY+=VALUE): its form only, a usage error; the library checks the key and value."""
    if "=" not in text:
        msg = f"{text!r} is not KEY=VALUE (or KEY+=VALUE to append), e.g. state.data.ported=12"
        raise argparse.ArgumentTypeError(msg)
    return text


def wait(text: str) -> float:
    """How long to wait for the writers' lock: finite seconds, 0 or more (0: fail at once)."""
    return _finite(text, zero=True)
