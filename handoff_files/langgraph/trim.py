"""Keep a LangGraph root's newest checkpoints per thread and namespace, and remove the rest (``handoff prune``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from handoff_files.foundation.atomic import is_real_dir, lexists
from handoff_files.foundation.errors import HandoffNotFoundError, HandoffValidationError
from handoff_files.foundation.lock import DEFAULT_LOCK_TIMEOUT, OnLockWait
from handoff_files.foundation.safe_paths import dir_under
from handoff_files.langgraph.layout import namespace_dirs, writes_files
from handoff_files.langgraph.saver import HandoffSaver
from handoff_files.langgraph.store import Namespace
from handoff_files.langgraph.threads import refuse_delta_prune
from handoff_files.thread.retention import check_keep

__all__ = ["Pruned", "keep_newest"]


@dataclass(frozen=True, slots=True)
class Pruned:
    """One namespace of one thread: what was kept and what was (or, in a dry run, would be) removed."""

    thread_id: str
    checkpoint_ns: str
    kept: tuple[str, ...]  # checkpoint ids, newest first
    removed: tuple[str, ...]
    damaged_removed: tuple[str, ...] = ()  # files that did not verify, older than those kept


def keep_newest(
    saver: HandoffSaver,
    keep: int,
    thread_ids: Sequence[str] | None = None,
    *,
    dry_run: bool = False,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    on_lock_wait: OnLockWait | None = None,
) -> list[Pruned]:
    """Keep the newest *keep* checkpoints (and their pending writes) of each namespace; remove the older ones.

    Each checkpoint file holds its whole state, so the newest ones load without those removed: a
    graph resumes from them as before; only ``get_state_history`` ends sooner. A dry run reads
    only (no lock is taken).

    :param keep: checkpoints kept per thread and namespace: :data:`~handoff_files.thread.retention.KEEP_RULE`.
    :param thread_ids: the threads (default: every thread under the saver's root).
    :param dry_run: say what would be removed, and remove nothing.
    :param lock_timeout: seconds a removal waits for another writer's lock; *on_lock_wait* is told whom it waits for.
    :raises HandoffValidationError: for a bad *keep*; for a namespace whose graph uses a ``DeltaChannel``
        (its value is replayed from the older checkpoints' writes); for a root that is not a folder, or that holds
        no LangGraph checkpoint (a folder of handoff threads, say: each is pruned on its own).
    :raises HandoffNotFoundError: if the root, or a thread named in *thread_ids*, does not exist.
    """
    root = saver.root
    check_keep(keep, root)
    _check_root(root)
    if thread_ids is None:
        folders = saver.folders.thread_dirs()
    else:
        folders = [saver.folders.thread_dir(str(thread)) for thread in thread_ids]
        for thread, folder in zip(thread_ids, folders, strict=True):
            if not dir_under(root, folder):  # a link planted for the thread is refused, naming it
                msg = f"no LangGraph thread {thread!r} under this root"
                raise HandoffNotFoundError(folder, msg)
    results = []
    for folder in folders:
        for path in namespace_dirs(root, folder):
            namespace = Namespace(
                path, durability=saver.durability, keep=None, lock_timeout=lock_timeout, on_lock_wait=on_lock_wait
            )
            entries, damaged = namespace.scan()
            if not entries:
                continue
            refuse_delta_prune(saver, namespace, entries)
            record = namespace.checkpoint(entries[0]).record
            doomed = entries[keep:]
            # a file that does not verify, older than the newest kept, is among those pruned
            oldest_kept = min(entry.generation for entry in entries[:keep])
            bad = [item for item in damaged if item.generation < oldest_kept]
            if not dry_run:
                namespace.remove(doomed, writes_files, bad)
            results.append(
                Pruned(
                    record["thread_id"],
                    record["checkpoint_ns"],
                    tuple(entry.checkpoint_id for entry in entries[:keep]),
                    tuple(entry.checkpoint_id for entry in doomed),
                    tuple(str(item.path) for item in bad),
                )
            )
    if not results:
        raise HandoffValidationError(root, _nothing_to_prune(root, folders))
    return results


def _check_root(root: Path) -> None:
    if not lexists(root):
        msg = "no such thread directory or LangGraph root"
        raise HandoffNotFoundError(root, msg)
    if not is_real_dir(root, follow_symlinks=True):
        msg = "not a folder: prune takes a thread directory or a HandoffSaver's root"
        raise HandoffValidationError(root, msg)


def _nothing_to_prune(root: Path, folders: list[Path]) -> str:
    """Why a root holds nothing to prune: what it holds instead, and what to run."""
    threads = [folder for folder in folders if any(True for _ in namespace_dirs(root, folder))]
    if not threads:
        return "neither a thread nor a LangGraph root: it holds no handoff thread and no LangGraph checkpoint"
    names = ", ".join(folder.name for folder in threads[:3]) + (" …" if len(threads) > 3 else "")
    return (
        f"neither a thread nor a LangGraph root: its folders ({names}) hold no LangGraph checkpoint; "
        f"to prune a handoff thread, name it: handoff prune {threads[0]} --keep N"
    )
