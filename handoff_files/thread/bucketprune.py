"""``handoff prune s3://… --keep N``: a bucket thread's newest generation objects kept, the rest removed after
the retention record is made to cover them (as a save's pruning does)."""

from __future__ import annotations

from handoff_files.foundation.errors import NoHandoffError
from handoff_files.thread.bucketretention import keep_bucket_record
from handoff_files.thread.bucketstore import BucketThreadStore

__all__ = ["prune_bucket"]


def prune_bucket(url: str, keep: int, *, dry_run: bool = False) -> tuple[list[str], list[str]]:
    """``handoff prune s3://… --keep N``: keep the newest *keep* generation objects of the thread at *url*.

    The retention record is made to cover the removal first, as a save's pruning does.

    :returns: the keys kept and the keys removed (or, with *dry_run*, that would be).
    :raises NoHandoffError: if no generation there verifies (a LangGraph saver's root is not a thread).
    :raises HandoffError: if the record cannot be written (nothing is removed then).
    """
    store = BucketThreadStore(url)
    numbers = store.generations()  # newest first
    if not numbers:
        raise NoHandoffError(store.where, "no generation here: no thread under this URL (a saver's root prunes itself)")
    kept, doomed = numbers[:keep], numbers[keep:]
    names = [f"history/{number:08d}.json" for number in kept], [f"history/{number:08d}.json" for number in doomed]
    if dry_run or not doomed:
        return names
    newest = store.restore()  # the newest that verifies: the record is written at it
    keep_bucket_record(
        store.storage,
        thread_id=newest.handoff.thread_id,
        keep=keep,
        kept_from=kept[-1],
        generation=newest.generation,
        seal=str(newest.handoff.seal),
        key=store.signing_key,
        oldest=min(numbers),
    )
    for key in names[1]:
        store.storage.remove(key)
    return names
