"""Which thread a tool call works on: the server's one thread, or a named thread under its root."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from handoff_files.foundation.commandline import suggest
from handoff_files.foundation.errors import HandoffError, HandoffValidationError
from handoff_files.foundation.names import check_folder_name, check_folder_path, is_folder_name
from handoff_files.foundation.safe_paths import LINK_REASON, dir_under
from handoff_files.thread.retention import is_thread

__all__ = ["Targets"]

_NOT_A_FOLDER_NAME: Final = (
    "its name is not a thread name here (lower-case letters, digits, '.', '_' or '-'): rename the folder"
)


@dataclass(frozen=True, slots=True)
class Targets:
    """The server's threads: one (``thread``) or any under ``root``, named by the call.

    New threads (an adoption) go under ``root``; with one thread, its parent is the root. A thread
    named under the root is a real folder there: a symbolic link planted in its place is refused,
    so no call reads or writes outside the root (the root itself, and ``--thread``, are the
    user's to name, links and all). Its name follows the rule of a LangGraph saver's folders
    (:data:`~handoff_files.foundation.names.FOLDER_PATTERN`: an id in lower case).
    """

    thread: Path | str | None
    root: Path | str

    @classmethod
    def of(cls, *, thread: str | os.PathLike[str] | None, root: str | os.PathLike[str] | None) -> Targets:
        """The targets for ``handoff mcp --thread DIR`` or ``--root DIR`` (exactly one of them).

        :raises HandoffValidationError: if both or neither is given.
        """
        if (thread is None) == (root is None):
            msg = "give the server one thread (--thread DIR) or a root of threads (--root DIR), not both or neither"
            raise HandoffValidationError(os.fspath(thread or root or "."), msg)
        given = thread if thread is not None else root
        if isinstance(given, str) and given.startswith("s3://"):  # a bucket: threads are prefixes under it
            from handoff_files.storage import open_storage  # noqa: PLC0415 -- obstore only for a bucket

            url = open_storage(given).where  # checked (and named without any credential) as the store names it
            if thread is not None:
                if "/" not in url.removeprefix("s3://"):  # the bucket itself: no root for new threads above it
                    msg = "a thread on a bucket is a prefix in it: --thread s3://BUCKET/THREAD (or --root s3://BUCKET)"
                    raise HandoffValidationError(url, msg)
                return cls(url, url.rpartition("/")[0])
            return cls(None, url)
        check_folder_path(thread or root or ".", "the MCP server (its --thread or --root)")
        if thread is not None:
            path = Path(os.path.abspath(thread))  # noqa: PTH100 -- no symlink resolved behind the user's back
            return cls(path, path.parent)
        return cls(None, Path(os.path.abspath(root or ".")))  # noqa: PTH100

    def pick(self, name: str | None) -> Path | str:
        """The thread a call names (None: the server's one thread).

        :raises HandoffValidationError: if a name is missing under a root, given for a one-thread
            server (unless it is that thread's own name), or not a valid thread id.
        :raises InvalidNameError: if the name is a symbolic link under the root.
        """
        if self.thread is not None:
            if name in (None, "", _name(self.thread)):
                return self.thread
            msg = f"this server serves the one thread {_name(self.thread)!r}; leave out thread (it was {name!r})"
            raise HandoffValidationError(self.thread, msg)
        if not name:
            msg = "this server serves the threads under its root: name one with thread"
            raise HandoffValidationError(self.root, msg)
        return self.new(name)

    def new(self, name: str) -> Path | str:
        """A thread directory named *name* under the root (an adoption's new thread).

        :raises InvalidNameError: if *name* is not a valid folder name (lower case; no paths, no
            ``..``), or is a symbolic link under the root.
        :raises HandoffValidationError: if it is there but not a folder.
        """
        check_folder_name(name, "thread", self.root)
        if isinstance(self.root, str):  # under a bucket prefix: no link can be planted in a key
            return f"{self.root}/{name}"
        path = self.root / name
        dir_under(self.root, path)  # refuses a link in the thread's place, naming it; a missing one is made on save
        return path

    def threads(self) -> list[tuple[str, Path | str, str | None]]:
        """The threads served, sorted: each one's name, folder and why it cannot be used (None if it can).

        Under a root: every folder there holding a thread (its files, or at least ``history/``);
        a symbolic link, or a folder whose name breaks the rule, is listed with its problem. Reads only.

        :raises HandoffError: if the root cannot be listed.
        """
        if self.thread is not None:
            return [(_name(self.thread), self.thread, None)]
        if isinstance(self.root, str):
            return _bucket_threads(self.root)
        try:
            entries = sorted(os.scandir(self.root), key=lambda entry: entry.name)
        except FileNotFoundError:
            return []
        except OSError as exc:
            msg = f"cannot list the threads under the root: {exc.strerror or exc}"
            raise HandoffError(self.root, msg) from exc
        found: list[tuple[str, Path | str, str | None]] = []
        for entry in entries:
            path = Path(entry.path)
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                found.append((entry.name, path, LINK_REASON))
            elif entry.is_dir(follow_symlinks=False):
                try:
                    if not is_thread(path):
                        continue
                except HandoffError as exc:
                    found.append((entry.name, path, exc.reason))
                    continue
                problem = None if is_folder_name(entry.name) else _NOT_A_FOLDER_NAME
                found.append((entry.name, path, problem))
        return found

    def adoptions(self) -> str:
        """Where an adoption makes its new thread, in words for the tool's description."""
        if self.thread is None:
            return f"The new thread is made under this server's root, {self.root}."
        new = f"{self.root}/NEW_THREAD" if isinstance(self.root, str) else f"{self.root}{os.sep}NEW_THREAD"
        return (
            f"The new thread is made beside this server's thread, in {self.root}; this server serves only "
            f"{_name(self.thread)!r}, so serve the new one with {suggest('handoff', 'mcp', '--thread', new)}."
        )


def _name(thread: Path | str) -> str:
    """A thread's name: its folder's, or the last part of its URL."""
    return thread.rpartition("/")[2] if isinstance(thread, str) else thread.name


def _bucket_threads(root: str) -> list[tuple[str, Path | str, str | None]]:
    """The threads under a bucket prefix: each first part of a key that has ``history/`` objects under it."""
    from handoff_files.storage import open_storage  # noqa: PLC0415 -- obstore only for a bucket

    names = sorted({key.split("/")[0] for key in open_storage(root).list("") if key.split("/")[1:2] == ["history"]})
    return [(name, f"{root}/{name}", None if is_folder_name(name) else _NOT_A_FOLDER_NAME) for name in names]
