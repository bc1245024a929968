"""Watching a folder: a hint whenever a file in it may have changed, and a rescan timer as the safety net."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from handoff_files.foundation.errors import HandoffNotFoundError, HandoffValidationError
from handoff_files.watchers.observer import DEFAULT_RESCAN, start_observer, stop_observer

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

__all__ = ["DirectoryWatch", "watch_directory"]

logger = logging.getLogger(__name__)


class DirectoryWatch:
    """A running :func:`watch_directory`; :meth:`stop` ends it. A context manager: leaving the block stops it."""

    def __init__(self, path: Path, on_hint: Callable[[], None], rescan: float) -> None:
        self.path = path
        self._on_hint = on_hint
        self._rescan = rescan
        self._stopping = threading.Event()
        self._observer: BaseObserver | None = None
        self._timer: threading.Thread | None = None

    def _start(self, wanted: Callable[[str], bool]) -> None:
        self._observer = start_observer(self.path, self._poke, wanted)
        self._timer = threading.Thread(target=self._tick, name=f"handoff-rescan {self.path.name}", daemon=True)
        self._timer.start()

    def _poke(self) -> None:
        if self._stopping.is_set():
            return
        try:
            self._on_hint()
        except Exception:  # the caller's bug must not end the watch silently: log it, keep watching
            logger.exception("directory watch on %s: on_hint raised; still watching", self.path)

    def _tick(self) -> None:
        while not self._stopping.wait(self._rescan):
            self._poke()

    def stop(self) -> None:
        """Stop watching and join the observer's and the rescan timer's threads; idempotent.

        No hint is given after this returns (one running at the time finishes first), unless it
        is called from ``on_hint`` itself, which returns at once.
        """
        first = not self._stopping.is_set()
        self._stopping.set()
        stop_observer(self._observer, first=first)
        timer = self._timer
        if timer is not None and timer is not threading.current_thread():
            timer.join()

    def __enter__(self) -> DirectoryWatch:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "stopped" if self._stopping.is_set() else "running"
        return f"<DirectoryWatch {os.fspath(self.path)!r}: {state}>"


def watch_directory(
    path: str | os.PathLike[str],
    on_hint: Callable[[], None],
    *,
    rescan: float = DEFAULT_RESCAN,
    wanted: Callable[[str], bool] | None = None,
) -> DirectoryWatch:
    """Call *on_hint* whenever a file in *path* may have changed, and every *rescan* seconds regardless.

    A hint carries no data: the caller re-reads what it cares about. Events come from watchdog
    (not recursive: only *path*'s own entries); the timer is the safety net for events the
    kernel drops. *on_hint* runs on watchdog's thread or the timer's, possibly at the same time,
    so it must be quick and thread-safe (``threading.Event.set`` is the usual choice); an
    exception it raises is logged (logger ``handoff_files.watchers.directory``) and the watch goes on.

    :param path: an existing directory.
    :param on_hint: called with no arguments on each hint.
    :param rescan: seconds between hints when no event comes (more than 0).
    :param wanted: which file names count (an atomic rename counts if its source or destination
        does); default: every file.
    :returns: the running :class:`DirectoryWatch`.
    :raises HandoffNotFoundError: if *path* is not a directory.
    :raises HandoffValidationError: if *rescan* is not more than 0.
    :raises HandoffError: if the directory cannot be watched.
    """
    directory = Path(path).absolute()
    if not rescan > 0:  # `not >`: NaN is refused too
        msg = f"rescan must be more than 0 seconds, not {rescan!r}"
        raise HandoffValidationError(directory, msg)
    if not directory.is_dir():
        msg = "no such directory to watch; create it first"
        raise HandoffNotFoundError(directory, msg)
    handle = DirectoryWatch(directory, on_hint, rescan)
    handle._start(wanted if wanted is not None else _any_name)
    return handle


def _any_name(_name: str) -> bool:
    return True
