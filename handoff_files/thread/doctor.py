"""The doctor: check every channel of a thread, their agreement, the chain, modes and leftovers; repair what can be."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path

from handoff_files.format.loader import load
from handoff_files.format.model import Handoff
from handoff_files.foundation.atomic import lexists
from handoff_files.foundation.clock import file_stamp
from handoff_files.foundation.commandline import suggest
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, HandoffWriteError, NoHandoffError
from handoff_files.thread.findings import Finding, Level, Repairing, failed, not_written
from handoff_files.thread.journal import SAVE_EVENTS, Entry
from handoff_files.thread.journalcheck import check_journal, note
from handoff_files.thread.kind import LANGGRAPH, SAVER_LOST, sealing_advice, thread_kind
from handoff_files.thread.layout import HISTORY_DIR, JOURNAL_NAME, MIRROR_NAME
from handoff_files.thread.locate import thread_of
from handoff_files.thread.mirror import primary_stamp, read_mirror, verify_mirror
from handoff_files.thread.notes import ever_saved
from handoff_files.thread.pins import pin_of
from handoff_files.thread.repair import (
    Copy,
    format_of,
    history_copies,
    journal_copies,
    mirror_of,
    rewrite,
    saved_bytes,
    store_key,
)
from handoff_files.thread.signatures import SignerCheck, untrusted, verified
from handoff_files.thread.store import HandoffStore
from handoff_files.thread.upkeep import check_modes, check_temps

# Finding and failed are re-exported: callers took them from the doctor
__all__ = ["Finding", "examine", "failed"]


def _tag(findings: list[Finding], since: int, kind: str) -> None:
    """Give the findings added since index *since* their *kind*."""
    findings[since:] = [dataclasses.replace(f, kind=f.kind or kind) for f in findings[since:]]


def examine(thread: HandoffStore | str | os.PathLike[str], *, repair: bool = False) -> list[Finding]:
    """Check a thread; with *repair*, rebuild what can be rebuilt (under the writers' lock).

    Every copy of each generation is checked: its file in ``history/``, the primary, a
    journal-first save's line. Repairs: a ``history/`` file that does not verify, or is missing
    while newer than every file there, is rewritten from a verified copy of its generation (the
    primary, or a journal-first line), byte for byte as its save wrote it; a missing, damaged or
    lagging primary is rewritten from the newest verified copy; the files replaced are kept in
    ``history/``. A missing, damaged or stale ``state.json`` is rewritten; a torn journal tail is
    cut; damaged journal lines are moved to ``journal.damaged-<stamp>.jsonl`` (or
    ``journal.1.damaged-…``) beside the journal, kept, never deleted; the thread's own files
    wider than 0600 (``history/``: 0700) are narrowed; a dead writer's temp files are removed.
    Nothing else is changed: the thread's folder itself and every other entry in it (a project's
    files, a person's copy in ``history/``) are reported, never touched.

    Every rewrite is atomic and durable, so a repair the disk refuses (a read-only folder, EIO)
    changes nothing and is reported as ``"unwritten"``, with the reason; when the writers' lock
    itself cannot be opened, every check runs read-only and each due repair is ``"unwritten"``.
    A generation that no verified copy holds cannot be repaired: it is ``"unrepaired"`` (lost).
    A thread nothing was ever saved in checks clean.

    A thread on object storage (a URL, or its store) is :func:`~handoff_files.thread.bucketdoctor.examine_bucket`'s.

    :param thread: the thread's store, or a path: its directory or its primary file.
    :raises NoHandoffError: if the thread directory does not exist.
    :raises HandoffError: if *thread* is a file but not a thread's primary.
    :raises HandoffLockedError: with *repair*, if another writer holds the lock past the timeout.
    """
    if (thread.where if isinstance(thread, HandoffStore) else str(thread)).startswith("s3://"):
        from handoff_files.thread.bucketdoctor import examine_bucket  # noqa: PLC0415 -- a bucket's only

        return examine_bucket(thread.where if isinstance(thread, HandoffStore) else str(thread), repair=repair)
    store = thread if isinstance(thread, HandoffStore) else _store_of(Path(thread))
    if not store.path.is_dir():
        msg = "no such thread directory"
        raise NoHandoffError(store.path, msg)
    if not repair:
        return _examine(store, Repairing(asked=False))
    with contextlib.ExitStack() as held:
        try:
            store.init()
            held.enter_context(store.locked())
        except HandoffWriteError as exc:
            # a read-only folder: nothing can be repaired, but everything can still be checked
            blocked = Repairing(asked=True, blocked=exc.reason)
            what = f"--repair could not write in {store.path}: {exc.reason}"
            advice = "nothing was changed; every check below ran read-only: make the thread writable, then repair"
            return [Finding("unwritten", what, advice, kind="lock"), *_examine(store, blocked)]
        return _examine(store, Repairing(asked=True))


def _store_of(path: Path) -> HandoffStore:
    """The store for a path a person gave: a thread directory, or its primary file (as other commands take)."""
    # a path that does not exist is taken as a thread directory, so examine() names it as one
    return thread_of(path) if lexists(path) else HandoffStore(path)


def _examine(store: HandoffStore, repairing: Repairing) -> list[Finding]:
    findings: list[Finding] = []
    if ever_saved(store.layout):
        # the journal's lines first: they are set aside by line number, before the doctor appends any
        journal = check_journal(store, repairing)
        newest = _check_generations(store, findings, repairing, unsealed=journal.unsealed)
        findings += [dataclasses.replace(f, kind="journal") for f in journal.findings]
        start = len(findings)
        _check_last_save(journal.entries, newest, findings)
        _tag(findings, start, "last-save")
    elif hint := store.layout.not_a_thread():
        findings.append(Finding("error", hint, kind="fresh"))  # a root of threads named by mistake: never "ok"
    else:
        findings.append(Finding("ok", "no generations yet: nothing has been saved in this thread", kind="fresh"))
    start = len(findings)
    check_modes(store.layout, findings, repairing)
    _tag(findings, start, "modes")
    start = len(findings)
    check_temps(store.layout, findings, repairing)
    _tag(findings, start, "temps")
    return findings


def _check_generations(
    store: HandoffStore, findings: list[Finding], repairing: Repairing, *, unsealed: frozenset[int]
) -> Copy | None:
    """Check every copy of every generation, rewrite copies from verified ones; return the newest verified.

    :param unsealed: the generations whose journal-first document the journal check reported (not said twice).
    """
    verified, damaged = history_copies(store.layout)
    primary, primary_problem = _read_primary(store)
    untrusted, pinned = _untrusted_under_pin(store)
    for generation, copy in list(verified.items()):
        if (why := untrusted(copy.handoff)) is not None:  # a pinned folder: an untrusted copy is no copy
            damaged[generation] = (copy.path, f"{copy.label} {why}")
            del verified[generation]
    if primary is not None and (why := untrusted(primary)) is not None:
        primary, primary_problem = None, f"{store.primary.name} {why}"
    sealed = None if primary is None or primary.seal is None else Copy(primary, store.primary, store.primary.name)
    floor = max([*verified, sealed.generation if sealed else 0])
    # a verified copy of each generation, from history/ first, then the primary, then the journal
    copies, unusable = journal_copies(store, floor, damaged)
    copies = {g: copy for g, copy in copies.items() if untrusted(copy.handoff) is None}
    advice = "that save was never acknowledged, or its document is lost"
    findings += [Finding("warning", what, advice, kind="journal") for g, what in unusable if g not in unsealed]
    copies |= {sealed.generation: sealed} if sealed else {}
    start = len(findings)
    _repair_history(store, verified, damaged, copies | verified, findings, repairing=repairing)
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
        rebuild = f"{suggest('handoff', 'seal', store.path)} seals the rebuilt handoff (state exact) as generation"
        advice = SAVER_LOST if thread_kind(store.layout) == LANGGRAPH else f"{rebuild} {ahead + 1}"
        what = f"generation {ahead} survives only in {MIRROR_NAME}: its handoff files are lost"
        if pinned and not _mirror_trusted(store):  # never rebuild an untrusted state.json into a generation
            what = f"{MIRROR_NAME} mirrors generation {ahead}, which no trusted key signed (pinned since {pinned})"
            advice = (
                f"a restore returns generation {newest.generation}; save a signed generation on top, or "
                f"{suggest('handoff', 'trust', store.path, '--reset')} if generation {ahead} is yours"
            )
        findings.append(Finding(repairing.unrepairable(), what, advice, kind="mirror"))
        newest = None
    start = len(findings)
    _check_primary(store, primary, primary_problem, newest, findings, repairing=repairing)
    _tag(findings, start, "primary")
    if ahead and newest is None and copies:
        return None  # state.json was told above (it holds the one trace of a lost generation): never also "ok"
    start = len(findings)
    _check_mirror(store, newest, findings, repairing)
    _tag(findings, start, "mirror")
    return newest


def _untrusted_under_pin(store: HandoffStore) -> tuple[Callable[[Handoff], str | None], str | None]:
    """On a folder pinned to signed generations, why a generation is not trusted (None: it is), and since
    when it is pinned; elsewhere, never (and None)."""
    try:
        held = pin_of(store.path)
    except HandoffError:
        held = None
    if held is None:
        return (lambda _: None), None
    checker = SignerCheck()  # the user's allowed_signers, as a restore of the thread named by its path reads it

    def why(handoff: Handoff) -> str | None:
        report = checker.report(handoff, store.path)
        if report is not None and report.trusted:
            return None
        said = untrusted(report)
        return f"is not trusted ({said}), and the folder is pinned to signed generations since {held.pinned_at}"

    return why, held.pinned_at


def _mirror_trusted(store: HandoffStore) -> bool:
    """Whether ``state.json`` carries a signature that verifies over its state and that ``allowed_signers`` trusts."""
    try:
        mirror = read_mirror(store.mirror_path)
        signature = verify_mirror(mirror, store.mirror_path)
        at = dt.datetime.fromisoformat(mirror.created_at)
    except (HandoffError, ValueError):
        return False
    return signature is not None and SignerCheck().signer(signature, at, store.mirror_path).trusted


def _read_primary(store: HandoffStore) -> tuple[Handoff | None, str]:
    """The primary if it loads, else what is wrong with it."""
    name = store.primary.name
    try:
        written, sealing = primary_stamp(store.layout.mirror), sealing_advice(store.layout)
        handoff = load(store.primary, follow_symlinks=False, written=written, sealing=sealing)
        return verified(handoff, store.primary), ""
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
    repairing: Repairing,
) -> None:
    """Rewrite each damaged ``history/`` file, and each missing one newer than all it lists, from a verified copy."""
    for generation, (path, problem) in sorted(damaged.items()):
        source = copies.get(generation)
        if source is None:
            advice = f"no verified copy of generation {generation} is left to rewrite it from; restore skips it"
            findings.append(Finding(repairing.unrepairable(), problem, advice))
            continue
        _rewrite_history(
            store, path, source, problem=problem, findings=findings, verified=verified, repairing=repairing, keep=True
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
            store, path, source, problem=problem, findings=findings, verified=verified, repairing=repairing, keep=False
        )


def _rewrite_history(
    store: HandoffStore,
    path: Path,
    source: Copy,
    *,
    problem: str,
    findings: list[Finding],
    verified: dict[int, Copy],
    repairing: Repairing,
    keep: bool,
) -> None:
    """Rewrite one ``history/`` file from *source* (keeping the damaged one), and note it in *verified*."""
    name = f"{HISTORY_DIR}/{path.name}"
    if not repairing.writes:
        findings.append(repairing.pending("error", problem, f"`handoff doctor --repair` writes it from {source.label}"))
        return
    keep_as = store.layout.kept_copy("damaged", file_stamp(), f"-{path.name}") if keep else None
    try:
        kept = rewrite(path, saved_bytes(source, format_of(path), path), keep_as=keep_as)
    except HandoffWriteError as exc:
        findings.append(not_written(problem, f"write it from {source.label}", exc))
        return
    except HandoffError as exc:
        findings.append(Finding("unrepaired", problem, f"could not rewrite it: {exc}"))
        return
    seal = str(source.handoff.seal)
    advice = f"wrote {name} from {source.label}"
    if kept and keep_as is not None:
        advice += f" (the damaged file kept as {HISTORY_DIR}/{keep_as.name})"
    advice += note(store, source.generation, seal, f"rewrote {name} from {source.label}")
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
    repairing: Repairing,
) -> None:
    name = store.primary.name
    if primary is not None:
        if newest is None or primary.generation >= newest.generation:
            findings.append(Finding("ok", f"{name} verifies: generation {primary.generation}"))
            return
        problem = f"{name} holds generation {primary.generation}, behind the newest ({newest.generation})"
    failing: Level = repairing.unrepairable()
    if newest is None:
        findings.append(Finding(failing, problem, "nothing verified to rewrite it from"))
        return
    if newest.document is None and newest.path.suffix != store.primary.suffix:
        findings.append(Finding(failing, problem, f"the newest copy is {newest.label}"))
        return
    if not repairing.writes:
        findings.append(
            repairing.pending("error", problem, f"`handoff doctor --repair` rewrites it from {newest.label}")
        )
        return
    keep_as = store.layout.kept_copy("displaced-doctor", file_stamp(), f"-{name}")
    try:
        kept = rewrite(store.primary, saved_bytes(newest, store.format, store.primary), keep_as=keep_as)
    except HandoffWriteError as exc:
        findings.append(not_written(problem, f"rewrite it from {newest.label} (which still holds it)", exc))
        return
    except HandoffError as exc:
        findings.append(Finding("unrepaired", problem, f"could not rewrite it: {exc}"))
        return
    if kept:
        problem += f" (kept as {HISTORY_DIR}/{keep_as.name})"
    advice = f"rewrote it from {newest.label}"
    advice += note(store, newest.generation, str(newest.handoff.seal), f"rewrote {name} from {newest.label}")
    findings.append(Finding("repaired", problem, advice))


def _check_mirror(store: HandoffStore, newest: Copy | None, findings: list[Finding], repairing: Repairing) -> None:
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
        findings.append(Finding(repairing.unrepairable(), problem, "no sealed generation to mirror"))
        return
    if not repairing.writes:
        findings.append(repairing.pending("warning", problem, "`handoff doctor --repair` rewrites it"))
        return
    try:
        rewrite(store.mirror_path, mirror_of(newest, store.primary, signing_key=store_key(store)), keep_as=None)
    except HandoffWriteError as exc:
        findings.append(not_written(problem, f"rewrite it from generation {newest.generation}", exc))
        return
    except HandoffError as exc:
        findings.append(Finding("unrepaired", problem, f"could not rewrite it: {exc}"))
        return
    findings.append(Finding("repaired", problem, f"rewrote it from generation {newest.generation}"))


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
