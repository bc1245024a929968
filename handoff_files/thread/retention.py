"""Retention: how many generation files ``history/`` keeps, changed after the fact (``handoff prune DIR``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

from handoff_files.format.loader import load
from handoff_files.foundation.atomic import is_real_dir, lexists
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    HandoffWriteError,
    ThreadKindError,
)
from handoff_files.thread.kind import saver_root, thread_kind
from handoff_files.thread.layout import ThreadDir, generation_of
from handoff_files.thread.retained import read_record, write_record
from handoff_files.thread.signatures import verified
from handoff_files.thread.store import HandoffStore

__all__ = ["KEEP_RULE", "check_keep", "is_thread", "prune_history", "record_pruning"]

#: What ``keep`` must be, in the words every refusal of it uses (library and ``handoff prune --keep``).
KEEP_RULE: Final = "a whole number, 1 or more (the newest generation always stays)"


def check_keep(keep: object, where: str | os.PathLike[str]) -> int:
    """Return *keep* if it is :data:`KEEP_RULE`: how many generations (or checkpoints) a pruning keeps.

    :param where: the thread or root being pruned, named in the error.
    :raises HandoffValidationError: if it is not a whole number, or is below 1.
    """
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        msg = f"keep must be {KEEP_RULE}, not {keep!r}"
        raise HandoffValidationError(where, msg)
    return keep


def is_thread(path: str | os.PathLike[str]) -> bool:
    """Whether *path* is a thread directory (its files, or at least its ``history/``), not a folder of them. Reads only.

    :raises HandoffNotFoundError: if nothing is at *path* (a mistyped path is never taken as empty).
    :raises HandoffValidationError: if *path* is not a folder.
    :raises HandoffError: if the folder cannot be listed.
    """
    folder = Path(path)
    if not lexists(folder):
        msg = "no such thread directory or LangGraph root"
        raise HandoffNotFoundError(folder, msg)
    if not is_real_dir(folder, follow_symlinks=True):
        msg = "not a folder: prune takes a thread directory or a HandoffSaver's root"
        raise HandoffValidationError(folder, msg)
    layout = ThreadDir(folder)
    return bool(layout.holdings()) or is_real_dir(layout.history_dir)


def prune_history(
    thread: HandoffStore | str | os.PathLike[str], keep: int, *, dry_run: bool = False, **options: Any
) -> tuple[list[str], list[str]]:
    """Keep the newest *keep* generation files in a thread's ``history/`` and remove the rest. Writes (under the lock).

    Only generation files go: a ``displaced-``, ``legacy-`` or ``damaged-`` copy a person may want
    stays, and so does the newest generation whatever *keep* says. A "pruned" journal line says
    what went. Saves go on keeping the store's own ``keep`` (10 unless opened with another).

    A dry run reads only: it takes no lock, so a writer holding it never holds the answer up (a
    save that lands meanwhile may change what a real run removes).

    :param thread: the thread (a store, or its directory).
    :param keep: generation files to keep: :data:`KEEP_RULE`.
    :param dry_run: say what would go, remove nothing.
    :param options: :class:`HandoffStore`'s keywords (``lock_timeout``, ``on_lock_wait`` …), for a directory.
    :returns: the names kept and the names removed (or, with *dry_run*, that would be), newest first.
    :raises HandoffValidationError: if *keep* is not :data:`KEEP_RULE`, or *thread* is a folder
        but not a thread (a folder of threads, say), or no kept generation verifies.
    :raises ThreadKindError: for a LangGraph saver's thread (its root's prune keeps writes and blobs in step).
    :raises HandoffNotFoundError: if *thread* does not exist.
    :raises HandoffLockedError: if another writer holds the lock past the store's ``lock_timeout``.
    :raises HandoffWriteError: if a file cannot be removed (those before it are gone), or the
        retention record cannot be written (nothing is removed then).
    :raises SigningKeyError: if the configured key cannot sign the retention record (nothing removed).
    """
    path = thread.path if isinstance(thread, HandoffStore) else Path(thread)
    check_keep(keep, path)
    if not is_thread(path):
        msg = "not a thread directory: it holds no handoff file, history/ or journal"
        raise HandoffValidationError(path, msg)
    store = thread if isinstance(thread, HandoffStore) else HandoffStore(path, **options)
    if store.kind is None and thread_kind(store.layout) == "langgraph":
        root = saver_root(path)
        msg = (
            "a LangGraph saver's thread: pruning its history/ alone would leave its pending writes and blobs "
            f"behind; prune it through the saver's root: handoff prune {root} --keep {keep}"
        )
        raise ThreadKindError(path, msg)
    if dry_run:
        names = [name for _, name in store.layout.generations()]
        return names[:keep], names[keep:]
    with store.locked():
        names = [name for _, name in store.layout.generations()]
        kept, removed = names[:keep], names[keep:]
        if not removed:
            return kept, removed
        record_pruning(store, kept, keep, generation_of(names[-1]) or 1)
        for name in removed:
            try:
                (store.history_dir / name).unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                msg = f"cannot remove it: {exc.strerror or exc}"
                raise HandoffWriteError(store.history_dir / name, msg) from exc
        summary = f"removed {len(removed)} older generation file(s) from history/, kept the newest {len(kept)}"
        store.record("pruned", generation=None, seal=None, summary=summary)
    return kept, removed


def record_pruning(store: HandoffStore, kept: list[str], keep: int, oldest: int) -> None:
    """Write the retention record before a prune removes anything (call under the lock): every
    generation below the oldest of *kept* (``history/`` names, newest first) is going, and saves
    keep *keep* from now on. The record names the newest kept generation that verifies; what was
    gone below *oldest* (the oldest there is now) before any record of the thread stays unaccounted for.

    :raises HandoffValidationError: if none does (nothing is removed: the doctor says what is wrong).
    """
    for name in kept:
        try:
            handoff = verified(load(store.history_dir / name, follow_symlinks=False, origin="store"), name)
        except HandoffError:
            continue
        if handoff.seal is None:
            continue
        try:
            earlier = read_record(store.layout)
        except HandoffError:
            earlier = None
        if earlier is not None and earlier.thread_id == handoff.thread_id and earlier.signed_with(store.signing_key):
            oldest = earlier.unaccounted_below or 1  # the thread's account carries over
        write_record(
            store.layout,
            thread_id=handoff.thread_id,
            keep=keep,
            kept_from=generation_of(kept[-1]) or 1,
            generation=handoff.generation,
            seal=str(handoff.seal),
            key=store.signing_key,
            unaccounted_below=oldest,
        )
        return
    msg = "no generation kept in history/ verifies, so no retention record can name the thread: nothing removed"
    raise HandoffValidationError(store.history_dir, f"{msg} (`handoff doctor` says what is wrong)")
