"""The signing policy of a thread on object storage: pinned and anchored by its URL, as a folder is by its path.

The same rules as a folder's (:mod:`~handoff_files.thread.signedpolicy`), on the generations
``history/`` holds: a thread is pinned once this user reads or writes a generation of it that a
key ``allowed_signers`` trusts signed (or from the start with ``require_signed``); under a pin,
a generation that is unsigned or signed by an untrusted key is passed over as a damaged one is,
and named in ``problems``. A trusted generation is checked against the thread's rollback anchor
(kept outside the bucket, in this user's state folder, under the thread's URL): one older than
the anchor, or the anchor's number with another seal, is refused unless the caller accepts it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.loader import decode
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError, NoHandoffError, RollbackError, UntrustedSignerError
from handoff_files.thread.anchor import advance, anchor_of, rollback_of, rollback_refused
from handoff_files.thread.objects import ObjectReceipt, ObjectThread
from handoff_files.thread.pins import Pin, pin, pin_of
from handoff_files.thread.results import Restored, SaveReceipt
from handoff_files.thread.signatures import SignerCheck, untrusted

__all__ = ["BucketPolicy"]


class BucketPolicy:
    """Who signed, the pin and the rollback anchor, for the thread *objects* holds."""

    def __init__(self, objects: ObjectThread, allowed_signers: Path | None, *, require_signed: bool) -> None:
        self._objects = objects
        self._where = objects.storage.where
        self._allowed = allowed_signers
        self._require_signed = require_signed
        self._firsts: dict[str, str | None] = {}

    def after_save(self, receipt: SaveReceipt, made: ObjectReceipt) -> SaveReceipt:
        """*receipt*, once the thread is pinned and anchored (a trusted key signed the save), or with a note
        that a pinned thread got an unsigned save (every restore will pass it over). Never fails the save."""
        problems: list[str] = []
        held = self._pin(problems)
        if made.signature is None:
            if held is not None:
                problems.append(
                    f"this thread is pinned to signed generations (since {held.pinned_at}): every restore passes "
                    "this unsigned generation over; sign it (--sign-with KEYFILE, signing_key=…)"
                )
        else:
            report = SignerCheck(self._allowed).signer(made.signature, made.created_at, made.where)
            if report.trusted:
                try:
                    if held is None or held.thread_id != made.thread_id:
                        how = f"saved generation {made.generation}, signed by {report.principal}"
                        pin(self._where, made.thread_id, None, how=how)
                    first = made.checksum if made.generation == 1 else None
                    advance(self._where, made.thread_id, made.generation, made.checksum, first_seal=first, saved=True)
                except HandoffError as exc:
                    problems.append(f"the pin or the rollback anchor could not be written: {exc}")
        if not problems:
            return receipt
        return dataclasses.replace(receipt, problems=(*receipt.problems, *problems))

    def restore(self, *, accept_rollback: bool) -> Restored:
        """The newest generation that verifies and, on a pinned thread, that a trusted key signed; anchored.

        :raises NoHandoffError: if none verifies.
        :raises UntrustedSignerError: if it is pinned (or signed ones are required) and none a trusted key signed.
        :raises RollbackError: if it is pinned and older than its anchor, unless *accept_rollback*.
        """
        checker = SignerCheck(self._allowed)
        problems: list[str] = []
        held = self._pin(problems)
        strict = held is not None or self._require_signed
        since = (
            "signed generations required" if held is None else f"pinned to signed generations since {held.pinned_at}"
        )
        try:
            found = self._objects.restore(refuse=self._refusal(held, checker))
        except NoHandoffError as exc:
            if strict and self._objects.generations():
                msg = f"no generation a trusted key signed is left ({since}): {exc.reason}"
                raise UntrustedSignerError(self._where, msg) from None
            raise
        handoff = found.handoff
        report = checker.report(handoff, found.where)
        problems = [*found.problems, *problems]
        if report is not None and report.trusted:
            if held is None or held.thread_id != handoff.thread_id:
                try:
                    how = f"read generation {handoff.generation}, signed by {report.principal}"
                    pin(self._where, handoff.thread_id, None, how=how)
                except HandoffError as exc:
                    problems.append(f"the thread could not be pinned: {exc}")
            problems += self._anchored(handoff, accept_rollback=accept_rollback)
        key = Path(found.where[len(self._where) + 1 :])
        return Restored(handoff, "history", key, tuple(problems), signature=report, url=found.where)

    def verified(self, numbers: list[int], want: int) -> list[Handoff]:
        """The newest *want* of *numbers* (newest first) that verify and, on a pinned thread (or with
        ``require_signed``), that a trusted key signed; fewer if fewer do."""
        held = self._pin([])
        refuse = self._refusal(held, SignerCheck(self._allowed))
        found: list[Handoff] = []
        while numbers and len(found) < want:
            handoff = self._objects.newest_of(numbers, refuse)[0]
            if handoff is None:
                break
            found.append(handoff)
            numbers = [number for number in numbers if number < handoff.generation]
        return found

    def _refusal(self, held: Pin | None, checker: SignerCheck) -> Callable[[Handoff], str | None] | None:
        """Why a generation is not trusted on this thread, or None (not pinned: every one that verifies is)."""
        if held is None and not self._require_signed:
            return None
        since = (
            "signed generations required" if held is None else f"pinned to signed generations since {held.pinned_at}"
        )

        def refuse(handoff: Handoff) -> str | None:
            report = checker.report(handoff, self._where)
            return None if report is not None and report.trusted else f"not trusted: {untrusted(report)} ({since})"

        return refuse

    def _anchored(self, handoff: Handoff, *, accept_rollback: bool) -> list[str]:
        """Check *handoff* (trusted) against the thread's anchor and move the anchor on; what is to be said.

        :raises RollbackError: if it is older than the anchor (or its number with another seal), unless accepted.
        """
        seal = str(handoff.seal)
        try:
            anchor = anchor_of(self._where)
        except RollbackError as exc:  # an anchor that is not this user's private file is used for nothing
            return [f"no rollback check: {exc}"]
        if anchor is not None and (anchor.generation, anchor.seal) == (handoff.generation, seal):
            return []  # anchored here already: the usual restore
        first = self._first_seal(handoff) if anchor is not None and handoff.generation <= anchor.generation else None
        why = rollback_of(anchor, handoff.thread_id, handoff.generation, seal, first)
        if why is not None and not accept_rollback:
            raise rollback_refused(self._where, why)
        problems = [] if why is None else [f"a rollback, accepted: {why}"]
        try:
            advance(self._where, handoff.thread_id, handoff.generation, seal, first_seal=first, back=why is not None)
        except HandoffError as exc:
            problems.append(f"the rollback anchor could not be moved on: {exc}")
        return problems

    def _first_seal(self, handoff: Handoff) -> str | None:
        """The seal of generation 1 (it tells a thread made anew from a rolled-back one); None if it is gone."""
        if handoff.generation == 1:
            return str(handoff.seal)
        if handoff.thread_id not in self._firsts:  # generation 1 never changes: read once per process
            where = f"{self._where}/history/00000001.json"
            try:
                stored = self._objects.storage.read("history/00000001.json", limit=MAX_FILE_BYTES)
                first = decode(stored.data, where, origin="store")
            except HandoffError:
                return None
            self._firsts[handoff.thread_id] = str(first.seal) if first.thread_id == handoff.thread_id else None
        return self._firsts[handoff.thread_id]

    def _pin(self, problems: list[str]) -> Pin | None:
        """The thread's pin, or None; a record that cannot be read is said (it may hold this thread's pin)."""
        try:
            return pin_of(self._where)
        except HandoffError as exc:
            problems.append(f"the record of pinned threads cannot be read, so no pin is applied: {exc}")
            return None
