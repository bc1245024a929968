"""``handoff verify s3://…``: a bucket thread checked whole, as :mod:`~handoff_files.thread.verify` checks a folder's.

Every generation ``history/`` holds is read and verified (seal, signature), the chain between kept
ones checked (each ``parent`` the seal before it), a hole between kept generations named, a
generation of another thread named, and on a pinned thread (or with ``require_signed``) each
generation no trusted key signed, and the rollback anchor. Generations below the oldest kept are
judged by the thread's retention record (``retention.json`` under the prefix, written by the writers
before they prune: :mod:`~handoff_files.thread.bucketretention`), as a folder's are.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.loader import decode
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError
from handoff_files.thread.bucketidentity import generation_key
from handoff_files.thread.bucketkind import refuse_other
from handoff_files.thread.bucketretention import read_bucket_record
from handoff_files.thread.bucketstore import BucketThreadStore
from handoff_files.thread.objects import ObjectThread
from handoff_files.thread.retained import RETENTION_NAME, RetentionRecord
from handoff_files.thread.signatures import SignerCheck, verified
from handoff_files.thread.verify import CheckedGeneration, ThreadCheck, _chain, _strangers, retention_of, trust_of

__all__ = ["verify_bucket"]


def verify_bucket(url: str, *, allowed_signers: Path | None = None, require_signed: bool = False) -> ThreadCheck:
    """Check every generation of the thread at *url* and the chain they form. Reads only.

    :raises HandoffNotFoundError: if nothing is under *url*.
    :raises HandoffError: if the store cannot be listed or reached.
    """
    store = BucketThreadStore(url, signing_key=False, allowed_signers=allowed_signers)
    where, storage = store.where, store.storage
    numbers = store.generations()
    if not numbers:
        refuse_other(where, storage.list(""), empty=True)
    checker = SignerCheck(allowed_signers)
    entries: list[CheckedGeneration] = []
    good: dict[int, Handoff] = {}
    for number in numbers:  # newest first
        key = generation_key(number)
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
    held, own, wrong = trust_of(where, good, entries, require_signed=require_signed)
    wrong = [problem for problem in wrong if problem not in _strangers(good, own)]
    try:
        found: RetentionRecord | HandoffError | None = read_bucket_record(storage)
    except HandoffError as exc:
        found = exc
    if held is None:  # the id restore goes by: a planted oldest never outranks what the writers wrote
        own = ObjectThread(storage).thread_of(numbers) or own
    for index, entry in enumerate(entries):  # each named on its own entry: never what a doctor moves copies to
        stranger = good.get(entry.generation or 0)
        if stranger is not None and own is not None and stranger.thread_id != own:
            problem = f"another thread's generation ({stranger.agent_id!r} / {stranger.thread_id!r}), not {own!r}"
            entries[index] = dataclasses.replace(entry, problem=problem)
            del good[stranger.generation]
    problems = _chain(good, set(numbers)) + wrong
    strict = held is not None or require_signed
    at, listed, newest = f"{where}/{RETENTION_NAME}", set(numbers), max(numbers, default=0)
    retention, lost = retention_of(found, at, good, listed, own, checker=checker, strict=strict, newest=newest)
    problems += lost
    return ThreadCheck(where, None if held is None else held.pinned_at, tuple(entries), tuple(problems), retention)
