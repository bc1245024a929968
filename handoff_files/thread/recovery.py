"""Recovery: the ladder a restore climbs down (primary → history → rebuilt), and the acknowledgement."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pydantic

from handoff_files.format.loader import describe
from handoff_files.format.model import PARSED, SCHEMA_VERSION, Handoff
from handoff_files.foundation.atomic import is_real_dir, write_durable
from handoff_files.foundation.clock import iso_z
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, NoHandoffError
from handoff_files.thread.ackproof import RESUMED, proof_fields
from handoff_files.thread.journal import SAVE_EVENTS, Entry
from handoff_files.thread.layout import MIRROR_NAME
from handoff_files.thread.mirror import Mirror, mirror_bytes, read_mirror, verify_mirror
from handoff_files.thread.results import Restored
from handoff_files.thread.scan import HasJournal, Scan, journal_saves, scan, vouched
from handoff_files.thread.settings import ThreadSettings

# the scan and the journal's save events are re-exported: the ladder's callers take them from here
__all__ = [
    "SAVE_EVENTS",
    "HasJournal",
    "Scan",
    "acknowledge",
    "journal_saves",
    "refuse_acknowledgement",
    "restore",
    "scan",
    "summary_fields",
]

_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s")
# a LangGraph checkpoint's source as its metadata says it ("input", "loop", "update", "fork")
_SOURCE: Final = re.compile(r"[a-z_]{1,32}")
#: How many times a restore looks when the channels seem ahead of every file, and the pause
#: between looks (a concurrent save finishes its writes within milliseconds).
_LOOKS: Final = 3
_LOOK_PAUSE: Final = 0.01


def _mirror(thread: ThreadSettings) -> Mirror | str:
    """state.json, or what is wrong with it."""
    try:
        return read_mirror(thread.layout.mirror)
    except HandoffNotFoundError:
        return f"{MIRROR_NAME} is missing"
    except HandoffError as exc:
        return f"{MIRROR_NAME}: {exc.reason}"


def _channels(found: Scan, read: Mirror | str, problems: list[str]) -> tuple[int, Mirror | None, Entry | None]:
    """The newest generation the channels vouch for, state.json (read before the scan) if it counts, and
    the journal's last save (taken from the scan), noting what is wrong.
    """
    mirror = read if isinstance(read, Mirror) else None
    if isinstance(read, str):
        problems.append(read)
    last, damaged = found.last, found.journal_problems
    problems.extend(damaged)
    if last is None and not damaged:
        problems.append("the journal has no save recorded")
    # a damaged file's number counts when its name is well-formed (it was saved); a number in
    # damaged bytes, another thread's, or state.json's alone does not
    expected, mirror, why_not = vouched(found, mirror)
    if why_not is not None:
        problems.append(why_not)
    return expected, mirror, last


def restore(thread: ThreadSettings, *, seal_edit: Callable[[], object] | None = None) -> Restored:
    """Climb the recovery ladder (see :meth:`~handoff_files.thread.store.HandoffStore.restore`).

    :param thread: the thread to restore.
    :param seal_edit: seals a person's valid, unsealed edit of the primary as the next generation;
        given, it is called when there is such an edit, and the ladder is climbed after it.
    :returns: the newest verified generation, with what was wrong on the way.
    :raises NoHandoffError: if the thread holds nothing that verifies.
    """
    if not is_real_dir(thread.path, follow_symlinks=True):
        msg = "no such thread directory: nothing has been saved here"
        raise NoHandoffError(thread.path, msg)
    # readers take no lock, so every look reads state.json and the journal BEFORE the files: a save
    # writes its history copy before either names its generation, so the scan that follows finds it
    read = _mirror(thread)
    found = scan(thread)
    if seal_edit is not None and found.edit is not None:
        seal_edit()
        read = _mirror(thread)
        found = scan(thread)
    # channels ahead of every file mean lost files, or a save that overtook this look: look again
    # before calling anything lost or rebuilding
    for attempt in range(_LOOKS):
        newest = found.newest
        problems = list(newest.problems if newest is not None else found.problems)
        expected, mirror, last = _channels(found, read, problems)
        if newest is not None and newest.generation >= expected:
            problems.extend(_cross_check(newest, mirror, last))
            return Restored(newest.handoff, newest.source, newest.path, tuple(_unique(problems)), newest.edited)
        if attempt < _LOOKS - 1:
            time.sleep(_LOOK_PAUSE * (attempt + 1))
            read = _mirror(thread)
            found = scan(thread)
    if mirror is not None and mirror.generation == expected:
        rebuilt, why_not = _rebuild(
            mirror, last if last is not None and last.generation == expected else None, thread.layout.mirror
        )
        if why_not is not None:
            problems.append(f"cannot rebuild generation {expected} from {MIRROR_NAME}: {why_not}")
        if rebuilt is not None:
            newer = f"; the newest verified file holds generation {newest.generation}" if newest else ""
            problems.append(
                f"generation {expected} was rebuilt from {MIRROR_NAME} and the journal: state exact, narrative "
                f"and next step from the journal's summary; decisions, warnings and context lost{newer}"
            )
            return Restored(rebuilt, "rebuilt", thread.layout.mirror, tuple(_unique(problems)))
    if newest is not None:
        problems.append(f"restored generation {newest.generation}; generations up to {expected} are lost")
        return Restored(newest.handoff, newest.source, newest.path, tuple(_unique(problems)), newest.edited)
    reason = "nothing here verifies" + (": " + "; ".join(_unique(problems)) if problems else "")
    raise NoHandoffError(thread.path, thread.layout.not_a_thread() or reason)


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
    """The plain-words summary a journal "saved" line carries: first sentence (a checkpoint: its step), next step.

    :param document: a handoff document (JSON mode).
    :returns: ``summary``, ``first_sentence`` and ``next`` (the first priority, or None).
    """
    narrative = str(document.get("narrative") or "").strip()
    first = _SENTENCE_END.split(narrative, maxsplit=1)[0][:300] if narrative else ""
    priorities = document.get("priorities") or []
    top = priorities[0] if priorities else None
    # a LangGraph saver's checkpoint says its step and source first, then any narrative its state carries
    summary = ": ".join(part for part in (_checkpoint_words(document), first) if part) or "(no narrative)"
    if top:
        summary += f" Next: {top['task']}"
    return {"summary": summary, "first_sentence": first, "next": top}


def _checkpoint_words(document: dict[str, Any]) -> str:
    """A LangGraph saver's checkpoint in words (``checkpoint step 1 (loop)``); "" for any other document.

    Reads the plain JSON metadata the saver records in ``state.data.langgraph`` (typed metadata
    is never decoded: it is then just "checkpoint").
    """
    state = document.get("state")
    data = state.get("data") if isinstance(state, dict) else None
    record = data.get("langgraph") if isinstance(data, dict) else None
    if not isinstance(record, dict) or not isinstance(record.get("format"), int):
        return ""
    metadata = record.get("metadata")
    fields = metadata.get("json") if isinstance(metadata, dict) else None
    if not isinstance(fields, dict):
        return "checkpoint"
    step, source = fields.get("step"), fields.get("source")
    words = f"checkpoint step {step}" if isinstance(step, int) and not isinstance(step, bool) else "checkpoint"
    return f"{words} ({source})" if isinstance(source, str) and _SOURCE.fullmatch(source) else words


def _rebuild(mirror: Mirror, last: Entry | None, path: Path) -> tuple[Handoff | None, str | None]:
    """A handoff made from state.json (state exact) and the journal's summary of the same generation.

    A state.json whose signature does not verify over its state is damage: nothing is rebuilt from it.
    """
    try:
        verify_mirror(mirror, path)
    except HandoffError as exc:
        return None, exc.reason
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


def acknowledge(thread: ThreadSettings, restored: Restored, *, with_code: bool) -> None:
    """Write the "resumed from generation N" journal line, and note the restore in state.json. Writes.

    Takes the writers' lock; the thread directory must exist. The code itself is never written:
    the thread's files must not give it away. With the code, the line carries its proof instead
    (:mod:`~handoff_files.thread.ackproof`).

    :param thread: the restored thread.
    :param restored: what the agent took in.
    :param with_code: whether the agent gave its briefing's acknowledgement code (checked by the caller).
    :raises HandoffWriteError: if the journal line or state.json cannot be written.
    """
    how = "acknowledged with the briefing's code" if with_code else "acknowledged without a code"
    with thread.lock.held():
        at = iso_z()  # taken under the lock, so the lines' times keep their order
        # with the code, the line proves it: a MAC under the per-user key, which a folder writer lacks
        # and, with a signing key, a signature over the same: proof another user can check
        key = thread.keys.key() if with_code and thread.keys is not None else None
        proof: dict[str, Any] = proof_fields(restored.handoff, at, key) if with_code else {}
        thread.journal.append(
            RESUMED,
            generation=restored.generation,
            seal=str(restored.handoff.seal) if restored.handoff.seal else None,
            summary=f"resumed from generation {restored.generation} ({restored.source}), {how}",
            at=at,
            source=restored.source,
            code="right" if with_code else "missing",
            **proof,
        )
        try:
            mirror = read_mirror(thread.layout.mirror)
        except HandoffError:
            return  # nothing to note it in; doctor --repair rebuilds state.json
        last_restore = {
            "at": iso_z(),
            "generation": restored.generation,
            "source": restored.source,
        }
        write_durable(
            thread.layout.mirror,
            mirror_bytes(
                **mirror.saved(),
                saves=mirror.saves,
                last_restore=last_restore,
                primary_written=mirror.primary_written,
                signature=mirror.signature,  # over what the save wrote, which this leaves as it is
            ),
        )


def refuse_acknowledgement(thread: ThreadSettings, restored: Restored, *, why: str) -> None:
    """Journal a refused acknowledgement: a wrong or missing code for *restored*'s generation. Writes.

    :param why: ``"wrong"`` or ``"missing"``.
    :raises HandoffWriteError: if the journal line cannot be written.
    """
    with thread.lock.held():
        thread.journal.append(
            "unacknowledged",
            generation=restored.generation,
            seal=str(restored.handoff.seal) if restored.handoff.seal else None,
            summary=f"a {why} acknowledgement code for generation {restored.generation}: not acknowledged",
            code=why,
        )
