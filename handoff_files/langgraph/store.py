"""One LangGraph namespace on disk: its checkpoints are the generations of a handoff thread.

Each checkpoint is saved through :class:`~handoff_files.thread.store.HandoffStore` (sealed,
durable, the writers' lock), its LangGraph record under ``state.data["langgraph"]``; the five
layers come from the graph's state where it carries them. An index of the checkpoints (id,
parent, metadata, file) is read from ``history/`` once per file and kept while the file is
unchanged: files in ``history/`` are sealed and never rewritten.

The newest checkpoint is found without reading ``history/``: each record says which generation its
writer saved after and the highest checkpoint id up to it (``order``). When the newest generation's
record was saved right after the one before it and its id is above every earlier one, it is the
newest checkpoint; otherwise (an older release's file, another writer in between, a checkpoint put
out of id order, a deleted newest one) the whole index is read, as before.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from handoff_files.format.loader import load
from handoff_files.format.model import Handoff
from handoff_files.foundation.atomic import lexists
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
)
from handoff_files.foundation.lock import DEFAULT_LOCK_TIMEOUT, OnLockWait
from handoff_files.foundation.safe_paths import open_dir_under
from handoff_files.langgraph.blobs import BLOBS_DIR, blob_refs, collect
from handoff_files.langgraph.checkpoint_file import FORMAT, CheckpointFile, read_checkpoint, record_in
from handoff_files.langgraph.index import Damaged, Entry, MendedCheckpointWarning, Top
from handoff_files.langgraph.layout import WRITES_DIR, read_writes, unlink_in, writes_owner
from handoff_files.thread.catchup import catch_up, journal_ahead
from handoff_files.thread.layout import MIRROR_NAME, PRIMARY_NAMES, ThreadDir, generation_of
from handoff_files.thread.redact import redact
from handoff_files.thread.settings import Durability
from handoff_files.thread.store import HandoffStore

if TYPE_CHECKING:
    from handoff_files.thread.signatures import KeyChoice

__all__ = ["AGENT_ID", "FORMAT", "Namespace", "record_of"]

#: The agent id the saver writes in every checkpoint's envelope.
AGENT_ID: Final = "langgraph"
#: ``keep=None``: every checkpoint stays (history is pruned only by ``prune`` and ``delete_*``).
_KEEP_ALL: Final = 2**62


def record_of(handoff: Handoff, where: Path) -> dict[str, Any]:
    """The LangGraph record of a loaded checkpoint file (see :func:`~.checkpoint_file.record_in`)."""
    return record_in(handoff.state.data, where)


class Namespace:
    """One (thread, namespace) of a graph: a handoff thread directory and its index.

    :param path: the directory.
    :param durability: the saves' (a deleted checkpoint's journal lines are redacted either way).
    :param keep: the newest checkpoints kept, or None for all.
    :param lock_timeout: seconds a write waits for another writer's lock (``handoff prune --wait``).
    :param on_lock_wait: told whom it waits for, as :class:`HandoffStore`'s is.
    :param signing_key: what the saves are signed with, as :class:`HandoffStore` takes it.
    """

    def __init__(
        self,
        path: Path,
        *,
        durability: Durability,
        keep: int | None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        on_lock_wait: OnLockWait | None = None,
        signing_key: KeyChoice = None,
    ) -> None:
        self.path = path
        #: the folder's paths; the store itself is opened at its first use (a read needs none of it)
        self.layout = ThreadDir(path)
        self._settings: dict[str, Any] = {
            "durability": durability,
            "keep": keep or _KEEP_ALL,
            "lock_timeout": lock_timeout,
            "on_lock_wait": on_lock_wait,
            "signing_key": signing_key,
        }
        self._files: dict[tuple[str, int, int, int], Entry] = {}
        self._lock = threading.Lock()
        self._top: Top | None = None  # None: not known (found again by the next save)
        self._store: HandoffStore | None = None
        self._caught_up = self._opened = self._mended = False  # see _catch_up, open_for_writes, _mend_from_journal

    @property
    def store(self) -> HandoffStore:
        """The namespace's :class:`HandoffStore` (opened once, when first written or locked; one per namespace)."""
        with self._lock:
            if self._store is None:
                settings = self._settings
                self._store = HandoffStore(
                    self.path, agent_id=AGENT_ID, thread_id=self.path.name, kind="langgraph", **settings
                )
            return self._store

    def open_for_writes(self) -> None:
        """:meth:`HandoffStore.init` once per process (its checks list the folders), and again if the thread went."""
        if not self._opened or not lexists(self.layout.journal):  # deleted since (by another process)
            self.store.init()
            self._opened = True

    def order(self) -> dict[str, Any]:
        """The ``order`` a new record carries: the generation it is saved after and the highest id up to it.

        Known from this process's last save or read; else from the newest generation's own record
        (one file), else from the whole index. Call under the writers' lock.
        """
        top = self._top
        if top is None:
            newest = self.newest()
            if newest is not None:
                top = self._top
            else:
                entries = self.scan()[0]
                if entries:
                    highest = max(entries, key=lambda entry: entry.generation)
                    top = Top(highest.generation, highest.checkpoint_id, entries[0].checkpoint_id)
        if top is None:
            return {"after": 0, "highest_id": None}
        return {"after": top.generation, "highest_id": top.highest_id}

    def saved(self, generation: int, order: dict[str, Any], checkpoint_id: str) -> None:
        """A save of *checkpoint_id* as *generation* returned: the next save chains from it if nothing came between."""
        if generation != order["after"] + 1:
            self._top = None  # another writer saved in between: the next save looks again
            return
        highest = order["highest_id"]
        highest = checkpoint_id if highest is None or checkpoint_id > highest else highest
        top = self._top  # the one before is kept in mind while the store keeps it too (keep=1 prunes it now)
        kept = top is not None and top.generation == order["after"] and self._settings["keep"] > 1
        before = (top.checkpoint_id, top.generation) if top is not None and kept else None
        self._top = Top(generation, checkpoint_id, highest, before)

    def generation_of(self, checkpoint_id: str) -> int | None:
        """The generation holding *checkpoint_id* (the newest known at once, others from the index); None if none."""
        top = self._top
        if top is None:
            newest = self.newest()
            top = self._top if newest is not None else None
        if top is not None and top.checkpoint_id == checkpoint_id:
            return top.generation
        before = top.before if top is not None and top.before and top.before[0] == checkpoint_id else None
        if before is not None and lexists(self.layout.generation_file(before[1], "json")):
            return before[1]  # its file still there: not deleted or pruned since (one lstat, no listing)
        if top is not None and checkpoint_id > top.highest_id:
            return None  # newer than every checkpoint saved: its put is still to come (async durability)
        return next((entry.generation for entry in self.scan()[0] if entry.checkpoint_id == checkpoint_id), None)

    def newest(self) -> tuple[Entry, CheckpointFile] | None:
        """The newest checkpoint and its file, from the primary alone when its record proves it the newest; else None.

        Proven when the primary verifies, ``history/`` holds its generation's file and none after it,
        and its record was saved right after the generation before it with an id above every
        earlier one. None means "read the index" (:meth:`scan`), never "no checkpoint".
        """
        self._catch_up()
        try:
            found = read_checkpoint(self.layout.primary("json"), origin="file")
        except HandoffError:
            return None
        generation, record = found.generation, found.record
        checkpoint_id = record["checkpoint_id"]
        order = record.get("order")
        if not isinstance(order, dict) or order.get("after") != generation - 1:
            return None  # an older release's record, or another writer saved in between
        highest = order.get("highest_id")
        if highest is not None and not (isinstance(highest, str) and checkpoint_id > highest):
            return None  # put out of id order: some earlier checkpoint may be the newest
        path = self.layout.generation_file(generation, "json")
        if not self._only_newest(path, generation):
            return None
        self._top = Top(generation, checkpoint_id, checkpoint_id)
        return self._entry(found, path), found

    def entries(self) -> list[Entry]:
        """Every checkpoint of the namespace, newest (highest id) first.

        A file another process prunes while this reads is passed over (it is gone, not damaged).

        :raises HandoffError: if a checkpoint file does not verify (it is never passed over), or
            if one newer than every verified checkpoint does not (the newest is then unknown).
        """
        entries, damaged = self.scan()
        if damaged:
            raise damaged[0].error
        return entries

    def scan(self) -> tuple[list[Entry], list[Damaged]]:
        """The verified checkpoints, newest first, and the files that do not verify, newest first."""
        self._catch_up()
        found: dict[tuple[str, int, int, int], Entry] = {}
        damaged: list[Damaged] = []
        try:
            listing = list(os.scandir(self.layout.history_dir))
        except (FileNotFoundError, NotADirectoryError):
            listing = []
        for item in listing:
            generation = generation_of(item.name)
            try:
                if generation is None or not item.is_file(follow_symlinks=False):
                    continue
                st = item.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # pruned by another writer since the listing
            key = (item.name, st.st_ino, st.st_size, st.st_mtime_ns)
            with self._lock:
                entry = self._files.get(key)
            if entry is None:
                path = Path(item.path)
                try:
                    entry = self._entry(read_checkpoint(path), path)
                except HandoffNotFoundError:
                    continue
                except HandoffError as exc:
                    damaged.append(Damaged(generation, path, exc))
                    continue
            found[key] = entry
        with self._lock:
            self._files = found
        if damaged and self._mend_from_journal():
            return self.scan()
        damaged.sort(key=lambda item: item.generation, reverse=True)
        return sorted(found.values(), key=lambda entry: entry.checkpoint_id, reverse=True), damaged

    def _mend_from_journal(self) -> bool:
        """Write again, from the journal, the copies in ``history/`` that do not verify; whether any was.

        A journal-first put writes its copy unflushed: a power loss may leave it empty or torn while the
        journal line, its commit point, holds it whole (issue 21). Once per namespace object, at the first read
        that meets such a file, under the writers' lock, as :meth:`_catch_up` writes a missing one.
        """
        if self._mended:
            return False
        self._mended = True
        try:
            with self.store.locked():
                notes = catch_up(self.layout, "json")
        except HandoffError:
            return False  # the damaged files are reported by the read, as before
        for note in notes:
            warnings.warn(f"{self.path}: {note}", MendedCheckpointWarning, stacklevel=3)
        return bool(notes)

    def _catch_up(self) -> None:
        """At a process's first read, copy back a checkpoint only the journal holds (a put killed after its commit)."""
        if not self._caught_up and journal_ahead(self.layout):
            with self.store.locked():
                catch_up(self.layout, "json")
        self._caught_up = True

    def _only_newest(self, path: Path, generation: int) -> bool:
        """Whether ``history/`` holds *generation*'s file (regular, the primary's size) and not the next one's."""
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size != os.lstat(self.layout.primary("json")).st_size:
                return False  # a copy cut short or replaced: the index reads it and says so
            # a newer generation whose primary a crash lost (or that does not verify) sends the reader to the index
            return not os.path.lexists(self.layout.generation_file(generation + 1, "json"))
        except OSError:
            return False

    def _entry(self, found: CheckpointFile, path: Path) -> Entry:
        record = found.record
        values = record.get("channel_values")
        blobs = blob_refs(values.values()) if isinstance(values, dict) else frozenset()
        return Entry(
            record["checkpoint_id"],
            record.get("parent_checkpoint_id"),
            record["metadata"],
            path,
            found.generation,
            blobs,
        )

    @staticmethod
    def checkpoint(entry: Entry) -> CheckpointFile:
        """The verified checkpoint file of *entry*, as the saver reads it (its record)."""
        return read_checkpoint(entry.path)

    @staticmethod
    def handoff(entry: Entry) -> Handoff:
        """The verified checkpoint file of *entry*, as a whole handoff."""
        return load(entry.path, follow_symlinks=False, origin="store")

    def remove(self, doomed: list[Entry], writes_of: Any, damaged: Sequence[Damaged] = ()) -> None:
        """Delete checkpoints (their files and pending writes), and *damaged* files, under the writers' lock.

        Their journal lines lose their words (:func:`~handoff_files.thread.redact.redact`). If the
        newest checkpoint goes, the primary, ``state.json`` and the journal are brought back
        in line with the newest that stays (see :meth:`_newest_gone`): neither ``handoff show``
        nor a restore hands back a deleted checkpoint or reports one lost.

        :raises HandoffWriteError: if a file cannot be deleted.
        """
        if not doomed and not damaged:
            return
        self._top = None  # what this process saved last may be gone: the next save and lookup look again
        with self.store.locked():
            newest = max((entry.generation for entry in self.scan()[0]), default=0)
            for path in [*(entry.path for entry in doomed), *(bad.path for bad in damaged)]:
                unlink_in(path)
            # in writes/ as opened here, never through a link planted in its place
            with open_dir_under(self.path, self.path / WRITES_DIR) as folder:
                for entry in doomed if folder is not None else []:
                    for path in writes_of(self.path, entry.checkpoint_id, entry.generation):
                        unlink_in(path, folder)
                gone = {bad.generation for bad in damaged}  # a damaged file's writes, found by their generation
                for name in os.listdir(folder) if folder is not None and gone else []:
                    if writes_owner(name)[0] in gone:
                        unlink_in(self.path / WRITES_DIR / name, folder)
            # their words leave the journal too: a deleted checkpoint's summary line does not outlive it
            redact(self.store.journal, [*(entry.generation for entry in doomed), *(bad.generation for bad in damaged)])
            if any(entry.generation == newest for entry in doomed):
                self._newest_gone()
            self.collect_blobs()

    def _newest_gone(self) -> None:
        """The newest checkpoint was deleted: make the primary, ``state.json`` and the journal agree again.

        The newest remaining checkpoint is sealed again as the next generation (same checkpoint,
        same record) and its older file removed, so a restore finds it with nothing reported lost;
        with none left, the primary and ``state.json`` go, so no deleted checkpoint is shown.
        """
        survivors = self.scan()[0]
        if survivors:
            top = max(survivors, key=lambda entry: entry.generation)
            self.store.save(self.handoff(top))
            top.path.unlink(missing_ok=True)
            return
        for name in (*PRIMARY_NAMES, MIRROR_NAME):
            with contextlib.suppress(FileNotFoundError):
                (self.path / name).unlink()

    def drop_pruned_writes(self, writes_of: Any) -> None:
        """The store pruned ``history/`` to ``keep`` files: drop the writes of checkpoints older than all it kept.

        Only older ones: a newer checkpoint's writes may be there before its ``put`` (LangGraph's
        async durability writes a step's results while the put runs). Housekeeping after the
        commit: a file that cannot be removed stays, and never fails the put.
        """
        with self.store.locked():
            kept = self.scan()[0]
            if not kept:
                return
            oldest = min(entry.checkpoint_id for entry in kept)
            oldest_generation = min(entry.generation for entry in kept)
            kept_names = {p.name for entry in kept for p in writes_of(self.path, entry.checkpoint_id, entry.generation)}
            # a link in writes/' place is left alone here (put_writes refuses it, naming it)
            with (
                contextlib.suppress(OSError, HandoffError),
                open_dir_under(self.path, self.path / WRITES_DIR) as folder,
            ):
                for name in os.listdir(folder) if folder is not None else []:
                    generation, stem = writes_owner(name)
                    older = stem < oldest if generation is None else generation < oldest_generation
                    if stem and name not in kept_names and older:
                        with contextlib.suppress(OSError):
                            os.unlink(name, dir_fd=folder)
        self.collect_blobs()

    def collect_blobs(self) -> None:
        """Remove the blobs no checkpoint and no pending write names any more. Call under the lock.

        Only when every checkpoint and writes file reads: one that does not may name any blob.
        """
        if not (self.path / BLOBS_DIR).is_dir():
            return
        entries, damaged = self.scan()
        if damaged:
            return
        named = {digest for entry in entries for digest in entry.blobs}
        try:
            with open_dir_under(self.path, self.path / WRITES_DIR) as folder:
                for name in os.listdir(folder) if folder is not None else []:
                    named |= blob_refs(record.get("value") for record in read_writes(self.path / WRITES_DIR / name))
        except (OSError, HandoffError):
            return
        collect(self.path, frozenset(named))
