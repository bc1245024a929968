"""Bounds on hostile input: what a file may hold before a parser builds anything from it, and the checks that say so.

A parser that builds a tree pays per node, recurses per level of nesting and, for YAML, runs much
of its work in Python: a crafted file can cost seconds per hundred kilobytes, gigabytes of memory,
or the process itself (a C parser's recursion overflows the thread's stack). So every bound here is
checked on the bytes, or on the parser's event stream (iterative, no tree), before the recursive,
tree-building parse starts. The codec (the one strict reader) calls these; the figures that chose
the bounds are in ``bench/results-hostile.md``.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import operator
import os
import re
from collections.abc import Iterator
from typing import Any, Final

from handoff_files.format.model import MAX_DEPTH
from handoff_files.foundation.errors import HandoffParseError, HandoffTooLargeError

__all__ = [
    "MAX_YAML_ALIASES",
    "MAX_YAML_ANCHORS",
    "MAX_YAML_BYTES",
    "MAX_YAML_DIRECTIVES",
    "MAX_YAML_NODES",
    "YamlShape",
    "check_yaml_bytes",
    "collector_paused",
    "count_values",
    "json_depth",
    "json_skeleton",
    "too_deep",
]

#: Largest YAML file read. YAML is for small, human-edited files; its parser costs ~30 µs a value
#: (JSON's ~0.1 µs), so a large handoff is JSON (up to 16 MiB). Far past any file a person edits.
MAX_YAML_BYTES: Final = 1024 * 1024
#: Most values (scalars, keys, lists and mappings) a YAML file may hold: parsed in well under a
#: second and ~6 MB of memory; a hand-edited handoff holds a few hundred.
MAX_YAML_NODES: Final = 10_000
#: Anchors a YAML file may reuse: enough for a person's shorthand, too few for a "billion laughs".
MAX_YAML_ALIASES: Final = 64
#: Anchors a YAML file may define (as many as it may reuse).
MAX_YAML_ANCHORS: Final = 64
#: Lines starting with ``%`` (``%YAML``, ``%TAG``): the parser checks each new ``%TAG`` against all
#: before it, so a megabyte of them took 5 s; a handoff needs none.
MAX_YAML_DIRECTIVES: Final = 8

_SAVE_AS_JSON: Final = "save large handoffs as JSON"

# JSON depth, on the bytes: escapes that hide a quote go first, then everything but quotes and
# brackets, then the strings; what is left is the brackets outside strings
_NOT_QUOTE_OR_BRACKET: Final = bytes(b for b in range(256) if b not in b'"[]{}')
_STRING: Final = re.compile(rb'"[^"]*"')
# an opening bracket counts 2 and a closing one 0: the running sum minus the count so far is the depth
_AS_STEPS: Final = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def check_yaml_bytes(data: bytes, path: str | os.PathLike[str]) -> None:
    """Refuse YAML bytes past :data:`MAX_YAML_BYTES` or :data:`MAX_YAML_DIRECTIVES` (no parser has run).

    :raises HandoffTooLargeError: past :data:`MAX_YAML_BYTES`.
    :raises HandoffParseError: more than :data:`MAX_YAML_DIRECTIVES` lines start with ``%``.
    """
    if len(data) > MAX_YAML_BYTES:
        msg = (
            f"YAML file is {len(data):,} bytes, over the {MAX_YAML_BYTES:,}-byte limit for YAML "
            f"(JSON may hold up to 16 MiB); {_SAVE_AS_JSON}"
        )
        raise HandoffTooLargeError(path, msg)
    directives = data.count(b"\n%") + data.startswith(b"%")
    if directives > MAX_YAML_DIRECTIVES:
        msg = f"{directives:,} lines start with '%' (YAML directives); at most {MAX_YAML_DIRECTIVES} are read"
        raise HandoffParseError(path, msg)


class YamlShape:
    """The running count of a YAML event stream: nesting, values, anchors and aliases.

    The codec feeds it the parser's events one by one and it raises at the first bound passed, so
    a hostile file costs the parser at most a few thousand events, never a tree.
    """

    __slots__ = ("aliases", "anchors", "depth", "nodes", "path")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Start counting for the file at *path* (named in errors)."""
        self.path = path
        self.depth = 0
        self.nodes = 0
        self.anchors = 0
        self.aliases = 0

    def node(self, *, line: int, column: int, anchor: bool = False, alias: bool = False) -> None:
        """Count one value (a scalar, an alias, or a list or mapping that starts) at 0-based *line*, *column*.

        :raises HandoffParseError: past :data:`~handoff_files.format.model.MAX_DEPTH`,
            :data:`MAX_YAML_NODES`, :data:`MAX_YAML_ANCHORS` or :data:`MAX_YAML_ALIASES`.
        """
        # the same rule as the tree walk after parsing: the top level is 0, and no value past MAX_DEPTH
        if self.depth > MAX_DEPTH:
            raise HandoffParseError(self.path, too_deep(_at(line, column)))
        self.nodes += 1
        if self.nodes > MAX_YAML_NODES:
            msg = f"more than {MAX_YAML_NODES:,} values (scalars, keys, lists, mappings) in YAML at {_at(line, column)}"
            raise HandoffParseError(self.path, f"{msg}; {_SAVE_AS_JSON}")
        if anchor:
            self.anchors += 1
            if self.anchors > MAX_YAML_ANCHORS:
                msg = f"more than {MAX_YAML_ANCHORS} YAML anchors (at {_at(line, column)}); write the values out"
                raise HandoffParseError(self.path, msg)
        if alias:
            self.aliases += 1
            if self.aliases > MAX_YAML_ALIASES:
                msg = f"more than {MAX_YAML_ALIASES} YAML aliases (at {_at(line, column)}); write the values out"
                raise HandoffParseError(self.path, msg)


def _at(line: int, column: int) -> str:
    return f"line {line + 1}, column {column + 1}"


def count_values(document: Any, limit: int) -> int:
    """The values in a JSON-mode tree (keys included) as YAML would hold them, counting no further than *limit* + 1."""
    count = 0
    pending = [document]
    while pending and count <= limit:
        value = pending.pop()
        count += 1
        if isinstance(value, dict):
            count += len(value)  # the keys
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return count


def json_skeleton(data: bytes) -> bytes:
    """JSON bytes with every string taken out: brackets, separators, numbers and literals are left.

    In valid JSON a ``:`` left is a key's, so a count of them is the count of keys as written.
    """
    # `\\` first, then `\"`: what is left of a backslash escape can no longer hide a quote
    return _STRING.sub(b"", data.replace(b"\\\\", b"").replace(b'\\"', b""))


def json_depth(data: bytes) -> int:
    """The deepest nesting of JSON bytes, read without a parser: brackets outside strings.

    Exact for valid JSON; for invalid JSON, never less than the depth a parser reaches before it
    finds the fault. Linear, in C-speed passes over the bytes; no recursion.
    """
    # `\\` first, then `\"`: what is left of a backslash escape can no longer hide a quote
    text = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_QUOTE_OR_BRACKET)
    steps = _STRING.sub(b"", text).translate(_AS_STEPS, b'"')  # a quote left opens a string never closed
    depths = map(operator.sub, itertools.accumulate(steps), itertools.count(1))
    return max(0, max(depths, default=0))


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a parser builds a tree, then restore it as it was.

    A parse makes only new, acyclic containers, yet every 2,000 of them start a collection that
    walks the young ones again: 16 MiB of ``[[],[],…]`` took 3.1 s with the collector running and
    0.5 s without (the garbage made is the same; it is collected at the next run after).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def too_deep(where: str = "") -> str:
    """The reason given for a file nested past :data:`~handoff_files.format.model.MAX_DEPTH` (at *where*, if known)."""
    at = f" at {where}" if where else ""
    return f"nested deeper than {MAX_DEPTH} levels{at} (anything nested too deeply is refused)"
