"""One LangGraph namespace on disk: its checkpoints are the generations of a handoff thread.

Each checkpoint is saved through :class:`~handoff_files.thread.store.HandoffStore` (sealed,
durable, the writers' lock), its LangGraph record under ``state.data["langgraph"]``; the five
layers come from the graph's state where it carries them. An index of the checkpoints (id,
parent, metadata, file) is read from ``history/`` once per file and kept while the file is
unchanged: files in ``history/`` are sealed and never rewritten.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from handoff_files.format.loader import load
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError, UnsupportedVersionError
from handoff_files.thread.layout import MIRROR_NAME, PRIMARY_NAMES, generation_of
from handoff_files.thread.settings import Durability
from handoff_files.thread.store import HandoffStore

__all__ = ["AGENT_ID", "FORMAT", "Entry", "Namespace", "record_of"]

#: The version of the LangGraph record inside a checkpoint file; a newer one is refused.
FORMAT: Final = 1
#: The agent id the saver writes in every checkpoint's envelope.
AGENT_ID: Final = "langgraph"
#: ``keep=None``: every checkpoint stays (history is pruned only by ``prune`` and ``delete_*``).
_KEEP_ALL: Final = 2**62


@dataclass(frozen=True, slots=True)
class Entry:
    """One checkpoint as the index knows it."""

    checkpoint_id: str
    parent_id: str | None
    metadata: dict[str, Any]  # as stored (encoded), decoded by the saver when it filters
    path: Path  # its sealed file in history/
    generation: int


def record_of(handoff: Handoff, where: Path) -> dict[str, Any]:
    """The LangGraph record of a checkpoint file.

    :raises HandoffError: if the file holds no LangGraph record.
    :raises UnsupportedVersionError: if its record is of a newer format than this release reads.
    """
    record = handoff.state.data.get("langgraph")
    if not isinstance(record, dict) or not isinstance(record.get("format"), int):
        msg = "a valid handoff, but not a LangGraph checkpoint (no state.data.langgraph record)"
        raise HandoffError(where, msg)
    if record["format"] > FORMAT:
        msg = f"LangGraph checkpoint format {record['format']} is newer than this release reads ({FORMAT}); upgrade"
        raise UnsupportedVersionError(where, msg)
    return record


class Namespace:
    """One (thread, namespace) of a graph: a handoff thread directory and its index.

    :param path: the directory.
    :param durability: the saves' (only ``"full"`` for now: a journal-first save's document line
        would outlive a deleted checkpoint).
    :param keep: the newest checkpoints kept, or None for all.
    """

    def __init__(self, path: Path, *, durability: Durability, keep: int | None) -> None:
        self.path = path
        self.keep = keep
        self.store = HandoffStore(
            path, agent_id=AGENT_ID, thread_id=path.name, keep=keep or _KEEP_ALL, durability=durability
        )
        self._files: dict[tuple[str, int, int, int], Entry] = {}
        self._lock = threading.Lock()

    def entries(self) -> list[Entry]:
        """Every checkpoint of the namespace, newest (highest id) first.

        :raises HandoffError: if a checkpoint file does not verify (it is never passed over).
        """
        found: dict[tuple[str, int, int, int], Entry] = {}
        try:
            listing = list(os.scandir(self.store.history_dir))
        except (FileNotFoundError, NotADirectoryError):
            listing = []
        for item in listing:
            generation = generation_of(item.name)
            if generation is None or not item.is_file(follow_symlinks=False):
                continue
            st = item.stat(follow_symlinks=False)
            key = (item.name, st.st_ino, st.st_size, st.st_mtime_ns)
            with self._lock:
                entry = self._files.get(key)
            if entry is None:
                path = Path(item.path)
                entry = self._entry(load(path, follow_symlinks=False), path)
            found[key] = entry
        with self._lock:
            self._files = found
        return sorted(found.values(), key=lambda entry: entry.checkpoint_id, reverse=True)

    def _entry(self, handoff: Handoff, path: Path) -> Entry:
        record = record_of(handoff, path)
        return Entry(
            record["checkpoint_id"], record.get("parent_checkpoint_id"), record["metadata"], path, handoff.generation
        )

    @staticmethod
    def handoff(entry: Entry) -> Handoff:
        """The verified checkpoint file of *entry*."""
        return load(entry.path, follow_symlinks=False)

    def remove(self, doomed: list[Entry], writes_of: Any) -> None:
        """Delete checkpoints (their files and pending writes), under the writers' lock.

        If the newest checkpoint goes, the primary and ``state.json`` that mirror it go too, so
        neither ``handoff show`` nor a restore hands back a deleted checkpoint.
        """
        if not doomed:
            return
        with self.store.locked():
            newest = max((entry.generation for entry in self.entries()), default=0)
            for entry in doomed:
                with contextlib.suppress(FileNotFoundError):
                    entry.path.unlink()
                with contextlib.suppress(FileNotFoundError):
                    writes_of(self.path, entry.checkpoint_id).unlink()
            if any(entry.generation == newest for entry in doomed):
                for name in (*PRIMARY_NAMES, MIRROR_NAME):
                    with contextlib.suppress(FileNotFoundError):
                        (self.path / name).unlink()
