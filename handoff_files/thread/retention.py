"""Retention: how many generation files ``history/`` keeps, changed after the fact (``handoff prune DIR``)."""

from __future__ import annotations

import os

from handoff_files.foundation.errors import HandoffValidationError, HandoffWriteError
from handoff_files.thread.store import HandoffStore

__all__ = ["prune_history"]


def prune_history(
    thread: HandoffStore | str | os.PathLike[str], keep: int, *, dry_run: bool = False
) -> tuple[list[str], list[str]]:
    """Keep the newest *keep* generation files in a thread's ``history/`` and remove the rest. Writes (under the lock).

    Only generation files go: a ``displaced-``, ``legacy-`` or ``damaged-`` copy a person may want
    stays, and so does the newest generation whatever *keep* says. A "pruned" journal line says
    what went. Saves go on keeping the store's own ``keep`` (10 unless opened with another).

    :param thread: the thread (a store, or its directory).
    :param keep: generation files to keep, 1 or more.
    :param dry_run: say what would go, remove nothing.
    :returns: the names kept and the names removed (or, with *dry_run*, that would be), newest first.
    :raises HandoffValidationError: if *keep* is below 1.
    :raises HandoffWriteError: if a file cannot be removed (those before it are gone).
    """
    store = thread if isinstance(thread, HandoffStore) else HandoffStore(thread)
    if keep < 1:
        msg = f"keep must be 1 or more (history/ holds the current generation too), not {keep}"
        raise HandoffValidationError(store.history_dir, msg)
    with store.locked():
        names = [name for _, name in store.layout.generations()]
        kept, removed = names[:keep], names[keep:]
        if dry_run or not removed:
            return kept, removed
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
