"""Whole-thread work of the saver: copy a thread (staged, then one rename), delete it, delete runs, keep the newest.

Each holds the writers' lock of the namespaces it reads or changes, so no ``put`` lands inside
it. A copy is written into a staging folder under the root (a leading dot: no listing sees it)
and renamed into place at once: a reader or a second copy never sees half a thread, and a target
that already exists is refused by the rename itself, never merged into.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from handoff_files.foundation.atomic import fsync_dir
from handoff_files.foundation.errors import HandoffError, HandoffValidationError, HandoffWriteError
from handoff_files.foundation.safe_paths import dir_under
from handoff_files.langgraph.blobs import blob_refs, copy_blobs
from handoff_files.langgraph.folders import Folders
from handoff_files.langgraph.index import Damaged, Entry
from handoff_files.langgraph.layout import append_writes, read_checkpoint_writes, writes_file, writes_files
from handoff_files.langgraph.store import Namespace
from handoff_files.thread.kind import saver_root
from handoff_files.thread.retention import record_pruning
from handoff_files.thread.settings import Durability

__all__ = [
    "DELTA_KEY",
    "DamagedCheckpointWarning",
    "copy_thread",
    "delete_for_runs",
    "delete_thread",
    "keep_latest",
    "passed_over",
    "refuse_delta_prune",
]

#: The metadata key LangGraph sets on checkpoints of a graph with a ``DeltaChannel`` (its value: counters per channel).
DELTA_KEY = "counters_since_delta_snapshot"


class HandoffSaver(Protocol):
    """What these functions use of :class:`~handoff_files.langgraph.saver.HandoffSaver` (which calls them)."""

    root: Path
    folders: Folders
    durability: Durability

    def metadata_of(self, entry: Entry) -> Any: ...

    def tuple_of(self, namespace: Namespace, entry: Entry) -> Any: ...

    def save_into(
        self,
        folders: Folders,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint: dict[str, Any],
        *,
        metadata: Any,
        parent: str | None,
    ) -> Any: ...


class DamagedCheckpointWarning(UserWarning):
    """A checkpoint file that does not verify was passed over by ``list``, ``copy_thread`` or ``delete_for_runs``."""


def passed_over(namespace: Namespace, damaged: Sequence[Damaged]) -> None:
    """Say, as a :class:`DamagedCheckpointWarning`, which checkpoint files were passed over and what mends them."""
    for bad in damaged:
        message = (
            f"{bad.path}: a checkpoint file that does not verify was passed over ({bad.error.reason}); "
            f"`handoff doctor {namespace.path} --repair` restores it where a verified copy exists; "
            f"`handoff prune {saver_root(namespace.path)} --keep N` removes it once it is older than the N kept; "
            "moving it out of history/ ends this warning (it holds nothing that verifies)"
        )
        warnings.warn(message, DamagedCheckpointWarning, stacklevel=4)


@contextlib.contextmanager
def _all_locked(namespaces: Sequence[Namespace]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for namespace in namespaces:
            stack.enter_context(namespace.store.locked())
        yield


def delete_thread(saver: HandoffSaver, thread_id: str) -> None:
    """Delete every checkpoint and write of a thread: one rename under every namespace's writers' lock."""
    thread_dir = saver.folders.thread_dir(thread_id)
    if not dir_under(saver.root, thread_dir):  # a link planted for the thread is refused, not renamed
        return
    doomed = saver.root / f".deleted-{thread_dir.name}-{uuid.uuid4().hex[:8]}"
    with _all_locked(saver.folders.namespaces_of(thread_dir)):
        try:
            thread_dir.rename(doomed)  # gone at once for every reader, then removed at leisure
        except FileNotFoundError:
            return
    saver.folders.forget(thread_dir)
    shutil.rmtree(doomed, ignore_errors=True)


def delete_for_runs(saver: HandoffSaver, run_ids: Sequence[str]) -> None:
    """Delete every checkpoint (and its writes) whose metadata's ``run_id`` is one of *run_ids*."""
    runs = set(run_ids)
    if not runs:
        return
    for thread_dir in saver.folders.thread_dirs():
        for namespace in saver.folders.namespaces_of(thread_dir):
            with namespace.store.locked():
                entries, damaged = namespace.scan()
                passed_over(namespace, damaged)
                doomed = [entry for entry in entries if saver.metadata_of(entry).get("run_id") in runs]
                namespace.remove(doomed, writes_files)


def check_keep(keep: object, where: str | os.PathLike[str]) -> int | None:
    """*keep* if it is None or a whole number of checkpoints, at least 1; else :class:`HandoffError` naming *where*."""
    if keep is not None and (not isinstance(keep, int) or isinstance(keep, bool) or keep < 1):
        msg = f"keep must be a whole number of checkpoints, at least 1, or None; got {keep!r}"
        raise HandoffError(where, msg)
    return keep


def pruned(thread_ids: Sequence[str], strategy: str, delete: Callable[[str], None]) -> Iterator[str]:
    """``prune``'s threads: with ``delete``, each is deleted here; with ``keep_latest``, each is yielded to prune.

    :raises ValueError: for another *strategy*, before any thread is touched.
    """
    if strategy not in ("keep_latest", "delete"):
        msg = f"prune strategy must be one of keep_latest, delete, not {strategy!r}"
        raise ValueError(msg)
    for thread_id in thread_ids:
        if strategy == "delete":
            delete(str(thread_id))
        else:
            yield str(thread_id)


def keep_latest(saver: HandoffSaver, thread_id: str) -> None:
    """Keep each namespace's newest checkpoint (and its writes); older ones, and damaged files among them, go."""
    for namespace in saver.folders.namespaces_of(saver.folders.thread_dir(thread_id)):
        with namespace.store.locked():
            entries, damaged = namespace.scan()
            refuse_delta_prune(saver, namespace, entries)
            newest = entries[0].generation if entries else 0
            if len(entries) > 1:  # the retention record says so first: `handoff verify` tells it from loss
                oldest = min(entry.generation for entry in entries)
                record_pruning(namespace.store, [entries[0].path.name], namespace.store.keep, oldest)
            # a damaged file older than the checkpoint kept goes with the others it is among
            namespace.remove(entries[1:], writes_files, [bad for bad in damaged if bad.generation < newest])


def refuse_delta_prune(saver: HandoffSaver, namespace: Namespace, entries: Sequence[Entry]) -> None:
    """Refuse to prune a namespace whose graph uses a ``DeltaChannel``: its value is replayed from older writes.

    :raises HandoffValidationError: naming the namespace, if any checkpoint's metadata says it has one.
    """
    if any(saver.metadata_of(entry).get(DELTA_KEY) for entry in entries):
        msg = (
            "this graph uses a DeltaChannel, whose value is rebuilt from the writes of older checkpoints: "
            "pruning them would silently empty it; keep every checkpoint (keep=None) or delete the thread"
        )
        raise HandoffValidationError(namespace.path, msg)


def copy_thread(saver: HandoffSaver, source_thread_id: str, target_thread_id: str) -> None:
    """Copy every checkpoint of a thread, with its id, metadata, values and writes, to a new thread; all or nothing.

    :raises HandoffError: if the target thread already exists (nothing is written into it).
    """
    target_dir = saver.folders.thread_dir(target_thread_id)
    if os.path.lexists(target_dir) and any(ns.scan()[0] for ns in saver.folders.namespaces_of(target_dir)):
        msg = "the target thread already holds checkpoints; copy into a new thread"
        raise HandoffError(target_dir, msg)
    staging_root = saver.root / f".copying-{uuid.uuid4().hex[:12]}"
    staging = Folders(staging_root, durability=saver.durability, keep=None)
    try:
        for namespace in saver.folders.namespaces_of(saver.folders.thread_dir(source_thread_id)):
            with namespace.store.locked():  # no put, prune or delete lands in the namespace while it is read
                _copy_namespace(saver, namespace, staging, target_thread_id)
        staged = staging.thread_dir(target_thread_id)
        if staged.exists():
            _into_place(staged, target_dir)
    finally:
        shutil.rmtree(staging_root, ignore_errors=True)


def _copy_namespace(saver: HandoffSaver, namespace: Namespace, staging: Folders, target_thread_id: str) -> None:
    entries, damaged = namespace.scan()
    passed_over(namespace, damaged)
    for entry in reversed(entries):  # oldest first: the copy's history has the same order
        item = saver.tuple_of(namespace, entry)
        checkpoint_ns: str = item.config["configurable"]["checkpoint_ns"]
        checkpoint, parent = dict(item.checkpoint), entry.parent_id
        saver.save_into(staging, target_thread_id, checkpoint_ns, checkpoint, metadata=item.metadata, parent=parent)
        records = read_checkpoint_writes(namespace.path, entry.checkpoint_id, entry.generation)
        if records:
            target = staging.namespace(staging.ns_dir(target_thread_id, checkpoint_ns))
            with target.store.locked():
                copy_blobs(staging.root, namespace.path, target.path, blob_refs(r.get("value") for r in records))
                generation = target.generation_of(entry.checkpoint_id)
                append_writes(staging.root, writes_file(target.path, entry.checkpoint_id, generation), records)


def _into_place(staged: Path, target_dir: Path) -> None:
    """Rename the staged thread to its place: an empty folder there is replaced, anything else refuses it."""
    try:
        staged.rename(target_dir)
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            msg = "the target thread already exists (another copy or a put made it first); copy into a new thread"
            raise HandoffError(target_dir, msg) from exc
        msg = f"cannot move the copied thread into place: {exc.strerror or exc}"
        raise HandoffWriteError(target_dir, msg) from exc
    fsync_dir(target_dir.parent)
