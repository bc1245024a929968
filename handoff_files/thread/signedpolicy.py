"""The signing policy of a restore: who signed, the pin taken or kept, and under a pin the newest trusted generation.

A thread is pinned (:mod:`~handoff_files.thread.pins`) once this user reads or writes a generation
of it signed by a key ``allowed_signers`` trusts, or from the start with ``require_signed``. Under
a pin, a generation that is unsigned, or whose signer is not trusted, is refused as a damaged copy
is: the restore returns the newest generation in ``history/`` a trusted key signed, and its
``problems`` name the one refused. With none, :class:`~handoff_files.foundation.errors.UntrustedSignerError`.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Final

from handoff_files.format.loader import load
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError, UntrustedSignerError
from handoff_files.thread.layout import ThreadDir
from handoff_files.thread.pins import Pin, pin, pin_of
from handoff_files.thread.results import Restored, SaveReceipt
from handoff_files.thread.signatures import SignatureReport, SignerCheck, verified

__all__ = ["after_signed_save", "signing_policy"]

_RESET: Final = "`handoff trust THREAD --reset` forgets the pin if this is expected"
#: (real path, thread id) pairs whose pin this process has taken or checked: a signed save checks once
_KNOWN_PINNED: set[tuple[str, str]] = set()
#: generation 1's seal by its history/ file's identity (path, device, inode, size, mtime and ctime in ns)
_FIRST_SEALS: dict[tuple[str, int, int, int, int, int], str | None] = {}
_KEEP: Final = 256


def signing_policy(
    restored: Restored, layout: ThreadDir, *, allowed_signers: Path | None, require_signed: bool
) -> Restored:
    """*restored* with who signed it, after the pin is taken (a trusted signature) or applied (none).

    :raises UntrustedSignerError: if the thread is pinned (or *require_signed*) and no generation
        it holds is signed by a trusted key.
    """
    checker = SignerCheck(allowed_signers)
    handoff = restored.handoff
    report = checker.report(handoff, restored.path)
    restored = dataclasses.replace(restored, signature=report)
    problems: list[str] = []
    held = _pin(layout, handoff, problems)
    if report is not None and report.trusted:
        if held is None:
            how = f"read generation {handoff.generation}, signed by {report.principal}"
            _take_pin(layout, handoff, how, problems)
        return _with(restored, problems)
    if held is None and not require_signed:
        return _with(restored, problems)
    since = f"pinned to signed generations since {held.pinned_at}" if held is not None else "require_signed"
    why = "unsigned" if report is None else report.describe()
    refused = f"generation {handoff.generation} ({restored.source}, {restored.path}) is not trusted: {why} ({since})"
    return _newest_trusted(restored, layout, checker, [*problems, refused], f"{since}; the newest is {why}")


def after_signed_save(
    receipt: SaveReceipt, layout: ThreadDir, thread_id: str | None, *, allowed_signers: Path | None
) -> SaveReceipt:
    """Pin the thread after a save signed by a key ``allowed_signers`` trusts (once per process and thread).

    A pin that cannot be written is said in the receipt's ``problems``; it never fails the save.
    """
    known = (os.path.realpath(layout.path), thread_id or "")
    if receipt.signed_by is None or thread_id is None or known in _KNOWN_PINNED:
        return receipt
    problems: list[str] = []
    try:
        handoff = load(layout.history_dir / _name(layout, receipt.generation), follow_symlinks=False, origin="store")
    except (HandoffError, LookupError):
        try:  # a journal-first save's history/ copy may be unwritten: the primary holds it too
            handoff = load(receipt.path, follow_symlinks=False, origin="store")
        except HandoffError:
            return receipt  # the next restore pins it, from whichever copy verifies
    report = SignerCheck(allowed_signers).report(handoff, receipt.path)
    if report is not None and report.trusted and _pin(layout, handoff, problems) is None:
        _take_pin(layout, handoff, f"saved generation {handoff.generation}, signed by {report.principal}", problems)
    _KNOWN_PINNED.add(known)  # checked: this process's next signed saves of it pay nothing (a restore re-checks)
    if not problems:
        return receipt
    return dataclasses.replace(receipt, problems=(*receipt.problems, *problems))


def _name(layout: ThreadDir, generation: int) -> str:
    return dict(layout.generations())[generation]


def _pin(layout: ThreadDir, handoff: Handoff, problems: list[str]) -> Pin | None:
    """The pin that covers this thread, or None; a pin on a thread since made anew covers it no more (said)."""
    try:
        held = pin_of(layout.path, handoff.thread_id)
    except HandoffError as exc:
        problems.append(f"the record of pinned threads cannot be read, so no pin is applied: {exc}")
        return None
    if held is None:
        return None
    first = _first_seal(layout, handoff)
    if held.first_seal is not None and first is not None and first != held.first_seal:
        problems.append(
            f"this folder holds a thread made anew (its generation 1 has another seal than the one pinned "
            f"{held.pinned_at}): the pin does not cover it; {_RESET}"
        )
        return None
    _KNOWN_PINNED.add((held.path, held.thread_id))
    return held


def _take_pin(layout: ThreadDir, handoff: Handoff, how: str, problems: list[str]) -> None:
    try:
        taken = pin(layout.path, handoff.thread_id, _first_seal(layout, handoff), how=how)
    except (HandoffError, OSError) as exc:
        problems.append(f"the thread could not be pinned to signed generations: {exc}")
        return
    _KNOWN_PINNED.add((taken.path, taken.thread_id))


def _first_seal(layout: ThreadDir, handoff: Handoff) -> str | None:
    """The seal of the thread's generation 1: *handoff*'s own, or ``history/``'s copy if it verifies; else None."""
    if handoff.generation == 1:
        return None if handoff.seal is None else str(handoff.seal)
    name = dict(layout.generations()).get(1)
    if name is None:
        return None
    path = layout.history_dir / name
    try:
        st = path.lstat()
    except OSError:
        return None
    seen = (os.fspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if seen in _FIRST_SEALS:  # the same file verified before: a pinned thread's restore loads it once
        return _FIRST_SEALS[seen]
    try:
        first = verified(load(path, follow_symlinks=False, origin="store"), path)
    except HandoffError:
        return None
    seal = None if first.seal is None else str(first.seal)
    if len(_FIRST_SEALS) > _KEEP:
        _FIRST_SEALS.clear()
    _FIRST_SEALS[seen] = seal
    return seal


def _newest_trusted(
    restored: Restored, layout: ThreadDir, checker: SignerCheck, problems: list[str], why: str
) -> Restored:
    """The newest generation in ``history/`` (not newer than *restored*'s) that a trusted key signed."""
    newest = restored.handoff.generation
    skipped = 0
    for generation, name in layout.generations():  # newest first
        if generation > newest:
            continue
        path = layout.history_dir / name
        try:
            handoff = verified(load(path, follow_symlinks=False, origin="store"), path)
        except HandoffError:
            skipped += 1
            continue
        report: SignatureReport | None = checker.report(handoff, path)
        if report is not None and report.trusted and handoff.generation == generation:
            if skipped:
                problems.append(f"{skipped} newer copy(ies) in history/ passed over: not signed by a trusted key")
            return Restored(handoff, "history", path, (*restored.problems, *problems), signature=report)
        if generation != newest:
            skipped += 1
    msg = f"no generation here is signed by a key allowed_signers trusts ({why}); {_RESET}"
    raise UntrustedSignerError(layout.path, msg)


def _with(restored: Restored, problems: list[str]) -> Restored:
    return restored if not problems else dataclasses.replace(restored, problems=(*restored.problems, *problems))
