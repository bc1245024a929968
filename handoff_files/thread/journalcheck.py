"""The doctor's journal check: every line read, each journal-first document held to its seal, damaged ones set aside."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from handoff_files.format.loader import load
from handoff_files.foundation.clock import file_stamp
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, HandoffWriteError
from handoff_files.thread.findings import Finding, Level, Repairing, not_written
from handoff_files.thread.journal import DOCUMENT, MAX_JOURNAL_BYTES, Entry, JournalProblem
from handoff_files.thread.journal import _parse_line as parse_line
from handoff_files.thread.layout import HISTORY_DIR
from handoff_files.thread.mirror import primary_stamp
from handoff_files.thread.repair import set_aside_lines
from handoff_files.thread.scan import verify_document
from handoff_files.thread.signatures import verified
from handoff_files.thread.store import HandoffStore
from handoff_files.thread.tail import read_whole

__all__ = ["JournalCheck", "check_journal", "note"]


@dataclass(frozen=True, slots=True)
class JournalCheck:
    """What the journal check found: the lines that read, the findings, and the generations whose document failed."""

    entries: list[Entry]
    findings: list[Finding]
    unsealed: frozenset[int]  # generations whose journal-first document line does not verify (a finding says so)


@dataclass(frozen=True, slots=True)
class _Unsealed:
    """A journal-first document line that does not verify against its seal, and whether its generation is lost."""

    problem: JournalProblem
    generation: int
    lost: bool


def note(store: HandoffStore, generation: int | None, seal: str | None, summary: str) -> str:
    """Journal a "repaired" line; "" if written, else what to add to the repair's advice (the repair stands)."""
    try:
        store.journal.append("repaired", generation=generation, seal=seal, summary=summary)
    except HandoffError as exc:
        return f" (not noted in the journal: {exc})"
    return ""


def check_journal(store: HandoffStore, repairing: Repairing) -> JournalCheck:
    """Every journal line; when repairing, a torn tail cut and damaged lines set aside (kept, never deleted).

    A damaged line is one whose check does not match, or a journal-first save's document line
    whose document does not verify against its seal (the line's check does not cover the
    document: its seal does). Such a document is said to be lost or not: whether another verified
    copy of its generation (``history/``, the primary) is left, or it was pruned on purpose.

    :raises HandoffError: if a journal file cannot be read.
    """
    entries, problems = store.journal.check()
    findings = _cut_torn(store, [problem for problem in problems if problem.kind == "torn"], repairing)
    unsealed = _unsealed_documents(store)
    lost = {(bad.problem.path, bad.problem.line) for bad in unsealed if bad.lost}
    damaged: dict[Path, list[JournalProblem]] = {}
    for problem in [*problems, *(bad.problem for bad in unsealed)]:
        if problem.kind != "torn":
            damaged.setdefault(problem.path, []).append(problem)
    set_aside: list[tuple[Path, Path, int]] = []
    for path, lines in damaged.items():
        aside = f"{path.name.removesuffix('.jsonl')}.damaged-<time>.jsonl"
        if not repairing.writes:
            advice = f"`handoff doctor --repair` moves it to {aside}, which keeps it"
            findings += [repairing.pending("error", line.what, advice) for line in lines]
            continue
        try:
            kept = set_aside_lines(path, [line.line for line in lines if line.line is not None], file_stamp())
        except HandoffWriteError as exc:
            findings += [not_written(line.what, f"move it to {aside}", exc) for line in lines]
            continue
        except HandoffError as exc:
            advice = f"could not set it aside: {exc}"
            findings += [Finding("unrepaired", line.what, advice) for line in lines]
            continue
        for line in lines:
            level: Level = "unrepaired" if (path, line.line) in lost else "repaired"
            gone = "; no verified copy of its generation is left to restore it from" if level == "unrepaired" else ""
            findings.append(Finding(level, line.what, f"moved it to {kept.name}, which keeps it{gone}"))
        set_aside.append((path, kept, len(lines)))
    # appended only now: an append may rotate the journal, and the lines above are counted in its files as they were
    for path, kept, count in set_aside:
        unnoted = note(store, None, None, f"moved {count} damaged line(s) of {path.name} to {kept.name}")
        if unnoted:
            findings.append(Finding("warning", f"moved damaged lines of {path.name} to {kept.name}", unnoted.strip()))
    return JournalCheck(entries, findings, frozenset(bad.generation for bad in unsealed))


def _cut_torn(store: HandoffStore, torn: list[JournalProblem], repairing: Repairing) -> list[Finding]:
    """Cut the torn tails when repairing; say what was, or would be, done."""
    if not (repairing.writes and torn):
        advice = "`handoff doctor --repair` cuts it (so does the next save)"
        return [repairing.pending("warning", problem.what, advice) for problem in torn]
    try:
        store.journal.cut_torn_tails()
    except HandoffError as exc:
        return [not_written(problem.what, "cut it", exc) for problem in torn]
    return [Finding("repaired", problem.what, "cut the torn line") for problem in torn]


def _unsealed_documents(store: HandoffStore) -> list[_Unsealed]:
    """Each journal-first save's document line (both journal files) whose document does not verify against its seal.

    A document line is paired with the save line after it, as restore pairs them: the same
    generation and seal. It is verified as copy-back and restore verify it (decoded as a copy only
    the store writes, holding its save line's generation and seal). The doctor reads every line
    anyway; restore and save never pay for this.

    :raises HandoffError: if a journal file cannot be read.
    """
    journal = store.journal
    found: list[_Unsealed] = []
    for path in (journal.previous, journal.path):
        try:
            data = read_whole(path, max_bytes=MAX_JOURNAL_BYTES)
        except HandoffNotFoundError:
            continue
        lines = data.split(b"\n")
        lines.pop()  # what follows the last newline: a torn line (the check above tells it), or nothing
        held: tuple[int, Entry] | None = None
        for number, raw in enumerate(lines, 1):
            entry = parse_line(raw)
            if entry is None:
                continue  # a damaged line: the check above reports it
            if entry.event == "document":
                held = (number, entry)
                continue
            if not entry.journal_first:
                continue
            if held is not None and entry.generation is not None and _pairs(held[1], entry):
                document = held[1].extra.get(DOCUMENT)
                handoff, why_not = verify_document(path, entry, document if isinstance(document, dict) else None)
                if handoff is None:
                    found.append(_unsealed(store, path, held[0], entry, why_not or "it does not verify"))
            held = None
    return found


def _pairs(document: Entry, save: Entry) -> bool:
    return (document.generation, document.seal) == (save.generation, save.seal)


def _unsealed(store: HandoffStore, path: Path, number: int, save: Entry, why_not: str) -> _Unsealed:
    """The problem of one document line that does not verify, saying whether its generation is lost, kept or pruned."""
    generation = save.generation or 0
    what = f"{path.name} line {number}: the document of generation {generation} does not verify: {why_not}"
    listed = store.layout.generations()
    kept = [number for number, _ in listed]
    holder = _held_elsewhere(store, listed, generation, save.seal)
    if holder is not None:
        what += f"; not lost: {holder} holds generation {generation}, verified"
    elif kept and generation < min(kept):
        # copy-back's rule too: what is older than every generation history/ keeps was pruned on purpose
        what += f"; not lost: it was pruned on purpose (history/ keeps generations {min(kept)} to {max(kept)})"
    else:
        what += f"; no other verified copy holds generation {generation}: it is lost"
        return _Unsealed(JournalProblem("damaged", path, number, what), generation, lost=True)
    return _Unsealed(JournalProblem("damaged", path, number, what), generation, lost=False)


def _held_elsewhere(
    store: HandoffStore, listed: list[tuple[int, str]], generation: int, seal: str | None
) -> str | None:
    """The name of a verified file holding *generation* sealed *seal* (``history/``, then the primary), or None.

    :param listed: the generations ``history/`` lists, with their file names.
    """
    layout = store.layout
    candidates: list[tuple[Path, str, Callable[[], tuple[int, int] | None] | None]] = [
        (layout.history_dir / name, f"{HISTORY_DIR}/{name}", None) for number, name in listed if number == generation
    ]
    candidates.append((store.primary, store.primary.name, primary_stamp(layout.mirror)))
    for path, label, written in candidates:
        try:
            handoff = verified(load(path, follow_symlinks=False, written=written), path)
        except HandoffError:
            continue
        if handoff.generation == generation and str(handoff.seal) == seal:
            return label
    return None
