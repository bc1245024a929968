"""``handoff doctor s3://…``: check a bucket thread's generations, its readable copies and what else is under it.

A bucket thread has no lock, no journal file and no temp files: what can go wrong is a generation
object that does not verify (or breaks the chain, or is another thread's, or is untrusted on a
pinned thread: :func:`~handoff_files.thread.bucketverify.verify_bucket` says which), a readable copy
(``handoff.json``, ``state.json``) left behind the newest generation by a writer killed between its
commit and its copies, and objects under the prefix the library did not write. ``--repair`` moves the
copies on to the newest verified generation, as a save would (on the etag read: never over a newer
one); ``state.json`` is signed with the configured key when that key signed the generation, written
unsigned for an unsigned generation, and left for its signer's doctor otherwise. Nothing else is
changed: a damaged generation is evidence, and objects not the library's are not its to remove.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import orjson

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError
from handoff_files.thread.bucketidentity import generation_key, generation_of
from handoff_files.thread.bucketstore import BucketThreadStore
from handoff_files.thread.bucketverify import verify_bucket
from handoff_files.thread.findings import Finding
from handoff_files.thread.objectcopies import MIRROR, PRIMARY, ReadableCopies
from handoff_files.thread.retained import RETENTION_NAME

__all__ = ["examine_bucket"]

_OURS: Final = ("history/", "journal/", PRIMARY, MIRROR, RETENTION_NAME)


def examine_bucket(url: str, *, repair: bool = False, allowed_signers: Path | None = None) -> list[Finding]:
    """The doctor's findings for the thread at *url* (see the module's docstring).

    :raises HandoffNotFoundError: if nothing is under *url*.
    :raises HandoffError: if the store cannot be listed or reached.
    """
    check = verify_bucket(url, allowed_signers=allowed_signers)
    store = BucketThreadStore(url, allowed_signers=allowed_signers)
    where = store.where
    findings = [
        Finding(
            "error", f"{where}/{entry.path}: {entry.problem}", "keep it as evidence; restore passes it over", "history"
        )
        for entry in check.generations
        if entry.problem is not None
    ]
    findings += [
        Finding("error", problem, "see `handoff verify` for the whole chain", "history") for problem in check.problems
    ]
    good = [entry for entry in check.generations if entry.problem is None]
    if good and not findings:
        said = f"{len(good)} generation{'s' if len(good) > 1 else ''} verify and chain, newest {good[0].generation}"
        findings.append(Finding("ok", said, kind="history"))
    if check.retention:
        findings.append(Finding("ok", check.retention, kind="history"))
    if good and good[0].generation is not None:
        findings += _copies(
            store, good[0].generation, good[0].signature.fingerprint if good[0].signature else None, repair=repair
        )
    listed = store.storage.list("")
    strays = [key for key in listed if key.startswith("history/") and generation_of(key) is None]
    if strays:
        named = ", ".join(strays[:5]) + (f" and {len(strays) - 5} more" if len(strays) > 5 else "")
        advice = "not a generation's name: every reader passes it over; remove it if nothing of yours needs it"
        findings.append(Finding("warning", f"in history/, not the library's: {named}", advice, "history"))
    others = [key for key in listed if not key.startswith(_OURS)]
    if others:
        named = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        findings.append(Finding("ok", f"not the library's, left alone: {named}", kind="others"))
    _, unread = store.timeline()
    advice = "a journal/ object the library did not write: `handoff log` names it, never shows it"
    findings += [Finding("warning", problem, advice, "journal") for problem in unread if "/journal/" in problem]
    return findings


def _copies(store: BucketThreadStore, newest: int, signer: str | None, *, repair: bool) -> list[Finding]:
    """Whether ``handoff.json`` and ``state.json`` hold the newest generation; moved on to it with *repair*."""
    where, storage = store.where, store.storage
    behind = []
    for key in (PRIMARY, MIRROR):
        try:
            there = orjson.loads(storage.read(key, limit=MAX_FILE_BYTES).data).get("generation")
        except HandoffNotFoundError:
            there = None
        except (HandoffError, orjson.JSONDecodeError, AttributeError):
            there = "damaged"
        if there != newest:
            behind.append((key, there))
    if not behind:
        return [Finding("ok", f"{PRIMARY} and {MIRROR} hold generation {newest}", kind="primary")]
    said = [
        f"{where}/{key} holds {'nothing' if there is None else there}, not generation {newest}" for key, there in behind
    ]
    if not repair:
        advice = "a writer stopped between its commit and its copies; `handoff doctor URL --repair` moves them on"
        return [Finding("warning", what, advice, "primary") for what in said]
    data = storage.read(generation_key(newest), limit=MAX_FILE_BYTES).data
    mine = store.signing_key
    copies = ReadableCopies(storage)
    if signer is not None and (mine is None or mine.fingerprint != signer):
        moved = copies.advance(PRIMARY, data, newest)
        done = Finding("repaired", f"{where}/{PRIMARY}: moved on to {newest}", kind="primary")
        why = f"generation {newest} is signed by {signer}, not by this user's key: its state.json is its signer's"
        return [
            done if moved is None else Finding("unrepaired", moved, kind="primary"),
            Finding("unrepaired", f"{where}/{MIRROR}: {why}", "run the doctor as the signer", "mirror"),
        ]
    document = orjson.loads(data)
    seal_text = f"{document['seal']['algorithm']}:{document['seal']['digest']}"
    keys = [key for key, _ in behind]
    problems = copies.follow(document, seal_text, data, mine if signer is not None else None, list, keys=keys)
    if problems:
        return [Finding("unrepaired", problem, kind="primary") for problem in problems]
    return [Finding("repaired", f"{what}: moved on", kind="primary") for what in said]
