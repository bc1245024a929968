"""``handoff prune s3://… --keep N`` on a LangGraph bucket saver's root: in each thread and namespace, the newest
checkpoints that verify kept (and any newer one that does not, as evidence), the older ones removed with
their writes and values, as :mod:`.trim` does in a folder."""

from __future__ import annotations

from collections.abc import Sequence

from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    StorageUnavailableError,
)
from handoff_files.langgraph.bucket_keys import Found, encode_name, thread_prefix
from handoff_files.langgraph.bucket_saver import BucketSaver
from handoff_files.langgraph.bucket_threads import refuse_delta, remove
from handoff_files.langgraph.trim import Pruned
from handoff_files.thread.retention import check_keep

__all__ = ["keep_newest_in_bucket"]


def keep_newest_in_bucket(
    saver: BucketSaver, keep: int, thread_ids: Sequence[str] | None = None, *, dry_run: bool = False
) -> list[Pruned]:
    """Keep the newest *keep* checkpoints that verify (and their writes and values) of each namespace, and any
    newer one that does not (for a person to look at); remove the older ones.

    :param thread_ids: the threads (default: every thread under the saver's root).
    :param dry_run: say what would be removed, and remove nothing.
    :raises HandoffValidationError: for a bad *keep*; for a namespace whose graph uses a ``DeltaChannel``, or
        in which no checkpoint verifies (nothing is removed from any then); for a root holding no checkpoint.
    :raises HandoffNotFoundError: if a thread named in *thread_ids* holds no checkpoint.
    """
    check_keep(keep, saver.where)
    groups: dict[tuple[str, str], list[Found]] = {}
    for name in [None] if thread_ids is None else [str(thread) for thread in thread_ids]:
        prefix = "" if name is None else thread_prefix(encode_name(name, "thread_id", saver.where))
        found = saver.checkpoints(prefix)  # newest first
        if name is not None and not found:
            where, msg = f"{saver.where}/{prefix}", f"no LangGraph thread {name!r} under this root"
            raise HandoffNotFoundError(where, msg)
        for item in found:
            groups.setdefault((item.thread_id, item.checkpoint_ns), []).append(item)
    if not groups:
        msg = "neither a thread nor a LangGraph root: it holds no handoff generation and no LangGraph checkpoint"
        raise HandoffValidationError(saver.where, msg)
    plans = [_plan(saver, items, keep) for _, items in sorted(groups.items())]  # all checked before any removal
    for _, older in plans:
        refuse_delta(saver, older)
    results = []
    for (thread_id, checkpoint_ns), (kept, older) in zip(sorted(groups), plans, strict=True):
        if not dry_run:
            remove(saver, older[::-1])
        ids = tuple(item.checkpoint_id for item in kept), tuple(item.checkpoint_id for item in older)
        results.append(Pruned(thread_id, checkpoint_ns, *ids))
    return results


def _plan(saver: BucketSaver, items: list[Found], keep: int) -> tuple[list[Found], list[Found]]:
    """What of one namespace's checkpoints (newest first) is kept, and what is removed.

    :raises HandoffValidationError: if none verifies (what is to be kept cannot be told).
    """
    good = 0
    for index, item in enumerate(items):
        try:
            saver.read_object(item.key)
        except StorageUnavailableError:
            raise
        except HandoffError:
            continue  # damaged (or gone): kept if newer than the oldest kept, as evidence
        good += 1
        if good == keep:
            return items[: index + 1], items[index + 1 :]
    if good:
        return items, []
    thread, ns = saver.parts(items[0].thread_id, items[0].checkpoint_ns)
    where = f"{saver.where}/{thread_prefix(thread, ns)}"
    msg = "no checkpoint here verifies, so none can be kept: nothing removed (each is named when read)"
    raise HandoffValidationError(where, msg)
