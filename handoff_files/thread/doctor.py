"""The doctor: check every channel of a thread, their agreement, the chain, modes and leftovers; repair what can be."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from handoff_files.format.codec import MAX_FILE_BYTES, render
from handoff_files.format.loader import load
from handoff_files.format.model import Handoff
from handoff_files.foundation.atomic import fsync_dir, read_bytes, write_durable
from handoff_files.foundation.clock import file_stamp
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, NoHandoffError
from handoff_files.thread.journal import SAVE_EVENTS
from handoff_files.thread.layout import HISTORY_DIR, JOURNAL_NAME, MIRROR_NAME
from handoff_files.thread.mirror import mirror_bytes, read_mirror
from handoff_files.thread.scan import journal_saves
from handoff_files.thread.store import HandoffStore

__all__ = ["Finding", "examine", "failed"]

Level = Literal["ok", "warning", "error", "repaired", "unrepaired"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the doctor checked: how it stands, what it is, and what a person can do."""

    level: Level
    what: str
    advice: str = ""


def failed(findings: list[Finding]) -> bool:
    """The doctor's verdict: whether an error, or something it could not repair, remains."""
    return any(finding.level in ("error", "unrepaired") for finding in findings)


def examine(store: HandoffStore, *, repair: bool = False) -> list[Finding]:
    """Check a thread; with *repair*, rebuild what can be rebuilt (under the writers' lock).

    Repairs: a missing or damaged primary is rewritten from the newest verified generation (the
    damaged one kept in ``history/``); a missing, damaged or stale ``state.json`` is rewritten;
    a torn journal tail is cut; modes wider than 0600/0700 are narrowed; a dead writer's temp
    files are removed. Damaged journal lines in the middle, and lost generations, cannot be
    repaired: the findings say so.

    :raises NoHandoffError: if the thread directory does not exist.
    """
    if not store.path.is_dir():
        msg = "no such thread directory"
        raise NoHandoffError(store.path, msg)
    if repair:
        store.init()
        with store.locked():
            return _examine(store, repair=True)
    return _examine(store, repair=False)


def _examine(store: HandoffStore, *, repair: bool) -> list[Finding]:
    findings: list[Finding] = []
    newest = _check_history(store, findings)
    newest = _check_journal_document(store, newest, findings, repair=repair)
    try:
        ahead = read_mirror(store.mirror_path).generation
    except HandoffError:
        ahead = 0
    if newest is not None and ahead > newest[0].generation:
        # state.json holds the only exact copy of a newer generation: never repair backwards from history
        findings.append(
            Finding(
                "unrepaired" if repair else "error",
                f"generation {ahead} survives only in {MIRROR_NAME}: its handoff files are lost",
                "restore() rebuilds it (state exact); save the rebuilt handoff to seal it again",
            )
        )
        newest = None
    _check_primary(store, newest, findings, repair=repair)
    _check_mirror(store, newest, findings, repair=repair)
    _check_journal(store, newest, findings, repair=repair)
    _check_modes(store, findings, repair=repair)
    _check_temps(store, findings, repair=repair)
    return findings


def _check_journal_document(
    store: HandoffStore, newest: tuple[Handoff, Path] | None, findings: list[Finding], *, repair: bool
) -> tuple[Handoff, Path] | None:
    """A journal-first save whose files a crash lost: its journal lines are the newest copy."""
    floor = newest[0].generation if newest is not None else 0
    for entry, handoff, document, why_not in journal_saves(store, floor):
        if handoff is None or document is None:
            what = f"the journal's line of generation {entry.generation} holds no usable document: {why_not}"
            findings.append(Finding("warning", what, "that save was never acknowledged, or its document is lost"))
            continue
        what = f"generation {entry.generation} survives only in its journal line: a crash lost its files"
        # a verified document holds its line's generation
        target = store.layout.generation_file(handoff.generation, store.format)
        if not repair:
            findings.append(Finding("error", what, f"`handoff doctor --repair` writes history/{target.name} from it"))
            return newest
        write_durable(target, render(document, store.format))
        findings.append(Finding("repaired", what, f"wrote history/{target.name} from it"))
        return handoff, target
    return newest


def _check_history(store: HandoffStore, findings: list[Finding]) -> tuple[Handoff, Path] | None:
    """Verify every history generation and the parent chain; return the newest verified one and its file."""
    verified: dict[int, Handoff] = {}
    files: dict[int, Path] = {}
    listing = store.layout.generations()
    for generation, name in listing:
        try:
            handoff = load(store.layout.history_dir / name, follow_symlinks=False)
        except HandoffError as exc:
            findings.append(
                Finding("error", f"history/{name} does not verify: {exc.reason}", "it is skipped on restore")
            )
            continue
        if handoff.generation != generation:
            findings.append(Finding("error", f"history/{name} holds generation {handoff.generation}"))
            continue
        verified[generation] = handoff
        files[generation] = store.layout.history_dir / name
    for generation, handoff in sorted(verified.items()):
        before = verified.get(generation - 1)
        if before is not None and before.seal is not None and handoff.parent != str(before.seal):
            findings.append(
                Finding(
                    "error", f"chain broken: generation {generation}'s parent is not generation {generation - 1}'s seal"
                )
            )
    if verified:
        low, high = min(verified), max(verified)
        findings.append(Finding("ok", f"history/ holds {len(verified)} verified generation(s), {low} to {high}"))
    elif not listing:
        findings.append(Finding("warning", "history/ holds no generations"))
    return (verified[max(verified)], files[max(verified)]) if verified else None


def _check_primary(
    store: HandoffStore, found: tuple[Handoff, Path] | None, findings: list[Finding], *, repair: bool
) -> None:
    name = store.primary.name
    newest = found[0] if found else None
    try:
        primary = load(store.primary, follow_symlinks=False)
    except HandoffNotFoundError:
        problem = f"{name} is missing"
    except HandoffError as exc:
        problem = f"{name} does not verify: {exc.reason}"
    else:
        if newest is not None and primary.generation < newest.generation:
            problem = f"{name} holds generation {primary.generation}, behind history's {newest.generation}"
        else:
            findings.append(Finding("ok", f"{name} verifies: generation {primary.generation}"))
            return
    if found is None or newest is None:
        findings.append(Finding("unrepaired" if repair else "error", problem, "nothing verified to rewrite it from"))
        return
    source = found[1]
    if source.suffix != store.primary.suffix:
        findings.append(Finding("unrepaired" if repair else "error", problem, f"the newest copy is {source.name}"))
        return
    if not repair:
        findings.append(Finding("error", problem, f"`handoff doctor --repair` rewrites it from {source.name}"))
        return
    if store.primary.exists():
        kept = store.layout.kept_copy("displaced-doctor", file_stamp(), f"-{name}")
        os.replace(store.primary, kept)
        fsync_dir(store.layout.history_dir)
        problem += f" (kept as {HISTORY_DIR}/{kept.name})"
    data, _ = read_bytes(source, MAX_FILE_BYTES, follow_symlinks=False)
    write_durable(store.primary, data)
    store.journal.append(
        "repaired", generation=newest.generation, seal=str(newest.seal), summary=f"rewrote {name} from {source.name}"
    )
    findings.append(Finding("repaired", problem, f"rewrote it from history/{source.name}"))


def _check_mirror(
    store: HandoffStore, found: tuple[Handoff, Path] | None, findings: list[Finding], *, repair: bool
) -> None:
    newest = found[0] if found else None
    try:
        mirror = read_mirror(store.mirror_path)
    except HandoffNotFoundError:
        problem = f"{MIRROR_NAME} is missing"
    except HandoffError as exc:
        problem = f"{MIRROR_NAME}: {exc.reason}"
    else:
        if newest is None or (mirror.generation == newest.generation and mirror.seal == str(newest.seal)):
            findings.append(Finding("ok", f"{MIRROR_NAME} mirrors generation {mirror.generation}"))
            return
        problem = f"{MIRROR_NAME} mirrors generation {mirror.generation}, not the newest ({newest.generation})"
    if newest is None or newest.seal is None:
        findings.append(Finding("error" if not repair else "unrepaired", problem, "no sealed generation to mirror"))
        return
    if not repair:
        findings.append(Finding("warning", problem, "`handoff doctor --repair` rewrites it"))
        return
    write_durable(
        store.mirror_path,
        mirror_bytes(
            generation=newest.generation,
            seal=str(newest.seal),
            agent_id=newest.agent_id,
            thread_id=newest.thread_id,
            created_at=newest.created_at.isoformat().replace("+00:00", "Z"),
            state=newest.state.model_dump(mode="json"),
            saves=newest.generation,
            last_restore=None,
        ),
    )
    findings.append(Finding("repaired", problem, f"rewrote it from generation {newest.generation}"))


def _check_journal(
    store: HandoffStore, found: tuple[Handoff, Path] | None, findings: list[Finding], *, repair: bool
) -> None:
    newest = found[0] if found else None
    journal = store.journal
    entries, problems = journal.check()
    if repair and any(problem.kind == "torn" for problem in problems):
        journal.cut_torn_tails()
    for problem in problems:
        if problem.kind == "torn" and repair:
            findings.append(Finding("repaired", problem.what, "cut the torn line"))
        elif problem.kind == "torn":
            findings.append(
                Finding("warning", problem.what, "`handoff doctor --repair` cuts it (so does the next save)")
            )
        else:
            findings.append(
                Finding("unrepaired" if repair else "error", problem.what, "the line is lost; the rest reads")
            )
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
