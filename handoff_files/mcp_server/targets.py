"""Which thread a tool call works on: the server's one thread, or a named thread under its root."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from handoff_files.foundation.errors import HandoffValidationError
from handoff_files.foundation.names import check_id
from handoff_files.foundation.safe_paths import dir_under

__all__ = ["Targets"]


@dataclass(frozen=True, slots=True)
class Targets:
    """The server's threads: one (``thread``) or any under ``root``, named by the call.

    New threads (an adoption) go under ``root``; with one thread, its parent is the root. A thread
    named under the root is a real folder there: a symbolic link planted in its place is refused,
    so no call reads or writes outside the root (the root itself, and ``--thread``, are the
    user's to name, links and all).
    """

    thread: Path | None
    root: Path

    @classmethod
    def of(cls, *, thread: str | os.PathLike[str] | None, root: str | os.PathLike[str] | None) -> Targets:
        """The targets for ``handoff mcp --thread DIR`` or ``--root DIR`` (exactly one of them).

        :raises HandoffValidationError: if both or neither is given.
        """
        if (thread is None) == (root is None):
            msg = "give the server one thread (--thread DIR) or a root of threads (--root DIR), not both or neither"
            raise HandoffValidationError(os.fspath(thread or root or "."), msg)
        if thread is not None:
            path = Path(os.path.abspath(thread))  # noqa: PTH100 -- no symlink resolved behind the user's back
            return cls(path, path.parent)
        return cls(None, Path(os.path.abspath(root or ".")))  # noqa: PTH100

    def pick(self, name: str | None) -> Path:
        """The thread a call names (None: the server's one thread).

        :raises HandoffValidationError: if a name is missing under a root, given for a one-thread
            server (unless it is that thread's own name), or not a valid thread id.
        :raises InvalidNameError: if the name is a symbolic link under the root.
        """
        if self.thread is not None:
            if name in (None, "", self.thread.name):
                return self.thread
            msg = f"this server serves the one thread {self.thread.name!r}; leave out thread (it was {name!r})"
            raise HandoffValidationError(self.thread, msg)
        if not name:
            msg = "this server serves the threads under its root: name one with thread"
            raise HandoffValidationError(self.root, msg)
        return self.new(name)

    def new(self, name: str) -> Path:
        """A thread directory named *name* under the root (an adoption's new thread).

        :raises InvalidNameError: if *name* is not a valid thread id (no paths, no ``..``), or is a
            symbolic link under the root.
        :raises HandoffValidationError: if it is there but not a folder.
        """
        check_id(name, "thread", self.root)
        path = self.root / name
        dir_under(self.root, path)  # refuses a link in the thread's place, naming it; a missing one is made on save
        return path
