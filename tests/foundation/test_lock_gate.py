"""The writers' lock's in-process gate: a thread of the same process waiting for the lock is woken, not polled."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from handoff_files.foundation import lock as lock_module
from handoff_files.foundation.errors import HandoffLockedError
from handoff_files.foundation.gate import gate_of
from handoff_files.foundation.lock import LockWait, WriterLock


class _NoSleep:
    """``time`` for lock.py whose ``sleep`` counts: a waiter woken by the gate never polls."""

    def __init__(self) -> None:
        self.sleeps = 0

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        time.sleep(seconds)


def _hold_then_let_go(lock: WriterLock, taken: threading.Event, hold: float) -> threading.Thread:
    def work() -> None:
        with lock.held():
            taken.set()
            time.sleep(hold)

    worker = threading.Thread(target=work)
    worker.start()
    assert taken.wait(5)
    return worker


@pytest.mark.parametrize("same_object", [True, False], ids=["one lock object", "two lock objects"])
def test_a_thread_waiting_for_another_of_its_process_is_woken_without_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, same_object: bool
) -> None:
    clock = _NoSleep()
    monkeypatch.setattr(lock_module, "time", clock)
    holder = WriterLock(tmp_path, timeout=5)
    waiter = holder if same_object else WriterLock(tmp_path, timeout=5)
    worker = _hold_then_let_go(holder, threading.Event(), 0.05)
    start = time.monotonic()
    with waiter.held():
        waited = time.monotonic() - start
    worker.join()
    assert clock.sleeps == 0  # a poll would have slept (0.5 ms, then doubling)
    assert 0.02 < waited < 5


def test_the_gate_times_out_as_the_lock_does_and_tells_on_wait(tmp_path: Path) -> None:
    waits: list[LockWait] = []
    worker = _hold_then_let_go(WriterLock(tmp_path), threading.Event(), 0.6)
    lock = WriterLock(tmp_path, timeout=0.2, on_wait=waits.append)
    with pytest.raises(HandoffLockedError, match=r"over 0\.2 s"), lock.held():
        pass  # pragma: no cover -- never taken
    worker.join()
    assert waits
    assert waits[0].holder is not None
    assert waits[0].holder.pid == os.getpid()
    with lock.held():  # and free once the holder let go: the gate was not left taken
        pass


def test_a_timeout_of_0_fails_at_once_behind_a_thread_of_the_same_process(tmp_path: Path) -> None:
    worker = _hold_then_let_go(WriterLock(tmp_path), threading.Event(), 0.3)
    start = time.monotonic()
    with pytest.raises(HandoffLockedError), WriterLock(tmp_path, timeout=0).held():
        pass  # pragma: no cover
    assert time.monotonic() - start < 0.2
    worker.join()


def test_a_thread_holding_the_gate_never_waits_for_itself(tmp_path: Path) -> None:
    """Two lock objects of one file, nested in one thread: the inner one passes the gate, the flock decides."""
    outer, inner = WriterLock(tmp_path, timeout=0.3), WriterLock(tmp_path, timeout=0.3)
    with outer.held(), pytest.raises(HandoffLockedError), inner.held():
        pass  # pragma: no cover -- another open file's flock: refused, not a deadlock
    with inner.held():
        pass


def test_one_gate_per_file_whatever_the_path_that_names_it(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    a = os.open(tmp_path / "real" / "f", os.O_RDWR | os.O_CREAT)
    b = os.open(tmp_path / "alias" / "f", os.O_RDWR)
    try:
        assert gate_of(a) is gate_of(b)
    finally:
        os.close(a)
        os.close(b)


def test_a_child_forked_while_a_thread_holds_the_gate_can_still_take_the_lock(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path, timeout=5)
    taken, release = threading.Event(), threading.Event()

    def work() -> None:
        with lock.held():
            taken.set()
            release.wait(5)

    worker = threading.Thread(target=work)
    worker.start()
    assert taken.wait(5)
    pid = os.fork()
    if pid == 0:  # pragma: no cover -- the child reports by its exit code
        code = 1
        try:
            with WriterLock(tmp_path, timeout=5).held():
                code = 0
        finally:
            os._exit(code)
    time.sleep(0.1)
    release.set()
    worker.join()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
