"""Where a saver's threads and namespaces are under its root: each used only as a real folder, no link followed."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Final

from handoff_files.foundation.lock import writer_lock
from handoff_files.langgraph.layout import (
    NAMESPACES_DIR,
    folder_name,
    namespace_dirs,
    namespace_ready,
    thread_dirs,
)
from handoff_files.langgraph.spares import SPARES_DIR, Spares, recover, spare_owner, spares_of, to_recover
from handoff_files.langgraph.store import Namespace
from handoff_files.thread.settings import Durability
from handoff_files.thread.signatures import KeySource

if TYPE_CHECKING:
    from handoff_files.thread.signatures import KeyChoice

__all__ = ["Folders"]

_RECOVERY_WAIT: Final = 2.0  # seconds a recovery waits for a namespace's writer; a busy one's spare is left


class Folders:
    """The thread and namespace folders under a saver's root, and one :class:`Namespace` per folder.

    Every lookup that reads or writes checks the folders on the way from the root (see
    :func:`~handoff_files.langgraph.layout.namespace_ready`): a symbolic link planted for a thread,
    ``namespaces/``, a namespace, ``history/`` or ``writes/`` is refused with an
    :class:`~handoff_files.foundation.errors.InvalidNameError` naming it.

    :param root: the saver's root (the caller's: a link there is followed, as they named it).
    :param durability: each namespace's saves'.
    :param keep: the newest checkpoints each namespace keeps, or None for all.
    :param signing_key: what each namespace's saves are signed with, as :class:`HandoffStore` takes it.
    """

    def __init__(self, root: Path, *, durability: Durability, keep: int | None, signing_key: KeyChoice = None) -> None:
        self.root = root
        if signing_key is not None and signing_key is not False:  # an explicit key is read now: a bad one fails here
            signing_key = KeySource(signing_key, root).key()
        self.signing_key = signing_key
        self.durability: Durability = durability
        self.keep = keep
        self._namespaces: dict[Path, Namespace] = {}
        self._lock = threading.Lock()
        if to_recover(root / SPARES_DIR):  # writes a power loss left in spares, before anything reads
            recover(root, spare_owner, lambda ns_dir: writer_lock(ns_dir, timeout=_RECOVERY_WAIT))

    @property
    def spares(self) -> Spares:
        """The empty files a checkpoint's first pending writes take (see :mod:`~handoff_files.langgraph.spares`)."""
        return spares_of(self.root)

    def thread_dir(self, thread_id: str) -> Path:
        """The folder of a thread (its root namespace)."""
        return self.root / folder_name(str(thread_id))

    def ns_dir(self, thread_id: str, checkpoint_ns: str) -> Path:
        """The folder of one namespace of a thread."""
        thread_dir = self.thread_dir(thread_id)
        return thread_dir if not checkpoint_ns else thread_dir / NAMESPACES_DIR / folder_name(checkpoint_ns)

    def namespace(self, path: Path) -> Namespace:
        """The namespace at *path* (one object per folder, kept: it caches the checkpoint index)."""
        with self._lock:
            namespace = self._namespaces.get(path)
            if namespace is None:
                namespace = Namespace(path, durability=self.durability, keep=self.keep, signing_key=self.signing_key)
                self._namespaces[path] = namespace
            return namespace

    def ready(self, path: Path, *, create: bool = False) -> Namespace | None:
        """The namespace at *path*, its folders checked (made, with *create*); None if it does not exist.

        :raises InvalidNameError: for a symbolic link on the way.
        """
        return self.namespace(path) if namespace_ready(self.root, path, create=create) else None

    def namespaces_of(self, thread_dir: Path) -> list[Namespace]:
        """Every namespace of a thread (its root namespace first), each checked."""
        return [self.namespace(path) for path in namespace_dirs(self.root, thread_dir)]

    def thread_dirs(self) -> list[Path]:
        """Every thread folder under the root; a link among them is refused."""
        return thread_dirs(self.root)

    def forget(self, thread_dir: Path) -> None:
        """Drop the namespaces of a deleted thread."""
        with self._lock:
            for path in [p for p in self._namespaces if p == thread_dir or thread_dir in p.parents]:
                del self._namespaces[path]
