"""The watchdog observer: starting and stopping it, and the handler that turns file events into hints."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from watchdog.events import (
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from handoff_files.foundation.errors import HandoffError

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

__all__ = ["DEFAULT_RESCAN", "start_observer", "stop_observer"]

#: Seconds between re-reads when no hint arrives: the safety net for events the kernel drops.
DEFAULT_RESCAN: Final = 5.0

# what can change a file's bytes or mtime; never opened / closed-without-writing, which our own reads raise
_HINTS: Final[list[type[FileSystemEvent]]] = [
    FileMovedEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileDeletedEvent,
]


class _Hint(FileSystemEventHandler):
    """Turns a watchdog event that touches a wanted file into a poke; never reads, never raises."""

    def __init__(self, poke: Callable[[], None], wanted: Callable[[str], bool]) -> None:
        self._poke = poke
        self._wanted = wanted

    def on_any_event(self, event: FileSystemEvent) -> None:
        # an atomic save is a move whose *destination* is the wanted file; our temp files and
        # state.json / journal.jsonl never match a primary, nor does anything in a subfolder (not watched)
        if event.is_directory:
            return
        for path in (event.src_path, event.dest_path):
            if path and self._wanted(Path(os.fsdecode(path)).name):
                self._poke()
                return


def start_observer(path: Path, poke: Callable[[], None], wanted: Callable[[str], bool]) -> BaseObserver:
    """Start a watchdog observer on *path*'s own entries (not recursive) that pokes on each change hint.

    :param path: the directory to watch.
    :param poke: called with no arguments, on watchdog's thread, for each event touching a wanted name
        (an atomic rename counts if its source or its destination is wanted).
    :param wanted: which file names count.
    :returns: the running observer; :func:`stop_observer` ends it.
    :raises HandoffError: if the directory cannot be watched (the inotify limits among the reasons).
    """
    try:
        observer = Observer()
    except OSError as exc:
        raise HandoffError(path, _cannot_watch(exc)) from exc
    try:
        observer.schedule(_Hint(poke, wanted), os.fspath(path), recursive=False, event_filter=_HINTS)
        observer.start()
    except OSError as exc:
        observer.stop()  # the constructor started its inotify reader thread: end it
        raise HandoffError(path, _cannot_watch(exc)) from exc
    return observer


def stop_observer(observer: BaseObserver | None, *, first: bool) -> None:
    """Stop an observer (once) and join it, unless it never started or this is its own thread.

    :param observer: the observer, or None if none was started.
    :param first: whether this is the first stop asked for (a later one only joins).
    """
    if observer is None:
        return
    if first:
        observer.stop()
    # joining a thread never started raises, and a thread cannot join itself
    if observer.ident is not None and observer is not threading.current_thread():
        observer.join()


def _cannot_watch(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EMFILE):
        return (
            f"cannot watch it: {exc.strerror or exc} (the inotify limits fs.inotify.max_user_watches / "
            "max_user_instances are reached; raise them with sysctl)"
        )
    return f"cannot watch it: {exc.strerror or exc}"
