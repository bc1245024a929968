"""Recovery: the ladder a restore climbs down (primary → history → rebuilt), and the acknowledgement."""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Literal

import pydantic

from handoff_files.format.codec import MAX_FILE_BYTES, render
from handoff_files.format.loader import decode, describe, load
from handoff_files.format.model import MAX_INT, PARSED, SCHEMA_VERSION, Handoff
from handoff_files.foundation.atomic import is_real_dir, read_bytes, write_durable
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, NoHandoffError, UnsealedEditError
from handoff_files.foundation.lock import try_writer_lock
from handoff_files.thread.journal import JOURNAL_NAME, Entry
from handoff_files.thread.mirror import MIRROR_NAME, Mirror, mirror_bytes, read_mirror
from handoff_files.thread.results import Restored

if TYPE_CHECKING:
    from handoff_files.thread.store import HandoffStore

__all__ = [
    "SAVE_EVENTS",
    "Scan",
    "acknowledge",
    "journal_saves",
    "restore",
    "scan",
    "summary_fields",
]

#: The journal events that record a new generation.
SAVE_EVENTS: Final = ("saved", "sealed", "migrated", "adopted")

_GENERATION_TEXT: Final = re.compile(rb'generation"?\s*:\s*(\d{1,19})')
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s")
#: How many times a restore looks when the channels seem ahead of every file, and the pause
#: between looks (a concurrent save finishes its writes within milliseconds).
_LOOKS: Final = 3
_LOOK_PAUSE: Final = 0.01

PrimaryState = Literal["ok", "missing", "bad", "legacy"]


@dataclass(frozen=True, slots=True)
class Scan:
    """The newest verified generation among the primary, ``history/`` and the journal, and what was seen on the way."""

    newest: Restored | None
    highest: int  # highest generation number seen anywhere, verified or not
    primary: PrimaryState
    problems: tuple[str, ...] = ()
    edit: Handoff | None = None  # a person's valid, unsealed edit of the primary
    last: Entry | None = None  # the journal's last save line
    journal_problems: tuple[str, ...] = ()  # damaged journal lines met reading back to it


def scan(store: HandoffStore) -> Scan:
    """Find the newest verified generation: the primary, ``history/``, then a journal-first save's line."""
    # the journal first, the files after: a save writes its files before its journal line (or, journal
    # first, puts the whole document in it), so a line read now names nothing the file scan can miss
    last, damaged = store.journal.last(*SAVE_EVENTS)
    found = _scan_files(store)
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
    for entry, handoff, _, why_not in journal_saves(store, floor):
        if handoff is None:
            problems.append(
                f"{JOURNAL_NAME}: the line of generation {entry.generation} holds no usable document: {why_not}"
            )
            continue
        problems.append(
            f"generation {entry.generation} was restored from its journal line: a journal-first save "
            "was interrupted, or a crash lost its files, after its commit"
        )
        restored = Restored(handoff, "journal", store.journal.path, tuple(_unique(problems)))
        return replace(found, newest=restored, highest=max(found.highest, last.generation), problems=())
    if newest is not None:
        return replace(found, newest=replace(newest, problems=tuple(problems)))
    return replace(found, problems=tuple(problems))


def journal_saves(
    store: HandoffStore, floor: int
) -> Iterator[tuple[Entry, Handoff | None, dict[str, Any] | None, str | None]]:
    """Journal-first saves newer than generation *floor*, newest first, each with its document verified.

    Yields the save line, the handoff its document holds (None if it does not verify), the raw
    document, and why not. Restore, the doctor and export all take generations from here.
    """
    for entry, document in store.journal.committed_documents():
        if entry.generation is None or entry.generation <= floor:
            return
        handoff, why_not = _verified(store, entry, document)
        yield entry, handoff, (document if handoff is not None else None), why_not


def _verified(store: HandoffStore, entry: Entry, document: dict[str, Any] | None) -> tuple[Handoff | None, str | None]:
    """Verify the document of a journal-first save line as a file is verified: the handoff, or why not."""
    if document is None:
        return None, "its document line is missing or damaged"
    try:
        handoff = decode(render(document, "json"), store.journal.path)
    except HandoffError as exc:
        return None, exc.reason
    except (TypeError, ValueError) as exc:
        return None, str(exc)
    if handoff.generation != entry.generation or str(handoff.seal) != entry.seal:
        return None, f"it holds generation {handoff.generation} sealed {handoff.seal}, not the line's"
    return handoff, None


def _scan_files(store: HandoffStore) -> Scan:
    """Find the newest verified generation among the primary and ``history/``, newest first."""
    problems: list[str] = []
    history = store._history_generations()
    highest = history[0][0] if history else 0
    primary: Restored | None = None
    state: PrimaryState = "missing"
    edit: Handoff | None = None
    try:
        primary = Restored(load(store.primary, follow_symlinks=False), "primary", store.primary)
        state = "ok" if primary.handoff.seal is not None else "legacy"
        highest = max(highest, primary.generation)
    except HandoffNotFoundError:
        problems.append(f"{store.primary.name} is missing")
    except UnsealedEditError as exc:
        state, edit = "bad", exc.handoff
        problems.append(f"{store.primary.name}: {exc.reason}")
        if exc.handoff is not None:
            highest = max(highest, exc.handoff.generation)
    except HandoffError as exc:
        state = "bad"
        problems.append(f"{store.primary.name}: {exc.reason}")
        highest = max(highest, _generation_guess(store))
    sealed_primary = primary is not None and primary.handoff.seal is not None
    for generation, name in history:
        path = store.history_dir / name
        # a sealed primary shadows history up to its generation; an older-version file in the
        # primary's place does not shadow a sealed generation of the same number
        if primary is not None and (
            generation < primary.generation or (sealed_primary and generation == primary.generation)
        ):
            break
        try:
            handoff = load(path, follow_symlinks=False)
        except HandoffError as exc:
            problems.append(f"history/{path.name}: {exc.reason}")
            continue
        if handoff.generation != generation:
            problems.append(f"history/{path.name} holds generation {handoff.generation}; skipped")
            continue
        if primary is not None and not sealed_primary:
            problems.append(
                f"{store.primary.name} is an older-version file (generation {primary.generation}); "
                f"history/{path.name} is sealed and wins"
            )
        elif primary is not None and not _save_in_progress(store):
            problems.append(
                f"{store.primary.name} holds generation {primary.generation}, behind history/"
                f"{path.name}: a save was interrupted after its commit"
            )
        return Scan(Restored(handoff, "history", path, tuple(problems)), highest, state, (), edit)
    if primary is not None:
        migrated = primary.handoff.lineage.migrated_from
        if primary.handoff.seal is None and migrated is not None:
            problems.append(
                f"{store.primary.name} is a {migrated.schema_version} handoff, migrated in memory; "
                "`handoff migrate` rewrites it as a sealed 2.0 generation"
            )
            primary = Restored(primary.handoff, "primary", primary.path, tuple(problems))
        return Scan(primary, highest, state, (), edit)
    return Scan(None, highest, state, tuple(problems), edit)


def _save_in_progress(store: HandoffStore) -> bool:
    """Whether a writer holds the lock now (asked only when the primary lags behind history)."""
    with try_writer_lock(store.path) as free:
        return not free


def _generation_guess(store: HandoffStore) -> int:
    """Best effort on an unreadable primary: the largest generation number its bytes mention."""
    try:
        data, _ = read_bytes(store.primary, MAX_FILE_BYTES, follow_symlinks=False)
    except HandoffError:
        return 0
    # only numbers a generation could be: damage can leave any digits in the bytes
    found = (int(m.group(1)) for m in _GENERATION_TEXT.finditer(data))
    return max((n for n in found if n < MAX_INT), default=0)


def _mirror(store: HandoffStore) -> Mirror | str:
    """state.json, or what is wrong with it."""
    try:
        return read_mirror(store.mirror_path)
    except HandoffNotFoundError:
        return f"{MIRROR_NAME} is missing"
    except HandoffError as exc:
        return f"{MIRROR_NAME}: {exc.reason}"


def _channels(found: Scan, read: Mirror | str, problems: list[str]) -> tuple[Mirror | None, Entry | None]:
    """state.json (read before the scan) and the journal's last save (taken from it), noting what is wrong."""
    mirror = read if isinstance(read, Mirror) else None
    if isinstance(read, str):
        problems.append(read)
    last, damaged = found.last, found.journal_problems
    problems.extend(damaged)
    if last is None and not damaged:
        problems.append("the journal has no save recorded")
    return mirror, last


def restore(store: HandoffStore, *, accept_edit: bool = False) -> Restored:
    """Climb the recovery ladder (see :meth:`HandoffStore.restore`)."""
    if not is_real_dir(store.path, follow_symlinks=True):
        msg = "no such thread directory: nothing has been saved here"
        raise NoHandoffError(store.path, msg)
    # readers take no lock, so every look reads state.json and the journal BEFORE the files: a save
    # writes its history copy before either names its generation, so the scan that follows finds it
    read = _mirror(store)
    found = scan(store)
    if accept_edit and found.edit is not None:
        store.seal()
        read = _mirror(store)
        found = scan(store)
    # channels ahead of every file mean lost files, or a save that overtook this look: look again
    # before calling anything lost or rebuilding
    for attempt in range(_LOOKS):
        newest = found.newest
        problems = list(newest.problems if newest is not None else found.problems)
        mirror, last = _channels(found, read, problems)
        # the newest generation any channel knows of (a damaged file's number counts: it was saved)
        expected = max(mirror.generation if mirror else 0, (last.generation or 0) if last else 0, found.highest)
        if newest is not None and newest.generation >= expected:
            problems.extend(_cross_check(newest, mirror, last))
            return Restored(newest.handoff, newest.source, newest.path, tuple(_unique(problems)), newest.edited)
        if attempt < _LOOKS - 1:
            time.sleep(_LOOK_PAUSE * (attempt + 1))
            read = _mirror(store)
            found = scan(store)
    if mirror is not None and mirror.generation == expected:
        rebuilt, why_not = _rebuild(mirror, last if last is not None and last.generation == expected else None)
        if why_not is not None:
            problems.append(f"cannot rebuild generation {expected} from {MIRROR_NAME}: {why_not}")
        if rebuilt is not None:
            newer = f"; the newest verified file holds generation {newest.generation}" if newest else ""
            problems.append(
                f"generation {expected} was rebuilt from {MIRROR_NAME} and the journal: state exact, narrative "
                f"and next step from the journal's summary; decisions, warnings and context lost{newer}"
            )
            return Restored(rebuilt, "rebuilt", store.mirror_path, tuple(_unique(problems)))
    if newest is not None:
        problems.append(f"restored generation {newest.generation}; generations up to {expected} are lost")
        return Restored(newest.handoff, newest.source, newest.path, tuple(_unique(problems)), newest.edited)
    reason = "nothing here verifies" + (": " + "; ".join(_unique(problems)) if problems else "")
    raise NoHandoffError(store.path, reason)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _cross_check(newest: Restored, mirror: Mirror | None, last: Entry | None) -> list[str]:
    """What state.json and the journal say that disagrees with the restored generation."""
    if newest.handoff.seal is None:
        return []
    seal = str(newest.handoff.seal)
    notes = []
    if mirror is not None and mirror.generation == newest.generation and mirror.seal != seal:
        notes.append(
            f"{MIRROR_NAME} mirrors generation {mirror.generation} with another seal; `handoff doctor --repair`"
        )
    if mirror is not None and mirror.generation < newest.generation:
        notes.append(
            f"{MIRROR_NAME} mirrors generation {mirror.generation}, behind generation {newest.generation}: "
            "a save was interrupted after its commit (`handoff doctor --repair` rewrites it)"
        )
    if last is not None and last.generation == newest.generation and last.seal != seal:
        notes.append(f"the journal's last save of generation {last.generation} has another seal")
    if last is not None and last.generation is not None and last.generation < newest.generation:
        notes.append(
            f"the journal's last save is generation {last.generation}, behind generation {newest.generation}: "
            "a save was interrupted after its commit, or the journal lost lines"
        )
    return notes


def summary_fields(document: dict[str, Any]) -> dict[str, Any]:
    """The plain-words summary a journal "saved" line carries: first sentence, next step."""
    narrative = str(document.get("narrative") or "").strip()
    first = _SENTENCE_END.split(narrative, maxsplit=1)[0][:300] if narrative else ""
    priorities = document.get("priorities") or []
    top = priorities[0] if priorities else None
    summary = first or "(no narrative)"
    if top:
        summary += f" Next: {top['task']}"
    return {"summary": summary, "first_sentence": first, "next": top}


def _rebuild(mirror: Mirror, last: Entry | None) -> tuple[Handoff | None, str | None]:
    """A handoff made from state.json (state exact) and the journal's summary of the same generation."""
    first = str(last.extra.get("first_sentence", "")) if last is not None else ""
    top = last.extra.get("next") if last is not None else None
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "agent_id": mirror.agent_id,
        "thread_id": mirror.thread_id,
        "generation": mirror.generation,
        "created_at": mirror.created_at,
        "state": mirror.state,
        "narrative": f"[rebuilt after the handoff files were lost] {first}".strip(),
        "priorities": [top] if isinstance(top, dict) else [],
        "warnings": [
            {
                "text": "This handoff was rebuilt from state.json and the journal: its state is exact, but "
                "decisions, warnings, most priorities and the full narrative were lost.",
                "severity": "high",
            }
        ],
        "decisions": [],
    }
    try:
        return Handoff.model_validate(document, context={PARSED: True}), None
    except pydantic.ValidationError as exc:
        return None, describe(exc)


def acknowledge(store: HandoffStore, restored: Restored) -> None:
    """Write the "resumed from generation N" journal line, and note the restore in state.json."""
    store.init()
    with store._lock.held():
        store.journal.append(
            "resumed",
            generation=restored.generation,
            seal=str(restored.handoff.seal) if restored.handoff.seal else None,
            summary=f"resumed from generation {restored.generation} ({restored.source})",
            source=restored.source,
        )
        try:
            mirror = read_mirror(store.mirror_path)
        except HandoffError:
            return  # nothing to note it in; doctor --repair rebuilds state.json
        last_restore = {
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "generation": restored.generation,
            "source": restored.source,
        }
        write_durable(
            store.mirror_path,
            mirror_bytes(
                generation=mirror.generation,
                seal=mirror.seal,
                agent_id=mirror.agent_id,
                thread_id=mirror.thread_id,
                created_at=mirror.created_at,
                state=mirror.state,
                saves=mirror.saves,
                last_restore=last_restore,
            ),
        )
