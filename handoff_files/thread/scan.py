"""The scan: where the newest verified generation is: the primary, ``history/``, or a journal-first save's line."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from handoff_files.format.codec import render
from handoff_files.format.loader import decode, load
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, SignatureError, UnsealedEditError
from handoff_files.foundation.lock import try_writer_lock
from handoff_files.thread.identity import Identity
from handoff_files.thread.journal import SAVE_EVENTS, Entry, Journal
from handoff_files.thread.kind import sealing_advice
from handoff_files.thread.layout import HISTORY_DIR, JOURNAL_NAME, MIRROR_NAME, ThreadDir
from handoff_files.thread.mirror import Mirror, primary_stamp
from handoff_files.thread.results import Restored
from handoff_files.thread.settings import ThreadSettings
from handoff_files.thread.signatures import signature_damage

__all__ = ["HasJournal", "PrimaryState", "Scan", "journal_saves", "scan", "verify_document", "vouched"]

#: How the primary stood in a scan: verified and sealed, missing, not verifying, or an older version.
PrimaryState = Literal["ok", "missing", "bad", "legacy"]


class HasJournal(Protocol):
    """Anything that has a thread's journal: :class:`ThreadSettings`, or the store itself."""

    @property
    def journal(self) -> Journal:
        """The thread's journal."""
        ...


@dataclass(frozen=True, slots=True)
class Scan:
    """The newest verified generation among the primary, ``history/`` and the journal, and what was seen on the way."""

    newest: Restored | None
    highest: int  # highest generation number of this thread: verified, or a well-formed name in history/
    primary: PrimaryState
    problems: tuple[str, ...] = ()
    edit: Handoff | None = None  # a person's valid, unsealed edit of the primary
    last: Entry | None = None  # the journal's last save line
    journal_problems: tuple[str, ...] = ()  # damaged journal lines met reading back to it
    taken: int = 0  # the highest number another thread's file holds here: never reused, never called lost


def scan(thread: ThreadSettings) -> Scan:
    """Find the newest verified generation: the primary, ``history/``, then a journal-first save's line.

    :param thread: the thread to look in.
    :returns: what was found, and what was seen on the way.
    :raises HandoffError: if ``history/`` or the journal cannot be read.
    """
    # the journal first, the files after: a save writes its files before its journal line (or, journal
    # first, puts the whole document in it), so a line read now names nothing the file scan can miss
    journal = thread.journal
    last, damaged = journal.last(*SAVE_EVENTS)
    identity = Identity(thread.layout)
    found = _scan_files(thread, identity)
    found = replace(found, last=last, journal_problems=tuple(damaged))
    if last is None or last.generation is None or not last.journal_first:
        return found
    newest = found.newest
    if newest is not None and newest.handoff.seal is not None and newest.generation >= last.generation:
        return found
    problems = list(newest.problems if newest is not None else found.problems)
    floor = newest.generation if newest is not None and newest.handoff.seal is not None else 0
    # the newest journal-first save whose document verifies: a newer save line whose document did
    # not survive was never acknowledged (a torn write of both lines), and must not hide older ones
    for entry, handoff, _, why_not in journal_saves(thread, floor):
        if handoff is None:
            problems.append(
                f"{JOURNAL_NAME}: the line of generation {entry.generation} holds no usable document: {why_not}"
            )
            continue
        foreign = identity.foreign(handoff, f"{JOURNAL_NAME}: the line of generation {entry.generation}")
        if foreign is not None:
            # another thread's lines appended: never restored, never chained on, and their number is not ours
            problems.append(foreign)
            if entry.seal == last.seal and entry.generation == last.generation:
                found = replace(found, last=None, journal_problems=(*found.journal_problems, foreign))
            continue
        problems.append(
            f"generation {entry.generation} was restored from its journal line: a journal-first save "
            "was interrupted, or a crash lost its files, after its commit"
        )
        restored = Restored(handoff, "journal", journal.path, tuple(dict.fromkeys(problems)))
        numbers = (found.highest, entry.generation or 0, (found.last.generation or 0) if found.last else 0)
        return replace(found, newest=restored, highest=max(numbers), problems=())
    if newest is not None:
        return replace(found, newest=replace(newest, problems=tuple(problems)))
    return replace(found, problems=tuple(problems))


def journal_saves(
    thread: HasJournal, floor: int
) -> Iterator[tuple[Entry, Handoff | None, dict[str, Any] | None, str | None]]:
    """Journal-first saves newer than generation *floor*, newest first, each with its document verified.

    Restore, the doctor and export all take generations from here.

    :param thread: what holds the journal (:class:`ThreadSettings`, or a store).
    :param floor: the newest generation already known from a file.
    :returns: an iterator of the save line, the handoff its document holds (None if it does not
        verify), the raw document, and why not.
    :raises HandoffError: if the journal cannot be read.
    """
    journal = thread.journal
    for entry, document in journal.committed_documents():
        if entry.generation is None or entry.generation <= floor:
            return
        handoff, why_not = verify_document(journal.path, entry, document)
        yield entry, handoff, (document if handoff is not None else None), why_not


def verify_document(path: Path, entry: Entry, document: dict[str, Any] | None) -> tuple[Handoff | None, str | None]:
    """Verify the document of a journal-first save line as a file is verified: the handoff, or why not.

    The document must decode as a copy only the store writes, and hold the generation and seal of *entry*.

    :param path: the journal file, named in errors.
    :param entry: the save line (or its document line: both name the same generation and seal).
    :param document: the document, None if its line is missing or damaged.
    """
    if document is None:
        return None, "its document line is missing or damaged"
    try:
        handoff = decode(render(document, "json"), path, origin="store")
    except HandoffError as exc:
        return None, exc.reason
    except (TypeError, ValueError) as exc:
        return None, str(exc)
    bad = signature_damage(handoff, path)
    if bad is not None:
        return None, bad
    if handoff.generation != entry.generation or str(handoff.seal) != entry.seal:
        return None, f"it holds generation {handoff.generation} sealed {handoff.seal}, not the line's"
    return handoff, None


def _scan_files(thread: ThreadSettings, identity: Identity) -> Scan:  # noqa: PLR0912 -- the ladder's rungs, read in one place
    """Find the newest verified generation of this thread among the primary and ``history/``, newest first."""
    problems: list[str] = []
    history = thread.layout.generations()
    primary_path = thread.primary
    primary, state, edit, highest = _read_primary(primary_path, problems)
    foreigners: list[int] = []  # the numbers of other threads' files met
    if primary is not None and primary.handoff.seal is not None:
        foreign = identity.foreign(primary.handoff, primary_path.name)
        if foreign is not None:
            # "bad": the next save keeps it in history/ (displaced-…) before it writes the primary
            problems.append(foreign)
            primary, state, highest = None, "bad", 0  # nor is its number ours: the next save sets it aside
    sealed_primary = primary is not None and primary.handoff.seal is not None
    for generation, name in history:
        path = thread.layout.history_dir / name
        # a sealed primary shadows history up to its generation; an older-version file in the
        # primary's place does not shadow a sealed generation of the same number
        if primary is not None and (
            generation < primary.generation or (sealed_primary and generation == primary.generation)
        ):
            break
        try:
            handoff = _history_copy(path)
        except HandoffError as exc:
            problems.append(f"{HISTORY_DIR}/{path.name}: {exc.reason}")
            continue
        if handoff.generation != generation:
            problems.append(f"{HISTORY_DIR}/{path.name} holds generation {handoff.generation}; skipped")
            continue
        foreign = identity.foreign(handoff, f"{HISTORY_DIR}/{path.name}") if handoff.seal is not None else None
        if foreign is not None:
            problems.append(foreign)
            foreigners.append(generation)
            continue
        fork = _fork(handoff, path, primary if sealed_primary else None)
        if fork is not None:
            problems.append(fork)
            continue
        if primary is not None and not sealed_primary:
            problems.append(
                f"{primary_path.name} is an older-version file (generation {primary.generation}); "
                f"{HISTORY_DIR}/{path.name} is sealed and wins"
            )
        elif primary is not None and not _save_in_progress(thread.path):
            problems.append(
                f"{primary_path.name} holds generation {primary.generation}, behind {HISTORY_DIR}/"
                f"{path.name}: a save was interrupted after its commit"
            )
        restored = Restored(handoff, "history", path, tuple(problems))
        return _found(
            restored, highest=highest, history=history, foreigners=foreigners, state=state, problems=(), edit=edit
        )
    if primary is not None:
        migrated = primary.handoff.lineage.migrated_from
        if primary.handoff.seal is None and migrated is not None:
            problems.append(
                f"{primary_path.name} is a {migrated.schema_version} handoff, migrated in memory; "
                "`handoff migrate` rewrites it as a sealed generation"
            )
        if problems:
            primary = Restored(primary.handoff, "primary", primary.path, tuple(problems))
        return _found(
            primary, highest=highest, history=history, foreigners=foreigners, state=state, problems=(), edit=edit
        )
    return _found(
        None, highest=highest, history=history, foreigners=foreigners, state=state, problems=tuple(problems), edit=edit
    )


def _fork(handoff: Handoff, path: Path, primary: Restored | None) -> str | None:
    """Why a ``history/`` copy one generation past the sealed *primary* does not follow it (its parent is
    not the primary's seal: a fork, or a copy from elsewhere), or None."""
    if primary is None or handoff.generation != primary.handoff.generation + 1:
        return None
    follows = str(primary.handoff.seal)
    if handoff.parent == follows:
        return None
    return (
        f"{HISTORY_DIR}/{path.name} does not follow {primary.path.name}'s generation {primary.handoff.generation} "
        f"(its parent is {handoff.parent}, not {follows}): a fork, or a copy from elsewhere; passed over"
    )


def _history_copy(path: Path) -> Handoff:
    """A ``history/`` file, verified: nobody edits history/, so a mismatch (seal or signature) is damage."""
    handoff = load(path, follow_symlinks=False, origin="store")
    bad = signature_damage(handoff, path)
    if bad is not None:
        raise SignatureError(path, bad)
    return handoff


def _found(
    newest: Restored | None,
    *,
    highest: int,
    history: list[tuple[int, str]],
    foreigners: list[int],
    state: PrimaryState,
    problems: tuple[str, ...],
    edit: Handoff | None,
) -> Scan:
    """The scan's result: this thread's highest number counts every well-formed name but other threads' files."""
    names = (generation for generation, _ in history if generation not in foreigners)
    own = max(highest, next(names, 0))  # newest first: the first name not another thread's
    return Scan(newest, own, state, problems, edit, taken=max(foreigners, default=0))


def _read_primary(path: Path, problems: list[str]) -> tuple[Restored | None, PrimaryState, Handoff | None, int]:
    """The primary if it verifies, its state, a person's valid edit of it, and the generation it names.

    Only a verified primary names a generation: the number in a damaged or edited one is not
    verified bytes (damage, or a person, can leave any digits there). What is wrong with it is
    added to *problems*.
    """
    try:
        written = primary_stamp(path.parent / MIRROR_NAME)
        sealing = sealing_advice(ThreadDir(path.parent))
        primary = Restored(load(path, follow_symlinks=False, written=written, sealing=sealing), "primary", path)
    except HandoffNotFoundError:
        problems.append(f"{path.name} is missing")
        return None, "missing", None, 0
    except UnsealedEditError as exc:
        problems.append(f"{path.name}: {exc.reason}")
        return None, "bad", exc.handoff, 0
    except HandoffError as exc:
        problems.append(f"{path.name}: {exc.reason}")
        problems.append(
            f"{path.name} did not verify, so which generation it held is unknown (damaged bytes are never "
            "trusted for a number): if it was newer than the one restored, that generation is lost"
        )
        return None, "bad", None, 0
    bad = signature_damage(primary.handoff, path)
    if bad is not None:
        problems.append(f"{path.name}: {bad}")
        return None, "bad", None, 0
    return primary, "ok" if primary.handoff.seal is not None else "legacy", None, primary.generation


def _save_in_progress(directory: Path) -> bool:
    """Whether a writer holds the lock now (asked only when the primary lags behind history)."""
    with try_writer_lock(directory) as free:
        return not free


def vouched(found: Scan, mirror: Mirror | None) -> tuple[int, Mirror | None, str | None]:
    """The highest generation number the thread vouches for, state.json if it counts, and why not.

    Numbers come from this thread's verified generations, well-formed ``history/`` names and the
    journal's save lines (each line checks itself). ``state.json``'s number counts only when one of
    those confirms it (a generation of at least its number, or a save line of the same generation
    and seal), when it is the one generation after them (a save whose file alone was lost: it is
    written before state.json), or when nothing else is left. A forged state.json naming a far
    generation must not block or reroute every save.

    :param found: the scan.
    :param mirror: ``state.json`` as read, or None.
    :returns: the highest number, ``state.json`` (None if it does not count), and why it does not.
    """
    last = found.last
    highest = max(found.highest, (last.generation or 0) if last else 0)
    if mirror is None or mirror.generation <= highest:
        return highest, mirror, None
    agrees = last is not None and (last.generation, last.seal) == (mirror.generation, mirror.seal)
    if agrees or mirror.generation == highest + 1 or (found.newest is None and highest == 0):
        return mirror.generation, mirror, None
    why = (
        f"{MIRROR_NAME} names generation {mirror.generation}, past every verified generation, file name and "
        f"journal line of this thread (newest {highest}): not confirmed, so passed over"
    )
    return highest, None, why
