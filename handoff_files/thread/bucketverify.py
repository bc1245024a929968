"""``handoff verify s3://…``: a bucket thread checked whole, as :mod:`~handoff_files.thread.verify` checks a folder's.

Every generation ``history/`` holds is read and verified (seal, signature), the chain between kept
ones checked (each ``parent`` the seal before it), a hole between kept generations named, a
generation of another thread named, and on a pinned thread (or with ``require_signed``) each
generation no trusted key signed, and the rollback anchor. Generations below the oldest kept are
retention's (a bucket thread keeps no signed retention record yet: they are said, not judged).
"""

from __future__ import annotations

from pathlib import Path

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.loader import decode
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError
from handoff_files.thread.bucketstore import BucketThreadStore
from handoff_files.thread.signatures import SignerCheck, verified
from handoff_files.thread.verify import CheckedGeneration, ThreadCheck, _chain, trust_of

__all__ = ["verify_bucket"]


def verify_bucket(url: str, *, allowed_signers: Path | None = None, require_signed: bool = False) -> ThreadCheck:
    """Check every generation of the thread at *url* and the chain they form. Reads only.

    :raises HandoffNotFoundError: if nothing is under *url*.
    :raises HandoffError: if the store cannot be listed or reached.
    """
    store = BucketThreadStore(url, signing_key=False, allowed_signers=allowed_signers)
    where, storage = store.where, store.storage
    numbers = store.generations()
    if not numbers and not store.holdings():
        raise HandoffNotFoundError(where, "nothing here: no thread under this URL (mistyped?)")
    checker = SignerCheck(allowed_signers)
    entries: list[CheckedGeneration] = []
    good: dict[int, Handoff] = {}
    for number in numbers:  # newest first
        key = f"history/{number:08d}.json"
        named = f"{where}/{key}"
        try:
            handoff = verified(decode(storage.read(key, limit=MAX_FILE_BYTES).data, named, origin="store"), named)
        except HandoffError as exc:
            entries.append(CheckedGeneration(number, Path(key), None, None, None, exc.reason))
            continue
        if handoff.generation != number:
            problem = f"its name says generation {number}, it holds generation {handoff.generation}"
            entries.append(CheckedGeneration(number, Path(key), str(handoff.seal), handoff.created_at, None, problem))
            continue
        report = checker.report(handoff, named)
        entries.append(CheckedGeneration(number, Path(key), str(handoff.seal), handoff.created_at, report, None))
        good[number] = handoff
    held, _, wrong = trust_of(where, good, entries, require_signed=require_signed)
    problems = _chain(good, set(numbers)) + wrong
    oldest = min(numbers, default=1)
    retention = None if oldest <= 1 else f"generations 1 to {oldest - 1}: not kept (retention removes the oldest)"
    return ThreadCheck(where, None if held is None else held.pinned_at, tuple(entries), tuple(problems), retention)
