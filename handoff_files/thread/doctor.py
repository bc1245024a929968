"""The doctor: check every channel of a thread, their agreement, the chain, modes and leftovers; repair what can be."""

from __future__ import annotations

import dataclasses
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from handoff_files.format.loader import load
from handoff_files.format.model import Handoff
from handoff_files.foundation.atomic import lexists
from handoff_files.foundation.clock import file_stamp
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, NoHandoffError
from handoff_files.thread.journal import SAVE_EVENTS, Entry, JournalProblem
from handoff_files.thread.layout import HISTORY_DIR, JOURNAL_NAME, MIRROR_NAME
from handoff_files.thread.locate import thread_of
from handoff_files.thread.mirror import primary_stamp, read_mirror
from handoff_files.thread.notes import ever_saved
from handoff_files.thread.repair import (
    Copy,
    format_of,
    history_copies,
    journal_copies,
    mirror_of,
    rewrite,
    saved_bytes,
    set_aside_lines,
)
from handoff_files.thread.store import HandoffStore

__all__ = ["Finding", "examine", "failed"]

Level = Literal["ok", "warning", "error", "repaired", "unrepaired"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the doctor checked: how it stands, what it is, and what a person can do."""

    level: Level
    what: str
    advice: str = ""
    kind: str = ""  # for a program: fresh, journal, history, primary, mirror, last-save, modes, temps


def _tag(findings: list[Finding], since: int, kind: str) -> None:
    """Give the findings added since index *since* their *kind*."""
    findings[since:] = [dataclasses.replace(f, kind=f.kind or kind) for f in findings[since:]]


def failed(findings: list[Finding]) -> bool:
    """The doctor's verdict: whether an error, or something it could not repair, remains."""
    return any(finding.level in ("error", "unrepaired") for finding in findings)


def examine(thread: HandoffStore | str | os.PathLike[str], *, repair: bool = False) -> list[Finding]:
    """Check a thread; with *repair*, rebuild what can be rebuilt (under the writers' lock).

    Every copy of each generation is checked: its file in ``history/``, the primary, a
    journal-first save's line. Repairs: a ``history/`` file that does not verify, or is missing
    while newer than every file there, is rewritten from a verified copy of its generation (the
    primary, or a journal-first line), byte for byte as its save wrote it; a missing, damaged or
    lagging primary is rewritten from the newest verified copy; the files replaced are kept in
    ``history/``. A missing, damaged or stale ``state.json`` is rewritten; a torn journal tail is
    cut; damaged journal lines are moved to ``journal.damaged-<stamp>.jsonl`` (or
    ``journal.1.damaged-…``) beside the journal, kept, never deleted; modes wider than 0600/0700
    are narrowed; a dead writer's temp files are removed. Every rewrite is atomic and durable, so
    a repair that fails damages nothing: it is reported as ``"unrepaired"``. A generation that no
    verified copy holds cannot be repaired: the findings say so. A thread nothing was ever saved
    in checks clean.

    :param thread: the thread's store, or a path: its directory or its primary file.
    :raises NoHandoffError: if the thread directory does not exist.
    :raises HandoffError: if *thread* is a file but not a thread's primary.
    """
    store = thread if isinstance(thread, HandoffStore) else _store_of(Path(thread))
    if not store.path.is_dir():
        msg = "no such thread directory"
        raise NoHandoffError(store.path, msg)
    if repair:
        store.init()
        with store.locked():
            return _examine(store, repair=True)
    return _examine(store, repair=False)


def _store_of(path: Path) -> HandoffStore:
    """The store for a path a person gave: a thread directory, or its primary file (as other commands take)."""
    # a path that does not exist is taken as a thread directory, so examine() names it as one
    return thread_of(path) if lexists(path) else HandoffStore(path)


def _examine(store: HandoffStore, *, repair: bool) -> list[Finding]:
    findings: list[Finding] = []
    if ever_saved(store.layout):
        # the journal's lines first: they are set aside by line number, before the doctor appends any
        entries, journal_findings = _check_journal_lines(store, repair=repair)
        newest = _check_generations(store, findings, repair=repair)
        findings += [dataclasses.replace(f, kind="journal") for f in journal_findings]
        start = len(findings)
        _check_last_save(entries, newest, findings)
        _tag(findings, start, "last-save")
    else:
        findings.append(Finding("ok", "no generations yet: nothing has been saved in this thread", kind="fresh"))
    start = len(findings)
    _check_modes(store, findings, repair=repair)
    _tag(findings, start, "modes")
    start = len(findings)
    _check_temps(store, findings, repair=repair)
    _tag(findings, start, "temps")
    return findings


def _check_generations(store: HandoffStore, findings: list[Finding], *, repair: bool) -> Copy | None:
    """Check every copy of every generation, rewrite copies from verified ones; return the newest verified."""
    verified, damaged = history_copies(store.layout)
    primary, primary_problem = _read_primary(store)
    sealed = None if primary is None or primary.seal is None else Copy(primary, store.primary, store.primary.name)
    floor = max([*verified, sealed.generation if sealed else 0])
    # a verified copy of each generation, from history/ first, then the primary, then the journal
    copies, unusable = journal_copies(store, floor, damaged)
    advice = "that save was never acknowledged, or its document is lost"
    findings += [Finding("warning", what, advice, kind="journal") for what in unusable]
    copies |= {sealed.generation: sealed} if sealed else {}
    start = len(findings)
    _repair_history(store, verified, damaged, copies | verified, findings, repair=repair)
    _report_history(verified, listed=bool(verified or damaged), findings=findings)
    _tag(findings, start, "history")
    copies |= verified
    newest = copies[max(copies)] if copies else None
    try:
        ahead = read_mirror(store.mirror_path).generation
    except HandoffError:
        ahead = 0
    if newest is not None and ahead > newest.generation:
        # state.json holds the only exact copy of a newer generation: never repair backwards
        findings.append(
            Finding(
                "unrepaired" if repair else "error",
                f"generation {ahead} survives only in {MIRROR_NAME}: its handoff files are lost",
                "restore() rebuilds it (state exact); save the rebuilt handoff to seal it again",
                kind="mirror",
            )
        )
        newest = None
    start = len(findings)
    _check_primary(store, primary, primary_problem, newest, findings, repair=repair)
    _tag(findings, start, "primary")
    start = len(findings)
    _check_mirror(store, newest, findings, repair=repair)
    _tag(findings, start, "mirror")
    return newest


def _read_primary(store: HandoffStore) -> tuple[Handoff | None, str]:
    """The primary if it loads, else what is wrong with it."""
    name = store.primary.name
    try:
        return load(store.primary, follow_symlinks=False, written=primary_stamp(store.layout.mirror)), ""
    except HandoffNotFoundError:
        return None, f"{name} is missing"
    except HandoffError as exc:
        return None, f"{name} does not verify: {exc.reason}"


def _repair_history(
    store: HandoffStore,
    verified: dict[int, Copy],
    damaged: dict[int, tuple[Path, str]],
    copies: dict[int, Copy],
    findings: list[Finding],
    *,
    repair: bool,
) -> None:
    """Rewrite each damaged ``history/`` file, and each missing one newer than all it lists, from a verified copy."""
    for generation, (path, problem) in sorted(damaged.items()):
        source = copies.get(generation)
        if source is None:
            advice = f"no verified copy of generation {generation} is left to rewrite it from; restore skips it"
            findings.append(Finding("unrepaired" if repair else "error", problem, advice))
            continue
        _rewrite_history(
            store, path, source, problem=problem, findings=findings, verified=verified, keep=True, repair=repair
        )
    listed = max([*verified, *damaged], default=0)
    for generation in sorted(g for g in copies if g > listed):
        source = copies[generation]
        path = store.layout.generation_file(generation, store.format)
        if source.document is not None:
            problem = f"generation {generation} survives only in its journal line: a crash lost its files"
        else:
            problem = f"{HISTORY_DIR}/{path.name} is missing: only {source.label} holds generation {generation}"
        _rewrite_history(
            store, path, source, problem=problem, findings=findings, verified=verified, keep=False, repair=repair
        )


def _rewrite_history(
    store: HandoffStore,
    path: Path,
    source: Copy,
    *,
    problem: str,
    findings: list[Finding],
    verified: dict[int, Copy],
    keep: bool,
    repair: bool,
) -> None:
    """Rewrite one ``history/`` file from *source* (keeping the damaged one), and note it in *verified*."""
    name = f"{HISTORY_DIR}/{path.name}"
    if not repair:
        findings.append(Finding("error", problem, f"`handoff doctor --repair` writes it from {source.label}"))
        return
    keep_as = store.layout.kept_copy("damaged", file_stamp(), f"-{path.name}") if keep else None
    try:
        kept = rewrite(path, saved_bytes(source, format_of(path), path), keep_as=keep_as)
    except HandoffError as exc:
        findings.append(Finding("unrepaired", problem, f"could not rewrite it: {exc}"))
        return
    seal = str(source.handoff.seal)
    store.journal.append(
        "repaired", generation=source.generation, seal=seal, summary=f"rewrote {name} from {source.label}"
    )
    advice = f"wrote {name} from {source.label}"
    if kept and keep_as is not None:
        advice += f" (the damaged file kept as {HISTORY_DIR}/{keep_as.name})"
    findings.append(Finding("repaired", problem, advice))
    verified[source.generation] = Copy(source.handoff, path, name)


def _report_history(verified: dict[int, Copy], *, listed: bool, findings: list[Finding]) -> None:
    """The parent chain through the verified generations, and how many ``history/`` holds."""
    for generation, copy in sorted(verified.items()):
        before = verified.get(generation - 1)
        if before is not None and before.handoff.seal is not None and copy.handoff.parent != str(before.handoff.seal):
            what = f"chain broken: generation {generation}'s parent is not generation {generation - 1}'s seal"
            findings.append(Finding("error", what))
    if verified:
        low, high = min(verified), max(verified)
        findings.append(Finding("ok", f"history/ holds {len(verified)} verified generation(s), {low} to {high}"))
    elif not listed:
        findings.append(Finding("warning", "history/ holds no generations"))


def _check_primary(
    store: HandoffStore,
    primary: Handoff | None,
    problem: str,
    newest: Copy | None,
    findings: list[Finding],
    *,
    repair: bool,
) -> None:
    name = store.primary.name
    if primary is not None:
        if newest is None or primary.generation >= newest.generation:
            findings.append(Finding("ok", f"{name} verifies: generation {primary.generation}"))
            return
        problem = f"{name} holds generation {primary.generation}, behind the newest ({newest.generation})"
    failing: Level = "unrepaired" if repair else "error"
    if newest is None:
        findings.append(Finding(failing, problem, "nothing verified to rewrite it from"))
        return
    if newest.document is None and newest.path.suffix != store.primary.suffix:
        findings.append(Finding(failing, problem, f"the newest copy is {newest.label}"))
        return
    if not repair:
        findings.append(Finding("error", problem, f"`handoff doctor --repair` rewrites it from {newest.label}"))
        return
    keep_as = store.layout.kept_copy("displaced-doctor", file_stamp(), f"-{name}")
    try:
        kept = rewrite(store.primary, saved_bytes(newest, store.format, store.primary), keep_as=keep_as)
    except HandoffError as exc:
        findings.append(Finding("unrepaired", problem, f"could not rewrite it: {exc}"))
        return
    if kept:
        problem += f" (kept as {HISTORY_DIR}/{keep_as.name})"
    seal = str(newest.handoff.seal)
    store.journal.append(
        "repaired", generation=newest.generation, seal=seal, summary=f"rewrote {name} from {newest.label}"
    )
    findings.append(Finding("repaired", problem, f"rewrote it from {newest.label}"))


def _check_mirror(store: HandoffStore, newest: Copy | None, findings: list[Finding], *, repair: bool) -> None:
    try:
        mirror = read_mirror(store.mirror_path)
    except HandoffNotFoundError:
        problem = f"{MIRROR_NAME} is missing"
    except HandoffError as exc:
        problem = f"{MIRROR_NAME}: {exc.reason}"
    else:
        if newest is None or (mirror.generation, mirror.seal) == (newest.generation, str(newest.handoff.seal)):
            findings.append(Finding("ok", f"{MIRROR_NAME} mirrors generation {mirror.generation}"))
            return
        problem = f"{MIRROR_NAME} mirrors generation {mirror.generation}, not the newest ({newest.generation})"
    if newest is None:
        findings.append(Finding("unrepaired" if repair else "error", problem, "no sealed generation to mirror"))
        return
    if not repair:
        findings.append(Finding("warning", problem, "`handoff doctor --repair` rewrites it"))
        return
    try:
        rewrite(store.mirror_path, mirror_of(newest, store.primary), keep_as=None)
    except HandoffError as exc:
        findings.append(Finding("unrepaired", problem, f"could not rewrite it: {exc}"))
        return
    findings.append(Finding("repaired", problem, f"rewrote it from generation {newest.generation}"))


def _check_journal_lines(store: HandoffStore, *, repair: bool) -> tuple[list[Entry], list[Finding]]:
    """Every journal line; with *repair*, a torn tail cut and damaged lines set aside (kept, never deleted)."""
    journal = store.journal
    entries, problems = journal.check()
    findings: list[Finding] = []
    if repair and any(problem.kind == "torn" for problem in problems):
        journal.cut_torn_tails()
    damaged: dict[Path, list[JournalProblem]] = {}
    for problem in problems:
        if problem.kind == "torn":
            advice = "cut the torn line" if repair else "`handoff doctor --repair` cuts it (so does the next save)"
            findings.append(Finding("repaired" if repair else "warning", problem.what, advice))
        else:
            damaged.setdefault(problem.path, []).append(problem)
    set_aside: list[tuple[Path, Path, int]] = []
    for path, lines in damaged.items():
        aside = f"{path.name.removesuffix('.jsonl')}.damaged-<time>.jsonl"
        if not repair:
            advice = f"`handoff doctor --repair` moves it to {aside}, which keeps it"
            findings += [Finding("error", line.what, advice) for line in lines]
            continue
        try:
            kept = set_aside_lines(path, [line.line for line in lines if line.line is not None], file_stamp())
        except HandoffError as exc:
            advice = f"could not set it aside: {exc}"
            findings += [Finding("unrepaired", line.what, advice) for line in lines]
            continue
        findings += [Finding("repaired", line.what, f"moved it to {kept.name}, which keeps it") for line in lines]
        set_aside.append((path, kept, len(lines)))
    # appended only now: an append may rotate the journal, and the lines above are counted in its files as they were
    for path, kept, count in set_aside:
        summary = f"moved {count} damaged line(s) of {path.name} to {kept.name}"
        journal.append("repaired", generation=None, seal=None, summary=summary)
    return entries, findings


def _check_last_save(entries: list[Entry], newest: Copy | None, findings: list[Finding]) -> None:
    saves = [e for e in entries if e.event in SAVE_EVENTS]
    if not saves:
        findings.append(Finding("warning", f"{JOURNAL_NAME} records no save"))
        return
    last = saves[-1]
    if newest is not None and last.generation != newest.generation:
        findings.append(
            Finding("warning", f"the journal's last save is generation {last.generation}, not {newest.generation}")
        )
    else:
        findings.append(
            Finding("ok", f"{JOURNAL_NAME}: {len(entries)} line(s), last save generation {last.generation}")
        )


def _check_modes(store: HandoffStore, findings: list[Finding], *, repair: bool) -> None:
    wide = []
    for directory, _, files in os.walk(store.path):
        for path, want in [(Path(directory), 0o700), *((Path(directory) / f, 0o600) for f in files)]:
            try:
                st = path.lstat()
            except FileNotFoundError:
                continue  # a writer's temp file or a pruned generation, gone since the listing
            if stat.S_ISLNK(st.st_mode):
                findings.append(Finding("warning", f"{path} is a symbolic link", "the store never follows it"))
                continue
            mode = stat.S_IMODE(st.st_mode)
            if mode & ~want:
                wide.append((path, mode, want))
    for path, mode, want in wide:
        if repair:
            path.chmod(mode & want)
            findings.append(Finding("repaired", f"{path} was mode {mode:o}", f"narrowed to {mode & want:o}"))
        else:
            findings.append(Finding("warning", f"{path} is mode {mode:o}, wider than {want:o}", "--repair narrows it"))
    if not wide:
        findings.append(Finding("ok", "files are 0600 and directories 0700 (or narrower)"))


def _check_temps(store: HandoffStore, findings: list[Finding], *, repair: bool) -> None:
    temps = store.layout.stray_temps()
    if not temps:
        return
    names = ", ".join(p.name for p in temps)
    if repair:  # under the lock: no live writer owns them
        store.layout.remove_stray_temps()
        findings.append(Finding("repaired", f"temp files a crashed writer left: {names}", "removed them"))
    else:
        findings.append(Finding("warning", f"temp files a crashed writer left: {names}", "the next open removes them"))
