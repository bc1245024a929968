"""Assignments: small changes to the layers (``state.data.ported=12``), saved as the next generation.

A key is a dotted path into the layers: its first part names a layer (``narrative``, ``state`` …),
the rest walk mappings by key and lists by index (``priorities.0.task``; ``-1`` is the last item).
``KEY=VALUE`` sets, ``KEY+=VALUE`` appends to a list. A VALUE that parses as JSON is that JSON
value (``12``, ``true``, ``{"a": 1}``, ``"12"``); anything else is the text itself. A number that
would not read back as it was typed (``1.10`` is stored as ``1.1``; ``1e3``, ``-0``, more digits
than a float holds) is kept as the text typed; inside a JSON list or mapping it is refused, with
the two ways to say it.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from handoff_files.format.codec import parse_json
from handoff_files.format.content import ENVELOPE, dump_layers, layers_of
from handoff_files.format.model import Handoff, HandoffContent
from handoff_files.foundation.errors import HandoffError, HandoffValidationError
from handoff_files.thread.edits import layers_diff
from handoff_files.thread.results import SaveReceipt
from handoff_files.thread.store import HandoffStore

__all__ = ["LAYERS", "Assigned", "Assignment", "assign", "parse_assignment"]

#: The top-level keys an assignment may start with.
LAYERS: Final = tuple(HandoffContent.model_fields)

_WHAT: Final = "<value>"  # the "path" a value's JSON errors would name: never shown (a bad JSON value is text)


@dataclass(frozen=True, slots=True)
class Assignment:
    """One change: set (or, with ``append``, append to) the value at a dotted key of the layers."""

    path: tuple[str, ...]
    value: Any
    append: bool = False

    @property
    def key(self) -> str:
        """The dotted key, as it was given."""
        return ".".join(self.path)


@dataclass(frozen=True, slots=True)
class Assigned:
    """What :func:`assign` did: the generation it changed, the change as a diff, and the new generation's receipt.

    ``receipt`` is None on a dry run and when the layers came out as they were (nothing saved).
    ``problems`` are the restore's: what was wrong with the thread on the way to its newest generation.
    """

    generation: int
    diff: str
    receipt: SaveReceipt | None
    dry_run: bool
    problems: tuple[str, ...] = ()


def parse_assignment(text: str, where: str | os.PathLike[str]) -> Assignment:
    """Read ``KEY=VALUE`` or ``KEY+=VALUE``: the value as JSON if it parses, else as text.

    :param where: named in errors (the thread).
    :raises HandoffValidationError: no ``=``, an empty key part, or a key outside the layers (named).
    """
    key, sep, raw = text.partition("=")
    if not sep:
        msg = f"{text!r} is not KEY=VALUE (or KEY+=VALUE to append), e.g. state.data.ported=12"
        raise HandoffValidationError(where, msg)
    append = key.endswith("+")
    path = tuple(key.removesuffix("+").split("."))
    if not all(path):
        msg = f"{key!r} is not a dotted key: each part between dots names a field or an index"
        raise HandoffValidationError(where, msg)
    _check_layer(path[0], where)
    try:
        value: Any = parse_json(raw.encode("utf-8"), _WHAT)
    except HandoffError:
        return Assignment(path, raw, append)
    changed = _changed_numbers(raw)
    if changed and isinstance(value, int | float) and not isinstance(value, bool):
        value = raw  # a version, a price: what was typed, not the number it would become
    elif changed:
        typed, stored = changed[0]
        msg = (
            f"{'.'.join(path)}: {typed} would be stored as {stored} (a JSON number keeps no other form): "
            f'write {stored}, or "{typed}" in quotes to keep it as text'
        )
        raise HandoffValidationError(where, msg)
    return Assignment(path, value, append)


def _changed_numbers(raw: str) -> list[tuple[str, str]]:
    """The numbers in the JSON text *raw* that would not read back as typed: (as typed, as stored)."""
    changed: list[tuple[str, str]] = []

    def number(kind: type[int] | type[float]) -> Any:
        def read(text: str) -> int | float:
            value = kind(text)
            stored = json.dumps(value)
            if stored != text:
                changed.append((text, stored))
            return value

        return read

    json.loads(raw, parse_int=number(int), parse_float=number(float))
    return changed


def _check_layer(name: str, where: str | os.PathLike[str]) -> None:
    if name in ENVELOPE:
        msg = (
            f"{name} is the store's to write, not a layer: `handoff set` changes only the layers ({', '.join(LAYERS)})"
        )
        raise HandoffValidationError(where, msg)
    if name not in LAYERS:
        msg = f"no layer named {name!r}: a key starts with one of {', '.join(LAYERS)}"
        raise HandoffValidationError(where, msg)


def apply(layers: Mapping[str, Any], assignments: Iterable[Assignment], where: Path) -> HandoffContent:
    """The layers with *assignments* applied in order, validated; *layers* itself is left as it was.

    Missing mapping keys on the way are created (as mappings, or for an append, the list itself).

    :raises HandoffValidationError: a key that does not lead anywhere, or a result that is not valid layers.
    """
    document = copy.deepcopy(dict(layers))
    for assignment in assignments:
        _check_layer(assignment.path[0], where)
        _apply_one(document, assignment, where)
    layers_of(document, where)  # refuses what the model refuses, naming the field
    return HandoffContent.model_validate(document)


def _apply_one(document: dict[str, Any], assignment: Assignment, where: Path) -> None:
    container: Any = document
    *steps, last = assignment.path
    for depth, step in enumerate(steps):
        container = _child(container, step, assignment.path[: depth + 1], where, create=True)
    if not assignment.append:
        _put(container, last, assignment.value, assignment.path, where)
        return
    target = _child(container, last, assignment.path, where, create=False, default=[])
    if not isinstance(target, list):
        msg = f"{assignment.key} is {_kind(target)}, not a list: += appends to a list (= sets a value)"
        raise HandoffValidationError(where, msg)
    target.append(assignment.value)
    _put(container, last, target, assignment.path, where)


def _child(container: Any, step: str, path: tuple[str, ...], where: Path, *, create: bool, default: Any = None) -> Any:
    """The value at *step* in *container*: a mapping's key (made, if missing) or a list's index."""
    if isinstance(container, dict):
        if step not in container or (container[step] is None and create):
            container[step] = {} if create else default
        return container[step]
    if isinstance(container, list):
        return container[_index(container, step, path, where)]
    msg = f"{'.'.join(path[:-1])} is {_kind(container)}: it has no {step!r} (only mappings and lists have parts)"
    raise HandoffValidationError(where, msg)


def _put(container: Any, step: str, value: Any, path: tuple[str, ...], where: Path) -> None:
    if isinstance(container, dict):
        container[step] = value
    elif isinstance(container, list):
        container[_index(container, step, path, where)] = value
    else:
        msg = f"{'.'.join(path[:-1])} is {_kind(container)}: it has no {step!r} (only mappings and lists have parts)"
        raise HandoffValidationError(where, msg)


def _index(items: list[Any], step: str, path: tuple[str, ...], where: Path) -> int:
    try:
        index = int(step)
    except ValueError:
        index = None
    if index is None or not -len(items) <= index < len(items):
        msg = (
            f"{'.'.join(path)}: {'.'.join(path[:-1])} is a list of {len(items)}, and {step!r} is not one of "
            f"its indexes (0 to {len(items) - 1}, or -1 for the last; += appends)"
        )
        raise HandoffValidationError(where, msg)
    return index


def _kind(value: Any) -> str:
    """What a value is, for an error: its JSON kind (the number or boolean itself)."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return "null" if value is None else f"{value!r}"


def assign(store: HandoffStore, assignments: Iterable[Assignment], *, dry_run: bool = False) -> Assigned:
    """Apply *assignments* to the thread's newest generation and save the result as the next one. Writes.

    Under the writers' lock from the read to the save (as :meth:`HandoffStore.update`), so no
    other writer's save is undone. Writes nothing on a dry run or when the layers come out as
    they were.

    :raises NoHandoffError: if the thread holds no handoff to change.
    :raises HandoffValidationError: as :func:`parse_assignment` does, or if the result is not valid layers.
    :raises HandoffError: as :meth:`HandoffStore.save` does.
    """
    changes = tuple(assignments)
    with store.locked():
        restored = store.restore()
        before = restored.handoff
        after = _with_layers(before, apply(dump_layers(before.content()), changes, store.path))
        diff = layers_diff(before, after, f"generation {before.generation}", "handoff (set)")
        if dry_run or not diff:
            return Assigned(before.generation, diff, None, dry_run, restored.problems)
        # the lock is held since the read: update() restores the same generation, and saves the change to it
        receipt = store.update(
            lambda current: apply(dump_layers((current or restored).handoff.content()), changes, store.path)
        )
    return Assigned(before.generation, diff, receipt, dry_run, restored.problems)


def _with_layers(handoff: Handoff, layers: HandoffContent) -> Handoff:
    """*handoff*'s envelope around *layers* (for the diff: the seal is no longer theirs, and never saved)."""
    return handoff.model_copy(update={name: getattr(layers, name) for name in HandoffContent.model_fields})
