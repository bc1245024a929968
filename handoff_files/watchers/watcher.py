"""The watcher: the newest verified handoff of a thread kept in memory, and a callback whenever it changes."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Final, TypeVar

from handoff_files.format.loader import load
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    NoHandoffError,
    UnsealedEditError,
)
from handoff_files.foundation.names import check_folder_path
from handoff_files.thread.layout import PRIMARY_NAMES
from handoff_files.thread.mirror import primary_stamp
from handoff_files.thread.pins import pin_of
from handoff_files.thread.results import Restored
from handoff_files.thread.signatures import verified
from handoff_files.thread.store import HandoffStore
from handoff_files.watchers.observer import DEFAULT_RESCAN, start_observer, stop_observer

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

    from handoff_files.format.model import Handoff

__all__ = ["DEFAULT_DEBOUNCE", "DEFAULT_RESCAN", "Watcher", "watch"]

#: Seconds of quiet after the last hint before the primary is re-read (a save is a burst of events).
DEFAULT_DEBOUNCE: Final = 0.05
# a steady stream of hints (a writer saving in a loop) still gets a re-read every this many debounce periods
_MAX_DEFER: Final = 10

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class Watcher:
    """A running watch over one thread directory; made by :func:`watch`, stopped by :meth:`stop`.

    A context manager: leaving the ``with`` block stops it.
    """

    def __init__(
        self,
        store: HandoffStore,
        on_change: Callable[[Restored], None],
        on_error: Callable[[HandoffError], None] | None,
        debounce: float,
        rescan: float,
    ) -> None:
        self._store = store
        self._on_change = on_change
        self._on_error = on_error
        self._debounce = debounce
        self._rescan = rescan
        self._cond = threading.Condition()
        self._current: Restored | None = None
        self._sealed: tuple[int, str | None] = (0, None)  # generation and seal of the newest sealed delivery
        self._error: tuple[str, str, str] | None = None  # the last failure reported, so each is reported once
        self._first_hint: float | None = None
        self._last_hint: float | None = None
        self._stopping = False
        self._observer: BaseObserver | None = None
        self._worker: threading.Thread | None = None
        # callbacks found while starting, run first on the watcher's thread (None once it runs)
        self._held: list[Callable[[], None]] | None = []

    @property
    def path(self) -> Path:
        """The thread directory watched (a thread on object storage has none: :attr:`where`)."""
        return self._store.path

    @property
    def where(self) -> str:
        """The thread watched, as a person names it: its folder's path, or its ``s3://`` URL."""
        return self._store.where

    @property
    def current(self) -> Restored | None:
        """The latest :class:`Restored` delivered (set just before ``on_change`` gets it), or None."""
        with self._cond:
            return self._current

    def wait_for(self, generation: int, timeout: float) -> Restored | None:
        """Wait at most *timeout* seconds until :attr:`current` holds *generation* or a newer one: then it;
        None on timeout or once the watcher is stopped without it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                current = self._current
                if current is not None and current.generation >= generation:
                    return current
                left = deadline - time.monotonic()
                if left <= 0 or self._stopping:
                    return None
                self._cond.wait(left)

    def stop(self) -> None:
        """Stop watching and join the observer's and the watcher's threads; idempotent. A callback running
        at the time finishes first, none runs after; called from a callback, it returns at once."""
        with self._cond:
            first = not self._stopping
            self._stopping = True
            self._cond.notify_all()
        stop_observer(self._observer, first=first)
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join()

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        current = self.current
        held = "nothing yet" if current is None else f"generation {current.generation}"
        state = "stopped" if self._stopping else "running"
        return f"<Watcher {self.where!r}: {held}, {state}>"

    # -- start and stop ------------------------------------------------------------------------

    def _start(self) -> None:
        self._observer = start_observer(self.path, self._hint, PRIMARY_NAMES.__contains__)
        # restore only once the watch exists: a save landing in between is both read here and hinted;
        # then read the primary once (an edit restore() passes over): when watch() returns,
        # `current` is up to date, and the callbacks this found wait for the watcher's thread
        try:
            initial: Restored | None = self._store.restore()
        except NoHandoffError:
            initial = None
        except BaseException:
            self.stop()
            raise
        if initial is not None:
            self._deliver(initial)
        self._guarded_refresh()
        self._worker = threading.Thread(target=self._run, name=f"handoff-watch {self.path.name}", daemon=True)
        self._worker.start()

    # -- the watcher's own thread ---------------------------------------------------------------

    def _hint(self) -> None:
        """Note that the primary may have changed (called on watchdog's thread)."""
        now = time.monotonic()
        with self._cond:
            if self._first_hint is None:
                self._first_hint = now
            self._last_hint = now
            self._cond.notify_all()

    def _run(self) -> None:
        held, self._held = self._held, None
        for callback in held or ():
            if not self._stopping:
                callback()
        while self._wait(time.monotonic() + self._rescan):
            self._guarded_refresh()

    def _wait(self, rescan_at: float) -> bool:
        """Sleep until the hints have settled or the rescan is due; False once stopping."""
        with self._cond:
            while not self._stopping:
                if self._first_hint is not None and self._last_hint is not None:
                    due = min(self._last_hint + self._debounce, self._first_hint + self._debounce * _MAX_DEFER)
                else:
                    due = rescan_at
                left = due - time.monotonic()
                if left <= 0:
                    # hints that arrive from here on ask for another read after this one
                    self._first_hint = self._last_hint = None
                    return True
                self._cond.wait(left)
            return False

    def _guarded_refresh(self) -> None:
        try:
            self._refresh()
        except Exception:  # a bug must not end the watch silently: say so and keep watching
            logger.exception("handoff watcher for %s: re-read failed; still watching", self.where)

    def _refresh(self) -> None:
        """Re-read the primary, verify it, and deliver it if it is new."""
        store = self._store
        if not store.primary.exists() and any((self.path / name).exists() for name in PRIMARY_NAMES):
            # the format is chosen from the files present: a first save may have made handoff.yaml
            try:
                store = self._store = HandoffStore(self.path)
            except HandoffError as exc:
                self._report(exc)
                return
        path = store.primary
        pinned = _pinned(self.path)
        try:
            handoff = verified(load(path, follow_symlinks=False, written=primary_stamp(store.layout.mirror)), path)
        except UnsealedEditError as exc:
            self._edited(exc, path, pinned=pinned)
            return
        except HandoffError as exc:
            self._primary_failed(store, exc)
            return
        self._error = None
        if handoff.seal is None:  # an older version migrated in memory: verified by its own checksum
            self._offer_migrated(handoff, path)
        elif pinned:  # the restore applies the pin: what it returns is what counts
            self._offer_pinned(store)
        else:
            self._offer_sealed(Restored(handoff, "primary", path))

    def _offer_migrated(self, handoff: Handoff, path: Path) -> None:
        """An older version's primary, migrated in memory: delivered unless generation numbers would go back."""
        current = self._current
        if current is not None and current.handoff == handoff:
            return
        if handoff.generation <= self._sealed[0]:  # generations only grow, whatever the file's version
            msg = (
                f"holds an older-version handoff of generation {handoff.generation}, but generation "
                f"{self._sealed[0]} was already delivered; kept generation {self._sealed[0]}"
            )
            self._report(HandoffError(path, msg))
            return
        note = "an older version, migrated in memory; `handoff migrate` rewrites it as a sealed generation"
        self._deliver(Restored(handoff, "primary", path, (note,)))

    def _edited(self, exc: UnsealedEditError, path: Path, *, pinned: bool) -> None:
        """A person's edit of the primary: handed on (``edited=True``), unless the folder is pinned."""
        if exc.handoff is None:
            self._report(exc)
        elif pinned:  # nobody's signature is on a person's edit: on a pinned folder it is not handed on
            msg = f"{exc.reason}; not handed on: the folder is pinned to signed generations (`handoff seal` signs it)"
            self._report(HandoffError(path, msg))
        else:
            self._error = None
            self._offer_edit(exc.handoff, exc.reason, path)

    def _offer_pinned(self, store: HandoffStore) -> None:
        """On a pinned folder: offer what a restore returns (the newest generation a trusted key signed)."""
        try:
            self._offer_sealed(store.restore())
        except HandoffError as exc:
            self._report(exc)

    def _offer_sealed(self, restored: Restored) -> None:
        generation, seal = restored.generation, str(restored.handoff.seal)
        current = self._current
        newest, newest_seal = self._sealed
        if current is not None and not current.edited and current.handoff.seal == restored.handoff.seal:
            return  # what we hold already
        if generation > newest or (generation == newest and seal == newest_seal):
            # newer, or the sealed generation we hold again after a person's edit was reverted
            self._deliver(restored)
            return
        msg = (
            f"holds generation {generation}, but generation {newest} was already delivered; "
            f"kept generation {newest} (was an older file copied over the primary?)"
        )
        self._report(HandoffError(restored.path, msg))

    def _offer_edit(self, edited: Handoff, reason: str, path: Path) -> None:
        current = self._current
        if current is not None and current.edited and current.handoff == edited:
            return  # the same edit, read again
        problems = [reason]
        newest = self._sealed[0]
        if edited.generation < newest:
            problems.append(
                f"edited from generation {edited.generation}, behind generation {newest} already delivered: "
                "the edit may undo that generation's changes"
            )
        self._deliver(Restored(edited, "primary", path, tuple(problems), edited=True))

    def _primary_failed(self, store: HandoffStore, exc: HandoffError) -> None:
        """The primary is missing or does not verify: report it, and take a newer verified generation if any."""
        if not (isinstance(exc, HandoffNotFoundError) and self._current is None):
            self._report(exc)  # a thread with nothing saved yet has no primary: that is no failure
        try:
            restored = store.restore()
        except HandoffError:
            return
        if not restored.edited and restored.generation > self._sealed[0]:
            self._deliver(restored)

    # -- delivery ------------------------------------------------------------------------------

    def _set_current(self, restored: Restored) -> None:
        with self._cond:
            self._current = restored
            if not restored.edited:
                seal = restored.handoff.seal
                self._sealed = (restored.generation, None if seal is None else str(seal))
            self._cond.notify_all()

    def _deliver(self, restored: Restored) -> None:
        if self._stopping:
            return
        self._set_current(restored)
        self._call(self._on_change, restored)

    def _report(self, exc: HandoffError) -> None:
        key = (type(exc).__name__, exc.path, exc.reason)
        if key == self._error or self._stopping:
            return
        self._error = key
        if self._on_error is None:
            logger.warning("handoff watcher: %s", exc)
        else:
            self._call(self._on_error, exc)

    def _call(self, callback: Callable[[_T], None], argument: _T) -> None:
        if self._held is not None:  # still starting, on the caller's thread: callbacks wait for ours
            self._held.append(lambda: self._call(callback, argument))
            return
        try:
            callback(argument)
        except Exception:
            # a callback's failure is the caller's bug, not a handoff problem: log it, keep watching
            logger.exception("handoff watcher for %s: callback %r raised; still watching", self.where, callback)


def watch(
    thread_dir: str | os.PathLike[str],
    *,
    on_change: Callable[[Restored], None],
    on_error: Callable[[HandoffError], None] | None = None,
    debounce: float = DEFAULT_DEBOUNCE,
    rescan: float = DEFAULT_RESCAN,
) -> Watcher:
    """Watch a thread directory and call back with each newly verified handoff; running on return.

    At start the thread is restored (:meth:`HandoffStore.restore`): :attr:`Watcher.current`
    holds the result when this returns, and ``on_change`` gets it first; a thread with nothing
    saved yet starts with None and no call. Then every file event touching the primary
    (``handoff.json`` / ``handoff.yaml``, an atomic save's rename onto it included) is a hint:
    once the events settle for *debounce* seconds the primary is re-read and re-verified, as it
    is every *rescan* seconds without events (the net for events the kernel drops).

    What a re-read delivers to ``on_change``, as a :class:`Restored` from ``"primary"``: a sealed
    generation newer than the last one delivered (never an older one); a person's valid but
    unsealed edit, ``edited=True``, once per distinct content. A primary that is invalid,
    damaged, missing or older goes to ``on_error``, once per distinct failure, and never
    replaces :attr:`Watcher.current`; if :meth:`HandoffStore.restore` then finds a newer
    verified generation in ``history/`` (or rebuilds one), that is delivered.

    Callbacks run on the watcher's own thread, one at a time. An exception a callback raises
    is logged (logger ``handoff_files.watchers.watcher``) and the watch goes on; without ``on_error``,
    failures are logged as warnings.

    :param thread_dir: the thread directory (it must exist; the primary need not), or a thread's
        ``s3://`` URL: then ``handoff.json`` is polled every *rescan* seconds with a conditional
        ``GET`` (:mod:`~handoff_files.watchers.polling`), and each change is delivered from a restore.
    :param on_change: called with each newly delivered :class:`Restored`.
    :param on_error: called with each distinct :class:`HandoffError` met on a re-read.
    :param debounce: seconds of quiet after the last event before re-reading (at least 0).
    :param rescan: seconds between re-reads when no event comes (more than 0).
    :returns: the running :class:`Watcher`.
    :raises HandoffNotFoundError: if the thread directory does not exist.
    :raises HandoffValidationError: if *debounce* or *rescan* is out of range, or the
        directory's name is not a valid id.
    :raises HandoffError: if the directory cannot be watched or read.
    """
    if not (url := isinstance(thread_dir, str) and "://" in thread_dir):
        check_folder_path(thread_dir, "a thread folder")
    path = thread_dir if url else Path(thread_dir).absolute()  # a URL is never made a path
    if not debounce >= 0 or not rescan > 0:  # `not >=`: NaN is refused too
        msg = f"debounce must be 0 or more and rescan more than 0 seconds, not {debounce!r} and {rescan!r}"
        raise HandoffValidationError(path, msg)
    if url:  # a bucket sends no events: poll handoff.json every `rescan` seconds with conditional GETs
        from handoff_files.watchers.polling import BucketWatcher  # noqa: PLC0415 -- a bucket's watch only

        polling = BucketWatcher(HandoffStore(path), on_change, on_error, rescan)
        polling._start()
        return polling
    store = HandoffStore(path)
    if not store.path.is_dir():
        msg = "no such thread directory to watch; create it first (HandoffStore(path).init() or a first save)"
        raise HandoffNotFoundError(path, msg)
    watcher = Watcher(store, on_change, on_error, debounce, rescan)
    watcher._start()
    return watcher


def _pinned(folder: Path) -> bool:
    """Whether *folder* is pinned to signed generations (a record that cannot be read: the restore says so)."""
    with contextlib.suppress(HandoffError):
        return pin_of(folder) is not None
    return False
