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
from typing import Final, TypeVar

from handoff_files.format.loader import load
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError, RollbackError, UntrustedSignerError
from handoff_files.thread.anchor import advance, anchor_of, rollback_of, rollback_refused, thread_name
from handoff_files.thread.history import find_generation
from handoff_files.thread.layout import ThreadDir
from handoff_files.thread.mirror import read_mirror, verify_mirror
from handoff_files.thread.pins import Pin, pin, pin_of
from handoff_files.thread.results import Restored, SaveReceipt
from handoff_files.thread.signatures import SignatureReport, SignerCheck, untrusted, verified

__all__ = ["after_save", "edit_sealer", "signing_policy"]

_RESET: Final = "`handoff trust THREAD --reset` forgets the pin if this is expected"
#: (folder, key fingerprint, allowed_signers) a signed save found untrusted, or trusted: not looked up again
_UNTRUSTED: set[tuple[str, str, str]] = set()
_TRUSTED: set[tuple[str, str, str]] = set()
#: generation 1's seal by its history/ file's identity (path, device, inode, size, mtime and ctime in ns)
_FIRST_SEALS: dict[tuple[str, int, int, int, int, int], str | None] = {}
_KEEP: Final = 256
_T = TypeVar("_T")
_UNKNOWN: Final = object()


def signing_policy(
    restored: Restored,
    layout: ThreadDir,
    *,
    allowed_signers: Path | None,
    require_signed: bool,
    accept_rollback: bool = False,
) -> Restored:
    """*restored* with who signed it, after the pin is taken (a trusted signature) or applied (none);
    on a pinned folder, checked against and then moving its rollback anchor (:mod:`~handoff_files.thread.anchor`).

    :raises UntrustedSignerError: if the thread is pinned (or *require_signed*) and no generation
        it holds is signed by a trusted key.
    :raises RollbackError: if the pinned thread is older than its anchor, unless *accept_rollback*.
    """
    checker = SignerCheck(allowed_signers)
    handoff = restored.handoff
    seal = None
    if restored.source == "rebuilt":  # from state.json: its own signature, over the state it holds
        report, seal = _state_signer(restored, checker)
    else:
        report = checker.report(handoff, restored.path)
    restored = dataclasses.replace(restored, signature=report)
    problems: list[str] = []
    held = _pin(layout, handoff, problems)
    if report is not None and report.trusted:
        if held is None or _anew(held, layout, handoff) is not None:  # a trusted key signed it: the pin is its
            how = f"read generation {handoff.generation}, signed by {report.principal}"
            _take_pin(layout, handoff, how, problems)
        return _anchored(_with(restored, problems), layout, accept_rollback=accept_rollback, seal=seal)
    if held is None and not require_signed:
        return _with(restored, problems)
    since = "signed generations required"
    if held is not None:
        anew = _anew(held, layout, handoff)
        since = f"the folder is pinned to signed generations since {held.pinned_at}" + (f"; {anew}" if anew else "")
    why = untrusted(report)
    refused = f"generation {handoff.generation} ({restored.source}, {restored.path}) is not trusted: {why} ({since})"
    found = _newest_trusted(restored, layout, checker, [*problems, refused], f"{since}; the newest is {why}", held=held)
    if held is None and found.signature is not None:  # require_signed found a trusted one: the thread pins
        _take_pin(layout, found.handoff, f"read generation {found.handoff.generation}, signed", problems)
    return _anchored(found, layout, accept_rollback=accept_rollback)


def _anchored(restored: Restored, layout: ThreadDir, *, accept_rollback: bool, seal: str | None = None) -> Restored:
    """*restored* (a trusted generation of a pinned folder) once checked against the folder's anchor, which it moves on.

    :param seal: the generation's seal when *restored* has none (rebuilt from ``state.json``, which names it).
    :raises RollbackError: if it is older than the anchor, or the anchor's number with another seal.
    """
    handoff = restored.handoff
    seal, first = seal or str(handoff.seal), _first_seal(layout, handoff)
    try:
        anchor = anchor_of(layout.path)
    except RollbackError as exc:  # an anchor that is not this user's private file is used for nothing
        return _with(restored, [f"no rollback check: {exc}"])
    why = rollback_of(anchor, handoff.thread_id, handoff.generation, seal, first)
    if why is None and anchor is not None and (anchor.generation, anchor.seal) == (handoff.generation, seal):
        return restored  # anchored here already: nothing to move (the usual restore)
    if why is not None and not accept_rollback:
        raise rollback_refused(layout.path, why)
    problems = [] if why is None else [f"a rollback, accepted: {why}"]
    try:  # the copy read is flushed first: a power loss never leaves the anchor ahead of the disk
        back = why is not None
        advance(
            layout.path, handoff.thread_id, handoff.generation, seal, first_seal=first, flush=restored.path, back=back
        )
    except HandoffError as exc:
        problems.append(f"the rollback anchor could not be moved on: {exc}")
    return _with(restored, problems)


def after_save(
    receipt: SaveReceipt, layout: ThreadDir, thread_id: str | None, *, allowed_signers: Path | None
) -> SaveReceipt:
    """After a save: pin the thread if a key ``allowed_signers`` trusts signed it; say in the receipt when
    the folder is pinned and this save's generation is unsigned, so that every restore will pass it over.

    A save signed by a trusted key moves the folder's rollback anchor on (a line appended to a small file
    outside the thread). Whether a key is trusted in a folder is looked up (a read of the generation,
    a look in ``allowed_signers``) once per process. A pin or anchor that cannot be written is said in
    the receipt's ``problems``; it never fails the save.
    """
    if receipt.signed_by is None:
        return _unsigned_into_pinned(receipt, layout)
    problems: list[str] = []
    key = (thread_name(layout.path), receipt.signed_by, os.fspath(allowed_signers or ""))
    if thread_id is None or key in _UNTRUSTED:
        return receipt
    held = _pin(layout, None, problems)
    if key not in _TRUSTED or held is None:  # an unpinned folder (a reset since?) reads the generation to pin it
        try:
            path = find_generation(layout, receipt.generation)
            handoff = verified(load(path, follow_symlinks=False, origin="store"), path)
        except HandoffError:  # GenerationNotFoundError too
            try:  # a journal-first save's history/ copy may be unwritten: the primary holds it too
                handoff = verified(load(receipt.path, follow_symlinks=False, origin="store"), receipt.path)
            except HandoffError:
                return receipt  # the next restore pins it, from whichever copy verifies
        report = SignerCheck(allowed_signers).report(handoff, receipt.path)
        trusted = report is not None and report.trusted
        if len(_UNTRUSTED) + len(_TRUSTED) < _KEEP:
            (_TRUSTED if trusted else _UNTRUSTED).add(key)  # this key here: its next saves skip the look
        if not trusted:
            return receipt
        if held is None and report is not None:
            _take_pin(layout, handoff, f"saved generation {handoff.generation}, signed by {report.principal}", problems)
    try:  # acknowledged: its commit point is durable, so the anchor is not ahead of the disk
        advance(layout.path, thread_id, receipt.generation, receipt.checksum, saved=True)
    except HandoffError as exc:
        problems.append(f"the rollback anchor could not be moved on: {exc}")
    if not problems:
        return receipt
    return dataclasses.replace(receipt, problems=(*receipt.problems, *problems))


def edit_sealer(layout: ThreadDir, seal: _T) -> _T | None:
    """*seal* (the store's way to seal a person's edit), unless the folder is pinned to signed generations:
    there an edit is never sealed, and signed, without a person asking (``handoff seal``) — whoever can
    write the folder can make one."""
    try:
        held = pin_of(layout.path)
    except HandoffError:
        return None  # a record that cannot be read may hold this folder's pin
    return seal if held is None else None


def _unsigned_into_pinned(receipt: SaveReceipt, layout: ThreadDir) -> SaveReceipt:
    try:
        held = pin_of(layout.path)  # no record: one open that fails
    except HandoffError:
        return receipt
    if held is None:
        return receipt
    note = (
        f"this folder is pinned to signed generations (since {held.pinned_at}): every restore passes this unsigned "
        f"generation over; sign it (--sign-with KEYFILE, signing_key=…), or {_RESET}"
    )
    return dataclasses.replace(receipt, problems=(*receipt.problems, note))


def _pin(layout: ThreadDir, handoff: Handoff | None, problems: list[str]) -> Pin | None:
    """The pin on this folder, whatever thread it holds now (a thread made anew stays held), or None.

    A record that is there but cannot be used (not private, damaged) is said: it may hold this
    folder's pin. A state folder this user cannot even look into holds no pin of theirs.
    """
    try:
        return pin_of(layout.path)
    except HandoffError as exc:
        problems.append(f"the record of pinned threads cannot be read, so no pin is applied: {exc}")
        return None


def _anew(held: Pin, layout: ThreadDir, handoff: Handoff) -> str | None:
    """How the folder's thread differs from the one pinned (another thread id, another generation 1), or None."""
    if held.thread_id != handoff.thread_id:
        return f"it now holds thread {handoff.thread_id!r}, not the {held.thread_id!r} pinned"
    first = _first_seal(layout, handoff)
    if held.first_seal is not None and first is not None and first != held.first_seal:
        return "it holds a thread made anew (its generation 1 has another seal than the one pinned)"
    return None


def _take_pin(layout: ThreadDir, handoff: Handoff, how: str, problems: list[str]) -> None:
    try:
        pin(layout.path, handoff.thread_id, _first_seal(layout, handoff), how=how)
    except (HandoffError, OSError) as exc:
        problems.append(f"the thread could not be pinned to signed generations: {exc}")
        return


def _first_seal(layout: ThreadDir, handoff: Handoff) -> str | None:
    """The seal of the thread's generation 1: *handoff*'s own, or ``history/``'s copy if it verifies; else None."""
    if handoff.generation == 1:
        return None if handoff.seal is None else str(handoff.seal)
    try:
        path = find_generation(layout, 1)
        st = path.lstat()
    except (HandoffError, OSError):
        return None
    seen = (os.fspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    known = _FIRST_SEALS.get(seen, _UNKNOWN)  # one lookup: another thread may empty the cache meanwhile
    if known is not _UNKNOWN:  # the same file verified before: a pinned thread's restore loads it once
        return known if isinstance(known, str) else None
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
    restored: Restored, layout: ThreadDir, checker: SignerCheck, problems: list[str], why: str, *, held: Pin | None
) -> Restored:
    """The newest generation in ``history/`` (not newer than *restored*'s) that a trusted key signed."""
    newest = restored.handoff.generation
    own = held.thread_id if held is not None else restored.handoff.thread_id  # another thread's never stands in
    skipped: list[int] = []
    for generation, name in layout.generations():  # newest first
        if generation > newest:
            continue
        path = layout.history_dir / name
        try:
            handoff = verified(load(path, follow_symlinks=False, origin="store"), path)
        except HandoffError:
            skipped.append(generation)
            continue
        report: SignatureReport | None = checker.report(handoff, path)
        if report is not None and report.trusted and handoff.generation == generation and handoff.thread_id == own:
            if skipped:
                listed = ", ".join(map(str, skipped))
                problems.append(f"history/'s generation(s) {listed} passed over too: not signed by a trusted key")
            return Restored(handoff, "history", path, (*restored.problems, *problems), signature=report)
        if generation != newest:
            skipped.append(generation)
    reset = f"; {_RESET}" if held is not None else ""
    msg = f"no generation here is signed by a key allowed_signers trusts ({why}){reset}"
    raise UntrustedSignerError(layout.path, msg)


def _state_signer(restored: Restored, checker: SignerCheck) -> tuple[SignatureReport | None, str | None]:
    """Who signed the ``state.json`` *restored* was rebuilt from, and the seal it names; (None, None): unsigned.

    It is read again: a ``state.json`` that changed since the rebuild (another generation, another
    thread), or whose signature does not verify, vouches for nothing.
    """
    try:
        mirror = read_mirror(restored.path)
        signature = verify_mirror(mirror, restored.path)
    except HandoffError:
        return None, None
    handoff = restored.handoff
    if signature is None or (mirror.generation, mirror.thread_id) != (handoff.generation, handoff.thread_id):
        return None, None
    return checker.signer(signature, handoff.created_at, restored.path), mirror.seal


def _with(restored: Restored, problems: list[str]) -> Restored:
    return restored if not problems else dataclasses.replace(restored, problems=(*restored.problems, *problems))
