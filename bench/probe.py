"""The probe: a call-tree timer that wraps named functions for the length of a ``with`` block.

A benchmark that copies the library's steps goes stale the day the library changes; the probe
instead times the real call (``store.save(...)``, ``load(...)``) and attributes its time to
whichever wrapped functions it passes through, nested as they were called. A name the library
no longer has is reported as missing rather than breaking the run.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from bench.timing import Sample

__all__ = ["Key", "Node", "Probe", "tree_order"]

#: A node's place in the call tree: the labels from the root down to it.
Key = tuple[str, ...]


@dataclass(slots=True)
class _Frame:
    key: Key
    start: int
    child_ns: int = 0
    seen: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Node:
    """One place in the call tree: its time including children and its own time, per pass."""

    key: Key
    total: Sample
    own: Sample
    own_label: str | None


class _TimedContext:
    """A context manager whose enter and exit are timed as two nodes (a lock's acquire and release)."""

    def __init__(self, probe: Probe, label: str, manager: Any) -> None:
        self._probe, self._label, self._manager = probe, label, manager

    def __enter__(self) -> Any:
        self._probe.enter(f"{self._label}: acquire")
        try:
            return self._manager.__enter__()
        finally:
            self._probe.leave()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> Any:
        self._probe.enter(f"{self._label}: release")
        try:
            return self._manager.__exit__(kind, value, traceback)
        finally:
            self._probe.leave()


class Probe:
    """Wrap functions by owner and attribute name, record passes through a call, restore on exit.

    Use: ``with Probe() as probe``, ``probe.wrap(...)`` for each function, ``probe.record(...)``
    once per pass (``probe.paused()`` around anything to time unwrapped), ``probe.tree(label)``.
    """

    def __init__(self) -> None:
        self._patches: list[tuple[object, str, object, object]] = []  # owner, attr, original, wrapper
        self._merged: set[str] = set()  # names whose calls under one parent share a node
        self._stack: list[_Frame] = []
        self._total: dict[Key, int] = {}
        self._own: dict[Key, int] = {}
        self._order: list[Key] = []
        self._known: set[Key] = set()
        self._own_labels: dict[str, str] = {}
        self._passes: dict[str, list[tuple[dict[Key, int], dict[Key, int]]]] = {}
        self.missing: list[str] = []

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._restore()
        self._patches.clear()

    def _restore(self) -> None:
        for owner, attr, original, _ in reversed(self._patches):
            setattr(owner, attr, original)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Put the original functions back for the block (to time the same calls unwrapped)."""
        self._restore()
        try:
            yield
        finally:
            for owner, attr, _, wrapper in self._patches:
                setattr(owner, attr, wrapper)

    def _original(self, owner: object, attr: str) -> Any:
        original = getattr(owner, attr, None)
        if original is None:
            self.missing.append(f"{getattr(owner, '__name__', type(owner).__name__)}.{attr}")
        return original

    def wrap(
        self,
        owner: object,
        attr: str,
        label: str | None = None,
        *,
        hint: Callable[[Sequence[Any]], str] | None = None,
        own: str | None = None,
        merge: bool = False,
    ) -> None:
        """Time every call of ``owner.attr`` as a node named *label* (default: *attr*).

        :param hint: names the node from the call's arguments (which file a write went to).
        :param own: what the node's own time (outside its wrapped children) is, for the report.
        :param merge: charge every call under one parent to one node (a call made once per
            message, say), instead of a node per call (``name #2`` …).
        """
        original = self._original(owner, attr)
        if original is None:
            return
        name = label or attr
        if own is not None:
            self._own_labels[name] = own
        if merge:
            self._merged.add(name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.enter(f"{name}({hint(args)})" if hint is not None else name)
            try:
                return original(*args, **kwargs)
            finally:
                self.leave()

        setattr(owner, attr, timed)
        self._patches.append((owner, attr, original, timed))

    def wrap_context(self, owner: object, attr: str, label: str) -> None:
        """Time the enter and the exit of the context managers ``owner.attr(...)`` returns."""
        original = self._original(owner, attr)
        if original is None:
            return

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> _TimedContext:
            return _TimedContext(self, label, original(*args, **kwargs))

        setattr(owner, attr, timed)
        self._patches.append((owner, attr, original, timed))

    def enter(self, name: str) -> None:
        """Open a node under the current one (the second call of a name in one parent is ``name #2``)."""
        parent = self._stack[-1]
        count = parent.seen.get(name, 0) + 1
        parent.seen[name] = count
        key = (*parent.key, name if count == 1 or name in self._merged else f"{name} #{count}")
        if key not in self._known:
            self._known.add(key)
            self._order.append(key)
        self._stack.append(_Frame(key, time.perf_counter_ns()))

    def leave(self) -> None:
        """Close the current node, charging its time to it and to its parent's children."""
        frame = self._stack.pop()
        elapsed = time.perf_counter_ns() - frame.start
        self._stack[-1].child_ns += elapsed
        self._total[frame.key] = self._total.get(frame.key, 0) + elapsed
        self._own[frame.key] = self._own.get(frame.key, 0) + elapsed - frame.child_ns

    def record(self, operation: Callable[[], object], *, label: str, own: str | None = None) -> None:
        """Run *operation* once as a pass of the tree rooted at *label* (collect garbage first).

        :param own: what the root's own time is (the code between wrapped calls).
        """
        if own is not None:
            self._own_labels[label] = own
        gc.collect()
        self._total, self._own = {}, {}
        root = _Frame((label,), time.perf_counter_ns())
        self._stack = [root]
        operation()
        elapsed = time.perf_counter_ns() - root.start
        self._total[root.key] = elapsed
        self._own[root.key] = elapsed - root.child_ns
        self._passes.setdefault(label, []).append((self._total, self._own))

    def forget(self) -> None:
        """Drop the passes recorded so far (warm-up), keeping the tree's shape."""
        self._passes.clear()

    def tree(self, label: str) -> list[Node]:
        """The call tree under *label*, root first, depth-first, each node's times over the passes."""
        passes = self._passes.get(label, [])
        nodes = []
        for key in [(label,), *(key for key in self._order if key[0] == label)]:
            totals = tuple(total.get(key, 0) / 1e9 for total, _ in passes)
            owns = tuple(own.get(key, 0) / 1e9 for _, own in passes)
            nodes.append(Node(key, Sample(key[-1], totals), Sample(key[-1], owns), self._own_label(key[-1])))
        return nodes

    def _own_label(self, name: str) -> str | None:
        """The note on a node's own time, found by its name without ``#2`` or a hint."""
        bare = name.partition(" #")[0]
        return self._own_labels.get(bare) or self._own_labels.get(bare.partition("(")[0])


def tree_order(trees: Sequence[Sequence[Node]]) -> list[Key]:
    """Merge the keys of several trees of one operation (one per size) into one depth-first order."""
    children: dict[Key, list[Key]] = {}
    roots: list[Key] = []
    for tree in trees:
        for node in tree:
            siblings = children.setdefault(node.key[:-1], []) if len(node.key) > 1 else roots
            if node.key not in siblings:
                siblings.append(node.key)
    order: list[Key] = []

    def visit(key: Key) -> None:
        order.append(key)
        for child in children.get(key, []):
            visit(child)

    for root in roots:
        visit(root)
    return order
