"""Editing a thread's handoff through a private copy, as ``crontab -e`` does: prepare the copy, finish the edit.

:func:`prepare` copies the primary, byte for byte (a YAML primary keeps its comments), to a file
only its owner can read; a person edits that copy; :func:`finish` reads it back and saves a valid
change of the layers as the next generation. The primary is never edited in place, so an edit
that fails leaves every saved file as it was, and the copy is kept for the person to mend.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from handoff_files.format.codec import MAX_FILE_BYTES, Format, render
from handoff_files.format.loader import decode, load
from handoff_files.format.model import Handoff
from handoff_files.foundation.atomic import read_bytes
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    UnsealedEditError,
)
from handoff_files.thread.edits import ENVELOPE, Edit, layers_diff, read_edit
from handoff_files.thread.kind import refuse_plain_write
from handoff_files.thread.results import Restored, SaveReceipt
from handoff_files.thread.store import HandoffStore

__all__ = ["EditCopy", "EditOutcome", "EditStatus", "discard", "finish", "prepare"]

#: The start of a copy's private folder's name: :func:`discard` removes only such a folder.
EDIT_DIR_PREFIX: Final = "handoff-edit-"

EditStatus = Literal["unchanged", "saved", "invalid", "conflict"]


@dataclass(frozen=True, slots=True)
class EditOutcome:
    """What became of an edited copy.

    ``status``: ``"unchanged"`` (the layers are as they were: nothing saved), ``"saved"`` (the
    next generation: ``receipt``), ``"invalid"`` (the copy does not read as a handoff, or changed
    the envelope: ``error`` says why) or ``"conflict"`` (another generation was saved while the
    person edited: saving the copy would undo it). ``kept``: the copy at ``path`` is left for the
    person (always, unless unchanged or saved); it is never deleted then.
    """

    status: EditStatus
    path: Path
    kept: bool
    generation: int  # the generation the copy was made from (as its envelope says), or 0 if unreadable
    diff: str = ""
    receipt: SaveReceipt | None = None
    error: HandoffError | None = None


@dataclass(frozen=True, slots=True)
class EditCopy:
    """The private copy :func:`prepare` made, the generation it holds, and what to tell the person about it.

    ``note`` is None when the copy is the primary's own bytes; otherwise it says that the primary
    did not verify (or lagged behind) and which verified generation the copy was made from.
    """

    path: Path
    generation: int
    note: str | None = None


def prepare(store: HandoffStore) -> EditCopy:
    """Copy the thread's newest verified generation to a new private file for a person to edit. Reads the thread only.

    The copy is the primary's bytes, exactly (a YAML primary keeps its comments), when the primary
    holds the newest verified generation. When it does not (damaged, cut short, missing, behind
    ``history/``), the copy is made from the newest verified generation the thread restores to
    (``history/``, the journal, or a rebuild from ``state.json``), and ``note`` says so: saving the
    edit then replaces the primary, which the store keeps in ``history/`` if it did not verify.
    The copy lives in a new folder of the temp directory (mode 0700; the file 0600), named as the
    primary is (``handoff.yaml``), so an editor shows the format it is in.

    :returns: the copy, and what to tell the person about where it came from.
    :raises HandoffError: if the primary holds a person's edit not sealed yet (``handoff seal`` it),
        or an older version (``handoff migrate``).
    :raises NoHandoffError: if nothing in the thread verifies.
    :raises ThreadKindError: in a LangGraph checkpointer's thread (only its saver writes it).
    """
    refuse_plain_write(store.layout, store.kind, "edit")  # before a person spends time on an edit never saved
    primary = store.primary
    try:
        current: Edit | Handoff | None = read_edit(store.layout, primary)
    except HandoffNotFoundError:  # missing, damaged or cut short: the newest verified generation stands in
        current, unusable = None, "is missing"
    except HandoffError as exc:
        current, unusable = None, f"does not verify ({exc.reason})"
    if isinstance(current, Edit):
        msg = "holds a person's edit not sealed yet: `handoff seal` it (or undo it) before `handoff edit`"
        raise HandoffError(primary, msg)
    if current is not None and current.seal is None:
        msg = "is an older version: `handoff migrate` rewrites it as a sealed current generation; then edit it"
        raise HandoffError(primary, msg)
    restored = store.restore()
    note = None
    if current is not None and restored.source == "primary" and restored.generation == current.generation:
        data, _ = read_bytes(primary, MAX_FILE_BYTES, follow_symlinks=False)
    else:
        data = _copy_bytes(restored, primary, store.format)
        why = unusable if current is None else f"holds generation {current.generation}, not the newest"
        note = (
            f"{primary.name} {why}: this edit starts from generation {restored.generation} "
            f"{_where(restored, store.path)}; saving it replaces {primary.name}"
        )
    folder = Path(tempfile.mkdtemp(prefix=f"{EDIT_DIR_PREFIX}{store.path.name}-"))  # mode 0700
    copy = folder / primary.name
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return EditCopy(copy, restored.generation, note)


def _copy_bytes(restored: Restored, primary: Path, fmt: Format) -> bytes:
    """The bytes of *restored* for a copy named as *primary*: its file's own when the format matches, else rendered."""
    if restored.source in ("primary", "history") and restored.path.suffix == primary.suffix:
        data, _ = read_bytes(restored.path, MAX_FILE_BYTES, follow_symlinks=False)
        return data
    document = restored.handoff.model_dump(mode="json")
    ordered: dict[str, Any] = {key: document.pop(key) for key in (*ENVELOPE, "seal") if key in document}
    return render({**ordered, **document}, fmt)


def _where(restored: Restored, thread: Path) -> str:
    """Where a restored generation came from, as a person would look for it."""
    if restored.source == "rebuilt":
        return (
            f"as rebuilt from {restored.path.name} and the journal (state exact; decisions, warnings and context lost)"
        )
    if restored.source == "journal":
        return "as the journal holds it"
    where = restored.path.relative_to(thread) if restored.path.is_relative_to(thread) else restored.path
    return f"as {where} holds it"


def finish(store: HandoffStore, path: Path) -> EditOutcome:
    """Read the edited copy at *path* back and save its layers as the thread's next generation. Writes.

    Unchanged layers save nothing; a copy that does not read as a handoff, changed the envelope
    (generation, ids, ``created_at``, ``parent``, ``lineage``), or was made from a generation
    another writer has since replaced, saves nothing and is kept. The copy is removed only once
    its edit is saved or found unchanged.

    :returns: what became of it (see :class:`EditOutcome`).
    :raises HandoffError: as :meth:`HandoffStore.save` does (lock, disk): the copy is kept then too.
    """
    try:
        edited = _read_copy(path)
    except HandoffError as exc:
        return EditOutcome("invalid", path, kept=True, generation=0, error=exc)
    with store.locked():  # from the read of the newest generation to the save: no other writer lands between
        current = store.restore().handoff
        base = current if edited.generation == current.generation else _sealed(store, edited.generation)
        changed = [] if base is None else [name for name in ENVELOPE if getattr(edited, name) != getattr(base, name)]
        if base is None or changed:
            what = ", ".join(changed) or f"generation (to {edited.generation}: no sealed copy of it to compare with)"
            msg = (
                f"the edit changed {what}, which the store writes: change only the layers — narrative, "
                "priorities, warnings, decisions, state, context"
            )
            refused: HandoffError = HandoffValidationError(path, msg)
            return EditOutcome("invalid", path, kept=True, generation=edited.generation, error=refused)
        diff = layers_diff(base, edited, f"generation {base.generation}", "handoff (edited)")
        if base is not current:
            msg = (
                f"generation {current.generation} was saved while this edit of generation {base.generation} "
                "was open: saving it would undo that save; `handoff edit` again and redo the change there"
            )
            error = HandoffError(path, msg)
            return EditOutcome("conflict", path, kept=True, generation=base.generation, diff=diff, error=error)
        if not diff:
            discard(path)
            return EditOutcome("unchanged", path, kept=False, generation=base.generation)
        receipt = store.save(edited)
    discard(path)
    return EditOutcome("saved", path, kept=False, generation=base.generation, diff=diff, receipt=receipt)


def discard(path: Path) -> None:
    """Remove a copy :func:`prepare` made, and its folder once empty. Writes.

    Only a file in a ``handoff-edit-…`` folder is removed: any other path is left alone.
    """
    if not path.parent.name.startswith(EDIT_DIR_PREFIX):
        return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    with contextlib.suppress(OSError):  # an editor's own leftovers (a backup file) keep the folder
        path.parent.rmdir()


def _read_copy(path: Path) -> Handoff:
    """The edited copy as a handoff: sealed (untouched, or only reformatted) or a valid edit of one.

    :raises HandoffError: it cannot be read, or does not parse or validate as a current handoff.
    """
    data, _ = read_bytes(path, MAX_FILE_BYTES, follow_symlinks=False)
    try:  # a person's own copy, edited on purpose: any seal mismatch in it is their edit
        handoff = decode(data, path, origin="edit")
    except UnsealedEditError as exc:
        if exc.handoff is None:  # pragma: no cover - the loader always attaches it
            raise
        return exc.handoff
    if handoff.seal is None:  # an older version, migrated in memory: not what the copy was
        msg = "the edit changed schema_version, which the store writes: change only the layers"
        raise HandoffValidationError(path, msg)
    return handoff


def _sealed(store: HandoffStore, generation: int) -> Handoff | None:
    """Generation *generation* as ``history/`` holds it, if it is there and verifies."""
    for number, name in store.layout.generations():
        if number == generation:
            with contextlib.suppress(HandoffError):
                return load(store.history_dir / name, follow_symlinks=False, origin="store")
    return None
