"""A person's edit of the primary: read it, check it changed only the layers, and show what changed.

The loader tells an edit from corruption exactly when ``state.json`` records the primary as its
writer left it (size and mtime): a file rewritten since is an edit, one that was not is corrupt.
A person who did change such a file (an editor that kept the mtime, say) may still have it sealed,
after seeing what changed (``accept_corrupt``): the seal is theirs to give, never the loader's to guess.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.loader import decode, load
from handoff_files.format.model import Handoff
from handoff_files.foundation.atomic import read_bytes
from handoff_files.foundation.errors import (
    ChecksumMismatchError,
    HandoffError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffValidationError,
    SignatureError,
    UnsealedEditError,
)
from handoff_files.thread.journal import SAVE_EVENTS, Journal
from handoff_files.thread.kind import Kind, refuse_plain_write
from handoff_files.thread.layout import ThreadDir
from handoff_files.thread.mirror import primary_stamp, read_mirror
from handoff_files.thread.results import Restored, SaveReceipt
from handoff_files.thread.signatures import signature_damage

__all__ = ["ENVELOPE", "Edit", "already_sealed", "layers_diff", "read_edit"]

#: The fields the store writes: an edit that changes one is refused, never used or dropped silently.
ENVELOPE: Final = ("schema_version", "agent_id", "thread_id", "generation", "created_at", "parent", "lineage")


@dataclass(frozen=True, slots=True)
class Edit:
    """The primary as a person left it, the sealed generation it was edited from, and whether it read as corrupt."""

    handoff: Handoff
    sealed: Handoff | None  # None: that generation's sealed copy is gone (pruned), nothing to compare with
    corrupt: bool  # the file was not rewritten since it was sealed: accepted only when asked

    def diff(self) -> str:
        """The change to the layers as a unified diff (JSON, keys sorted), against the sealed generation."""
        if self.sealed is None:
            return layers_diff(None, self.handoff, "(no sealed copy to compare)", "handoff (edited)")
        return layers_diff(
            self.sealed, self.handoff, f"generation {self.sealed.generation} (sealed)", "handoff (edited)"
        )


def layers_diff(before: Handoff | None, after: Handoff, before_name: str, after_name: str) -> str:
    """What changed in the layers from *before* to *after*: a unified diff of their JSON, keys sorted.

    The envelope (generation, seal, times) is left out: it always differs. Empty when nothing did.
    """
    old = [] if before is None else _layers_text(before)
    return "".join(difflib.unified_diff(old, _layers_text(after), before_name, after_name))


def read_edit(
    layout: ThreadDir,
    primary: Path,
    *,
    accept_corrupt: bool = False,
    restore: Callable[[], Restored] | None = None,
    writer: Kind | None = None,
) -> Edit | Handoff:
    """The primary: as it verifies (a :class:`Handoff`: nothing to seal), or a person's :class:`Edit` of it.

    With *restore* (the thread's :meth:`~handoff_files.thread.store.HandoffStore.restore`), a thread
    whose newest generation survives only as a rebuild from ``state.json`` (its files lost) gives
    that rebuilt handoff as the edit to seal, when the primary is missing, does not parse, or holds an
    older generation: sealing it writes the state exactly as a new generation, and the chain goes on.

    :param primary: the thread's primary file.
    :param accept_corrupt: read a file that was not rewritten since it was sealed as an edit too
        (a person said it is theirs); without it, such a file raises :class:`ChecksumMismatchError`.
    :param restore: the thread's restore, to find a rebuilt generation (None: the primary alone).
    :param writer: the kind of store that would seal it (None: a plain one).
    :raises ThreadKindError: in a LangGraph checkpointer's thread, for a plain *writer*: a hand edit
        of a checkpoint is never sealed (see :mod:`~handoff_files.thread.kind`); asked first, before the file is read.
    :raises ChecksumMismatchError: the file reads as corrupt (and *accept_corrupt* is not given).
    :raises HandoffValidationError: it is not a valid handoff, or the edit changed the envelope.
    :raises HandoffError: as :func:`load` does otherwise.
    """
    refuse_plain_write(layout, writer, "seal")
    try:
        current = _read_primary(layout, primary, accept_corrupt=accept_corrupt)
    except (HandoffNotFoundError, HandoffParseError):
        rebuilt = _rebuilt(restore, 0)
        if rebuilt is None:
            raise
        return rebuilt
    if isinstance(current, Handoff) and current.seal is not None:
        return _rebuilt(restore, current.generation) or current
    return current


def already_sealed(current: Handoff, primary: Path) -> SaveReceipt:
    """The receipt of ``seal`` on a primary that needs none: it is the current generation, sealed.

    :raises HandoffError: if it is an older version, not an edit (``handoff migrate`` rewrites it).
    :raises SignatureError: if its signature does not verify: damage, not an edit, and not sealed either.
    """
    if current.seal is None:
        msg = "is an older version, not an edit: `handoff migrate` rewrites it as a sealed current generation"
        raise HandoffError(primary, msg)
    bad = signature_damage(current, primary)
    if bad is not None:
        msg = f"{bad}: damage, not an edit to seal; `handoff doctor --repair` rewrites it from a verified copy"
        raise SignatureError(primary, msg)
    return SaveReceipt(
        current.generation, str(current.seal), primary, current.created_at, ("already sealed: nothing to do",)
    )


def _rebuilt(restore: Callable[[], Restored] | None, behind: int) -> Edit | None:
    """The thread's rebuilt generation as an edit to seal, if it restores only as one newer than *behind*."""
    if restore is None:
        return None
    try:
        restored = restore()
    except HandoffError:
        return None
    if restored.source != "rebuilt" or restored.generation <= behind:
        return None
    return Edit(restored.handoff, None, corrupt=False)


def _read_primary(layout: ThreadDir, primary: Path, *, accept_corrupt: bool) -> Edit | Handoff:
    """The primary as it verifies, or a person's edit of it (see :func:`read_edit`)."""
    try:
        return load(primary, follow_symlinks=False, written=primary_stamp(layout.mirror))
    except UnsealedEditError as exc:
        handoff, corrupt = exc.handoff, False
    except ChecksumMismatchError:
        if not accept_corrupt:
            raise
        data, _ = read_bytes(primary, MAX_FILE_BYTES, follow_symlinks=False)
        try:  # read it again as a file rewritten by hand: a valid document becomes an edit, an invalid one is refused
            decode(data, primary, origin="edit")
        except UnsealedEditError as exc:
            handoff, corrupt = exc.handoff, True
        else:  # pragma: no cover - the same bytes verified a moment ago: another writer sealed it
            return load(primary, follow_symlinks=False)
    if handoff is None:  # the loader always attaches it; refuse rather than guess
        msg = "edited, but the edit could not be read back"
        raise HandoffError(primary, msg)
    sealed = _sealed_copy(layout, handoff.generation)
    _check_envelope(layout, primary, handoff, sealed)
    return Edit(handoff, sealed, corrupt)


def _sealed_copy(layout: ThreadDir, generation: int) -> Handoff | None:
    """The sealed generation the edit says it was made from, from ``history/``, if it is there and verifies."""
    for number, name in layout.generations():
        if number == generation:
            try:
                return load(layout.history_dir / name, follow_symlinks=False, origin="store")
            except HandoffError:
                return None
    return None


def _check_envelope(layout: ThreadDir, primary: Path, edit: Handoff, sealed: Handoff | None) -> None:
    """Refuse an edit of the fields the store writes (a hand-set generation would be used or dropped)."""
    if sealed is None and edit.generation > _newest_written(layout):
        msg = (
            f"the edit says generation {edit.generation}, but no sealed generation {edit.generation} exists: "
            "the envelope (generation, ids, created_at, parent, lineage) is the store's to write; "
            "change only the layers"
        )
        raise HandoffValidationError(primary, msg)
    if sealed is None:
        return
    changed = [name for name in ENVELOPE if getattr(edit, name) != getattr(sealed, name)]
    if changed:
        msg = (
            f"the edit changed {', '.join(changed)}, which the store writes (generation {sealed.generation} "
            "holds the sealed values): change only the layers — narrative, priorities, warnings, decisions, "
            "state, context — and `handoff seal` again"
        )
        raise HandoffValidationError(primary, msg)


def _newest_written(layout: ThreadDir) -> int:
    """The newest generation the store itself recorded: in ``history/``, ``state.json`` or the journal."""
    newest = max((number for number, _ in layout.generations()), default=0)
    with contextlib.suppress(HandoffError):
        newest = max(newest, read_mirror(layout.mirror).generation)
    with contextlib.suppress(HandoffError):
        last, _ = Journal(layout).last(*SAVE_EVENTS)
        newest = max(newest, last.generation or 0) if last is not None else newest
    return newest


def _layers_text(handoff: Handoff) -> list[str]:
    text = orjson.dumps(handoff.content().model_dump(mode="json"), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    return [line + "\n" for line in text.decode().splitlines()]
