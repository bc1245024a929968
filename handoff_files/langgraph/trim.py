"""Keep a LangGraph root's newest checkpoints per thread and namespace, and remove the rest (``handoff prune``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from handoff_files.foundation.errors import HandoffValidationError
from handoff_files.langgraph.layout import writes_file
from handoff_files.langgraph.saver import HandoffSaver
from handoff_files.langgraph.store import record_of

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
    saver: HandoffSaver, keep: int, thread_ids: Sequence[str] | None = None, *, dry_run: bool = False
) -> list[Pruned]:
    """Keep the newest *keep* checkpoints (and their pending writes) of each namespace; remove the older ones.

    Each checkpoint file holds its whole state, so the newest ones load without those removed: a
    graph resumes from them as before; only ``get_state_history`` ends sooner.

    :param keep: checkpoints kept per thread and namespace, at least 1.
    :param thread_ids: the threads (default: every thread under the saver's root).
    :param dry_run: say what would be removed, and remove nothing.
    :raises HandoffValidationError: for *keep* below 1.
    """
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        msg = f"keep must be a whole number of checkpoints, at least 1; got {keep!r}"
        raise HandoffValidationError(saver.root, msg)
    folders = saver._thread_dirs() if thread_ids is None else [saver._thread_dir(str(thread)) for thread in thread_ids]
    results = []
    for folder in folders:
        for namespace in saver._namespaces_of(folder):
            entries, damaged = namespace.scan()
            if not entries:
                continue
            record = record_of(namespace.handoff(entries[0]), entries[0].path)
            doomed = entries[keep:]
            # a file that does not verify, older than the newest kept, is among those pruned
            oldest_kept = min(entry.generation for entry in entries[:keep])
            bad = [item for item in damaged if item.generation < oldest_kept]
            if not dry_run:
                namespace.remove(doomed, writes_file, bad)
            results.append(
                Pruned(
                    record["thread_id"],
                    record["checkpoint_ns"],
                    tuple(entry.checkpoint_id for entry in entries[:keep]),
                    tuple(entry.checkpoint_id for entry in doomed),
                    tuple(str(item.path) for item in bad),
                )
            )
    return results
