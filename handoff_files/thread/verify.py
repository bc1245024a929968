"""A thread checked whole, as ``git fsck`` and ``git verify-commit`` check a repository: ``handoff verify``.

Every generation file in ``history/`` (and the primary) is read and verified (its seal, its
signature over the seal) and its signer looked up in ``allowed_signers``; then the generations are
checked against each other: each one's ``parent`` must be the seal of the one before it (else a
fork or a rewrite), and the numbers between the oldest and the newest kept must all be there (a
save prunes only the oldest, so a hole in the middle is loss or removal, not retention). On a
thread that is pinned (or when asked with *require_signed*), a generation newer than the oldest
one a trusted key signed must be signed by a trusted key too, and the newest trusted generation
must not be older than the rollback anchor (:mod:`~handoff_files.thread.anchor`). Reads only.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

from handoff_files.format import seal as sealing
from handoff_files.format.loader import load
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError
from handoff_files.thread.anchor import anchor_of, rollback_of
from handoff_files.thread.history import DEFAULT_KEEP
from handoff_files.thread.layout import HISTORY_DIR, MIRROR_NAME, ThreadDir
from handoff_files.thread.mirror import read_mirror, verify_mirror
from handoff_files.thread.pins import Pin, pin_of
from handoff_files.thread.retained import RETENTION_NAME, RetentionRecord, read_record
from handoff_files.thread.scan import scan, vouched
from handoff_files.thread.settings import ThreadSettings
from handoff_files.thread.signatures import SignatureReport, SignerCheck, verified

__all__ = ["CheckedGeneration", "ThreadCheck", "trust_of", "verify_thread"]


@dataclass(frozen=True, slots=True)
class CheckedGeneration:
    """One generation file: what it holds, who signed it, and what is wrong with it (None: nothing)."""

    generation: int | None
    path: Path
    checksum: str | None
    created_at: dt.datetime | None
    signature: SignatureReport | None
    problem: str | None


@dataclass(frozen=True, slots=True)
class ThreadCheck:
    """The whole thread: each generation file, newest first, and what is wrong across them."""

    thread: Path | str  # a folder, or a bucket thread's URL
    pinned: str | None  # when the thread was pinned to signed generations, or None
    generations: tuple[CheckedGeneration, ...]
    problems: tuple[str, ...] = field(default=())
    retention: str | None = None  # what became of the generations below the oldest kept, or None (none are missing)

    @property
    def ok(self) -> bool:
        """True when no file and nothing across them is wrong."""
        return not self.problems and all(entry.problem is None for entry in self.generations)


def verify_thread(
    thread: str | os.PathLike[str], *, allowed_signers: Path | None = None, require_signed: bool = False
) -> ThreadCheck:
    """Check every generation of *thread* and the chain they form. Reads only.

    :param allowed_signers: who is trusted to sign (default: the user's ``allowed_signers``).
    :param require_signed: every generation newer than the oldest trusted-signed one must be
        trusted-signed, as on a pinned thread.
    :raises HandoffNotFoundError: if *thread* is not a thread directory.
    :raises HandoffError: if ``history/`` cannot be listed.
    """
    layout = ThreadDir(thread)
    if not layout.path.is_dir():
        msg = "a file, not a thread directory" if layout.path.exists() else "no such thread directory"
        raise HandoffNotFoundError(layout.path, msg)
    if not layout.holdings():
        msg = layout.not_a_thread() or "not a thread: it holds no handoff, no history/ and no journal"
        raise HandoffNotFoundError(layout.path, msg)
    checker = SignerCheck(allowed_signers)
    entries: list[CheckedGeneration] = []
    good: dict[int, Handoff] = {}
    for generation, name in layout.generations():  # newest first
        entry, handoff = _check(layout.history_dir / name, generation, checker)
        entries.append(entry)
        if handoff is not None:
            good[generation] = handoff
    problems = _primary(layout, good, checker, entries)
    listed = {entry.generation for entry in entries if entry.generation is not None}
    problems += _chain(good, listed)
    vouched, lost = _unfiled(layout, max(listed, default=0))
    problems += lost
    held, own, wrong = trust_of(layout.path, good, entries, require_signed=require_signed)
    problems += wrong
    problems += _mirror(layout, checker, strict=held is not None or require_signed)
    strict = held is not None or require_signed
    try:
        found: RetentionRecord | HandoffError | None = read_record(layout)
    except HandoffError as exc:
        found = exc
    at = layout.path / RETENTION_NAME
    retention, lost = retention_of(found, at, good, listed, own, checker=checker, strict=strict, newest=vouched)
    problems += lost
    pinned_at = None if held is None else held.pinned_at
    return ThreadCheck(layout.path, pinned_at, tuple(entries), tuple(problems), retention)


def trust_of(
    thread: str | os.PathLike[str], good: dict[int, Handoff], entries: list[CheckedGeneration], *, require_signed: bool
) -> tuple[Pin | None, str | None, list[str]]:
    """The thread's pin, its own id (the pinned one, else the oldest generation's), and what is wrong across
    the generations *good* by them: another thread's; on a pinned thread (or *require_signed*) those no
    trusted key signed; on a pinned thread a rollback past its anchor. For a folder and a bucket alike."""
    problems: list[str] = []
    held = None
    try:
        held = pin_of(thread)
    except HandoffError as exc:
        problems.append(f"the record of pinned threads cannot be read: {exc}")
    own = held.thread_id if held is not None else next((good[n].thread_id for n in sorted(good)), None)
    problems += _strangers(good, own)
    if held is not None or require_signed:
        problems += _untrusted(entries)
    if held is not None:
        problems += _rolled_back(thread, good, entries)
    return held, own, problems


def _check(path: Path, generation: int | None, checker: SignerCheck) -> tuple[CheckedGeneration, Handoff | None]:
    try:
        handoff = verified(load(path, follow_symlinks=False, origin="store"), path)
    except HandoffError as exc:
        return CheckedGeneration(generation, path, None, None, None, exc.reason), None
    seal = None if handoff.seal is None else str(handoff.seal)
    if generation is not None and handoff.generation != generation:
        problem = f"its name says generation {generation}, it holds generation {handoff.generation}"
        return CheckedGeneration(generation, path, seal, handoff.created_at, None, problem), None
    if seal is None:
        problem = "an older version's file, not a sealed generation (`handoff migrate` seals it)"
        return CheckedGeneration(handoff.generation, path, None, handoff.created_at, None, problem), None
    entry = CheckedGeneration(handoff.generation, path, seal, handoff.created_at, checker.report(handoff, path), None)
    return entry, handoff


def _primary(
    layout: ThreadDir, good: dict[int, Handoff], checker: SignerCheck, entries: list[CheckedGeneration]
) -> list[str]:
    """The primary checked against ``history/``: listed when it holds a generation no verified copy holds."""
    formats = layout.primary_formats()
    if len(formats) > 1:
        return ["both a JSON and a YAML primary: a person must choose one (`handoff doctor` names them)"]
    primary = layout.primary(formats[0]) if formats else None
    if primary is None:
        return [] if not good else [f"no primary file: `handoff doctor --repair` writes it from {HISTORY_DIR}/"]
    entry, handoff = _check(primary, None, checker)
    if handoff is None:
        entries.insert(0, entry)
        return []
    kept = good.get(handoff.generation)
    if kept is None:
        entries.insert(0, entry)
        good[handoff.generation] = handoff
        return []
    if kept.seal != handoff.seal:
        return [
            f"{primary.name} holds generation {handoff.generation} with seal {handoff.seal}, {HISTORY_DIR}/ another "
            f"({kept.seal}): two different generations under one number"
        ]
    return []


def _strangers(good: dict[int, Handoff], own: str | None) -> list[str]:
    """Generations of another thread than *own*."""
    return [
        f"generation {n} ({good[n].agent_id} / {good[n].thread_id}) belongs to another thread than {own!r}"
        for n in sorted(good, reverse=True)
        if own is not None and good[n].thread_id != own
    ]


def _chain(good: dict[int, Handoff], listed: set[int]) -> list[str]:
    """Each kept generation's parent against the one before it; the numbers with no file between the kept ones."""
    problems = []
    for before, after in itertools.pairwise(sorted(good)):
        if after == before + 1 and good[after].parent != str(good[before].seal):
            problems.append(
                f"generation {after} does not follow generation {before}: its parent is {good[after].parent}, "
                f"generation {before}'s seal is {good[before].seal} (a fork or a rewrite)"
            )
    numbers = sorted(listed)
    for before, after in itertools.pairwise(numbers):
        if after > before + 1:
            missing = str(before + 1) if after == before + 2 else f"{before + 1} to {after - 1}"
            problems.append(
                f"generation(s) {missing} missing between kept ones (a save prunes only the oldest: lost or removed)"
            )
    return problems  # generations below the oldest kept: the retention record's to explain (_retention)


def _untrusted(entries: list[CheckedGeneration]) -> list[str]:
    """On a pinned thread: each generation newer than the oldest trusted-signed one that a trusted key did not sign."""
    trusted = [e.generation for e in entries if e.signature is not None and e.signature.trusted and e.generation]
    if not trusted:
        return ["no generation is signed by a key allowed_signers trusts"]
    oldest = min(trusted)
    problems = []
    for entry in entries:
        if entry.problem is not None or entry.generation is None or entry.generation <= oldest:
            continue
        if entry.signature is None:
            problems.append(f"generation {entry.generation} ({entry.path.name}) is unsigned")
        elif not entry.signature.trusted:
            problems.append(f"generation {entry.generation} ({entry.path.name}): {entry.signature.describe()}")
    return problems


def _rolled_back(
    thread: str | os.PathLike[str], good: dict[int, Handoff], entries: list[CheckedGeneration]
) -> list[str]:
    """On a pinned thread (a folder or a URL): the newest trusted generation against the rollback anchor."""
    try:
        anchor = anchor_of(thread)
    except HandoffError as exc:
        return [f"the rollback anchor cannot be read: {exc}"]
    trusted = [e.generation for e in entries if e.problem is None and e.signature is not None and e.signature.trusted]
    newest = max((n for n in trusted if n is not None and n in good), default=None)
    if anchor is None or newest is None:
        return []
    handoff = good[newest]
    first = good.get(1)
    why = rollback_of(anchor, handoff.thread_id, newest, str(handoff.seal), None if first is None else str(first.seal))
    return [] if why is None else [f"rolled back: {why}"]


def retention_of(
    found: RetentionRecord | HandoffError | None,
    at: str | os.PathLike[str],
    good: dict[int, Handoff],
    listed: set[int],
    own: str | None,
    *,
    checker: SignerCheck,
    strict: bool,
    newest: int,
) -> tuple[str | None, list[str]]:
    """What became of the generations below the oldest kept, by the retention record; and what is wrong.

    *found* is the record read (None: there is none; an error: it could not be used), *at* where it is.
    *strict* (a pinned thread, or signatures required): only a record a trusted key signed explains a
    hole; without one, the generations below the oldest kept are reported as not accounted for.
    """
    if isinstance(found, HandoffError):
        return None, [f"the retention record cannot be used: {found}"]
    record = found
    problems = [] if record is None else _misplaced(record, good, own)
    oldest = min(listed, default=1)
    if oldest <= 1:
        return None, problems
    span = _span(1, oldest - 1)
    who, trusted = "unsigned", False
    if record is not None and record.signature is not None:
        report = checker.signer(record.signature, record.written_at, at)
        who, trusted = report.describe(), report.trusted
    if record is None or (strict and not trusted):
        if not strict:
            return f"{span} not kept: no retention record, taken as pruned", problems
        why = "no retention record says they were pruned" if record is None else f"the retention record is {who}"
        return None, [*problems, f"{span} not kept, and {why} (lost or removed?)"]
    bound = record.pruned_below(max(newest, *listed))
    said = f"{RETENTION_NAME}: keep {record.keep}, written at generation {record.generation}; {who}"
    if oldest > bound:
        problems.append(
            f"{_span(bound, oldest - 1)} missing below the oldest kept, though the retention record (keep "
            f"{record.keep}) says they are kept: lost or removed"
        )
    low = min(bound, oldest)
    unaccounted = min(record.unaccounted_below or 1, low)
    parts = []
    if unaccounted > 1:
        parts.append(
            f"{_span(1, unaccounted - 1)} gone before the thread's first retention record (pruned by an earlier "
            "release, or lost: not accounted for)"
        )
    if low > unaccounted:
        parts.append(f"{_span(unaccounted, low - 1)} pruned")
    return (f"{'; '.join(parts)} ({said})" if parts else None), problems


def _span(first: int, last: int) -> str:
    return f"generation {first}" if first == last else f"generations {first} to {last}"


def _mirror(layout: ThreadDir, checker: SignerCheck, *, strict: bool) -> list[str]:
    """``state.json``'s signature: one that does not verify over its state; on a pinned thread, one not trusted."""
    try:
        mirror = read_mirror(layout.mirror)
    except HandoffError:
        return []  # missing or damaged: the doctor's to say and repair; restore never trusts it then
    try:
        signature = verify_mirror(mirror, layout.mirror)
    except HandoffError as exc:
        return [str(exc)]
    if signature is None or not strict:
        return []
    try:
        at = dt.datetime.fromisoformat(mirror.created_at)
    except ValueError:
        return [f"{MIRROR_NAME}: its created_at is not a time: {mirror.created_at!r}"]
    report = checker.signer(signature, at, layout.mirror)
    return [] if report.trusted else [f"{MIRROR_NAME}: its signature is {report.describe()}"]


def _unfiled(layout: ThreadDir, filed: int) -> tuple[int, list[str]]:
    """The newest generation the thread vouches for (its files, its journal, ``state.json``, as restore
    counts them), and the generations above *filed* (the newest with a file) that no file holds."""
    try:
        settings = ThreadSettings.checked(
            layout,
            format=None,
            keep=DEFAULT_KEEP,
            agent_id=None,
            thread_id=None,
            algorithm=sealing.DEFAULT_ALGORITHM,
            lock_timeout=0,
            durability="full",
        )
        found = scan(settings)
        try:
            mirror = read_mirror(layout.mirror)
        except HandoffError:
            mirror = None
        newest, _, _ = vouched(found, mirror)
    except HandoffError as exc:
        return filed, [f"the journal and {MIRROR_NAME} could not be checked against the files: {exc}"]
    if newest <= filed:
        return filed, []
    held = found.newest.generation if found.newest is not None and found.newest.source == "journal" else filed
    problems = []
    if held > filed:
        span = str(held) if held == filed + 1 else f"{filed + 1} to {held}"
        problems.append(
            f"generation(s) {span} only in the journal, in no file (a journal-first save cut short, or its files "
            "lost): `handoff doctor --repair` writes them back"
        )
    if newest > held:
        span = str(newest) if newest == held + 1 else f"{held + 1} to {newest}"
        problems.append(
            f"generation(s) {span} missing: the journal or {MIRROR_NAME} names generation {newest}, and no file or "
            "journal line holds it (lost or removed; restore rebuilds the newest from state.json if it can)"
        )
    return newest, problems


def _misplaced(record: RetentionRecord, good: dict[int, Handoff], own: str | None) -> list[str]:
    """The retention record checked against the thread: its id, and the seal of the generation it was written at."""
    problems = []
    if own is not None and record.thread_id != own:
        problems.append(f"{RETENTION_NAME} is another thread's ({record.thread_id!r}; this one is {own!r})")
    kept = good.get(record.generation)
    if kept is not None and str(kept.seal) != record.seal:
        problems.append(
            f"{RETENTION_NAME} was written at generation {record.generation} with seal {record.seal}; "
            f"{HISTORY_DIR}/ holds another ({kept.seal}): a fork, or a record copied from elsewhere"
        )
    return problems
