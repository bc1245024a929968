"""``handoff prune s3://… --keep N`` on a LangGraph bucket saver's root: each thread's and namespace's newest
checkpoints kept, the older ones removed with their writes and values (as :mod:`.trim` does in a folder)."""

from __future__ import annotations

from collections.abc import Sequence

from handoff_files.foundation.errors import HandoffNotFoundError, HandoffValidationError
from handoff_files.langgraph.bucket_keys import encode_name, thread_prefix
from handoff_files.langgraph.bucket_saver import BucketSaver
from handoff_files.langgraph.bucket_threads import keep_newest
from handoff_files.langgraph.trim import Pruned
from handoff_files.thread.retention import check_keep

__all__ = ["keep_newest_in_bucket"]


def keep_newest_in_bucket(
    saver: BucketSaver, keep: int, thread_ids: Sequence[str] | None = None, *, dry_run: bool = False
) -> list[Pruned]:
    """Keep the newest *keep* checkpoints (and their writes and values) of each namespace; remove the older ones.

    :param thread_ids: the threads (default: every thread under the saver's root).
    :param dry_run: say what would be removed, and remove nothing.
    :raises HandoffValidationError: for a bad *keep*; for a namespace whose graph uses a ``DeltaChannel``;
        for a root that holds no LangGraph checkpoint.
    :raises HandoffNotFoundError: if a thread named in *thread_ids* holds no checkpoint.
    """
    check_keep(keep, saver.where)
    groups: dict[tuple[str, str], None] = {}
    names = [None] if thread_ids is None else [str(thread) for thread in thread_ids]
    for name in names:
        prefix = "" if name is None else thread_prefix(encode_name(name, "thread_id", saver.where))
        found = saver.checkpoints(prefix)
        if name is not None and not found:
            where, msg = f"{saver.where}/{prefix}", f"no LangGraph thread {name!r} under this root"
            raise HandoffNotFoundError(where, msg)
        for item in sorted(found, key=lambda item: (item.thread_id, item.checkpoint_ns)):
            groups.setdefault((item.thread_id, item.checkpoint_ns))
    if not groups:
        msg = "neither a thread nor a LangGraph root: it holds no handoff generation and no LangGraph checkpoint"
        raise HandoffValidationError(saver.where, msg)
    results = []
    for thread_id, checkpoint_ns in groups:
        kept, removed = keep_newest(saver, thread_id, checkpoint_ns, keep, dry_run=dry_run)
        results.append(
            Pruned(
                thread_id,
                checkpoint_ns,
                tuple(item.checkpoint_id for item in kept),
                tuple(item.checkpoint_id for item in removed),
            )
        )
    return results
