"""``handoff prune s3://… --keep N``: a bucket thread's newest verified generations kept, everything below
the oldest of them removed after the retention record is made to cover it (as a save's pruning does)."""

from __future__ import annotations

from handoff_files.foundation.errors import HandoffValidationError, NoHandoffError
from handoff_files.thread.bucketidentity import generation_key
from handoff_files.thread.bucketretention import keep_bucket_record
from handoff_files.thread.bucketstore import BucketThreadStore

__all__ = ["prune_bucket"]


def prune_bucket(url: str, keep: int, *, dry_run: bool = False) -> tuple[list[str], list[str]]:
    """``handoff prune s3://… --keep N``: keep the newest *keep* generations of the thread at *url* that verify
    (on a pinned thread: that a trusted key signed), and every object above the oldest of them (one that
    does not verify is evidence, for ``handoff doctor``); remove the generations below.

    The retention record is made to cover the removal first, as a save's pruning does.

    :returns: the keys kept and the keys removed (or, with *dry_run*, that would be).
    :raises NoHandoffError: if there is no generation there (``handoff prune`` trims a LangGraph saver's root).
    :raises HandoffValidationError: if none verifies (nothing is removed then).
    :raises HandoffError: if the record cannot be written (nothing is removed then).
    """
    store = BucketThreadStore(url)
    numbers = store.generations()  # newest first
    if not numbers:
        raise NoHandoffError(
            store.where,
            "no generation here: no thread under this URL (a LangGraph saver's root: handoff prune URL --keep N)",
        )
    good = store.trusted(keep)
    if not good:
        msg = "no generation in history/ verifies (or is trusted), so none can be kept: nothing removed"
        raise HandoffValidationError(store.where, f"{msg} (`handoff doctor {store.where}` says what is wrong)")
    oldest_kept = good[-1].generation
    kept, doomed = [n for n in numbers if n >= oldest_kept], [n for n in numbers if n < oldest_kept]
    names = [generation_key(number) for number in kept], [generation_key(number) for number in doomed]
    if dry_run or not doomed:
        return names
    keep_bucket_record(
        store.storage,
        thread_id=good[0].thread_id,
        keep=keep,
        kept_from=oldest_kept,
        generation=good[0].generation,
        seal=str(good[0].seal),
        key=store.signing_key,
        oldest=min(numbers),
    )
    for key in names[1]:
        store.storage.remove(key)
    return names
