"""The writers' lock names its holder: the record in .lock, the waiter's callback, the timeout's error."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoff_files.foundation import lock as lock_module
from handoff_files.foundation.clock import iso_z
from handoff_files.foundation.errors import HandoffLockedError
from handoff_files.foundation.lock import LOCK_NAME, LockWait, WriterLock, lock_holder, try_writer_lock, writer_lock
from handoff_files.thread.store import HandoffStore
from tests.writer_child import content

# a real writer in another process: it holds the lock until a line arrives on its stdin
_HOLD_LOCK = """
import sys
from pathlib import Path
from handoff_files.foundation.lock import writer_lock
with writer_lock(Path(sys.argv[1])):
    print("LOCKED", flush=True)
    sys.stdin.readline()
print("FREE", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def holder(tmp_path: Path, python: str, subprocess_env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """A live process holding *tmp_path*'s writers' lock (write a line to its stdin to let go)."""
    with subprocess.Popen(
        [python, "-c", _HOLD_LOCK, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=subprocess_env,
        text=True,
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == "LOCKED\n"
            yield child
        finally:
            child.kill()
            child.wait(timeout=10)


def _let_go(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    assert child.stdout is not None
    child.stdin.write("\n")
    child.stdin.flush()
    assert child.stdout.readline() == "FREE\n"


def _record_of(directory: Path) -> bytes:
    return (directory / LOCK_NAME).read_bytes().split(b"\n", 1)[0].strip()


def _dead_pid(python: str) -> int:
    """The pid of a process that has exited and been reaped."""
    with subprocess.Popen([python, "-c", "pass"]) as child:
        child.wait(timeout=10)
    return child.pid


def test_the_holder_records_itself_and_blanks_the_record_when_it_lets_go(tmp_path: Path) -> None:
    before = dt.datetime.now(dt.UTC)
    with writer_lock(tmp_path):
        holder = lock_holder(tmp_path)
        assert holder is not None
        assert holder.pid == os.getpid()
        assert holder.host == os.uname().nodename
        assert before - dt.timedelta(seconds=1) <= holder.since <= dt.datetime.now(dt.UTC)
        assert holder.since.tzinfo is not None
        assert str(holder) == f"pid {os.getpid()} since {iso_z(holder.since)}"
        text = _record_of(tmp_path).decode()
        assert f'"pid":{os.getpid()}' in text
        assert text.endswith('Z"}')  # UTC ISO 8601 with a Z
    assert _record_of(tmp_path) == b""
    assert lock_holder(tmp_path) is None


def test_a_reentrant_hold_keeps_the_record_until_the_outermost_block_ends(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path)
    with lock.held():
        first = lock_holder(tmp_path)
        with lock.held():
            assert lock_holder(tmp_path) == first
        assert lock_holder(tmp_path) == first  # the inner block's end neither drops nor blanks it
    assert lock_holder(tmp_path) is None


def test_a_timeout_names_the_holder_pid_and_since_when(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    recorded = lock_holder(tmp_path)
    assert recorded is not None
    assert recorded.pid == holder.pid
    with (
        pytest.raises(HandoffLockedError, match=r"another writer has held \.lock for over 0\.1 s") as caught,
        WriterLock(tmp_path, timeout=0.1).held(),
    ):
        pass
    message = str(caught.value)
    assert f"(pid {holder.pid} since {iso_z(recorded.since)})" in message
    assert str(tmp_path) in message


def test_a_timeout_of_0_fails_at_once_without_a_wait(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    waits: list[LockWait] = []
    started = time.monotonic()
    with (
        pytest.raises(HandoffLockedError, match=rf"\(pid {holder.pid} since .*Z\), and no wait was asked for"),
        WriterLock(tmp_path, timeout=0, on_wait=waits.append).held(),
    ):
        pass
    assert time.monotonic() - started < 0.05  # one try: no poll, no sleep
    assert waits == []  # no wait began


def test_on_wait_is_told_the_holder_when_the_wait_begins(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    waits: list[LockWait] = []
    with pytest.raises(HandoffLockedError), WriterLock(tmp_path, timeout=0.3, on_wait=waits.append).held():
        pass
    assert len(waits) == 1  # at the start; the next report would be due seconds later
    (wait,) = waits
    assert wait.holder is not None
    assert wait.holder.pid == holder.pid
    assert wait.directory == tmp_path
    assert wait.timeout == 0.3
    assert 0 <= wait.waited < 0.1


def test_on_wait_is_called_again_while_the_wait_goes_on(
    tmp_path: Path, holder: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lock_module, "WAIT_REPORT_SECONDS", 0.1)
    waits: list[LockWait] = []
    with pytest.raises(HandoffLockedError), WriterLock(tmp_path, timeout=0.45, on_wait=waits.append).held():
        pass
    assert 2 <= len(waits) <= 5  # at 0, 0.1, 0.2 … s, each up to one poll late
    assert [w.waited for w in waits] == sorted(w.waited for w in waits)
    assert all(w.holder is not None and w.holder.pid == holder.pid for w in waits)


def test_a_waiter_takes_the_lock_once_the_holder_lets_go(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    waits: list[LockWait] = []

    def on_wait(wait: LockWait) -> None:
        waits.append(wait)
        _let_go(holder)  # the holder lets go while we wait

    with WriterLock(tmp_path, timeout=10, on_wait=on_wait).held():
        mine = lock_holder(tmp_path)
        assert mine is not None
        assert mine.pid == os.getpid()
    assert len(waits) == 1
    assert waits[0].holder is not None
    assert waits[0].holder.pid == holder.pid


def test_what_on_wait_raises_ends_the_wait(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    def give_up(wait: LockWait) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), WriterLock(tmp_path, timeout=10, on_wait=give_up).held():
        pass
    recorded = lock_holder(tmp_path)  # still the other process's
    assert recorded is not None
    assert recorded.pid == holder.pid


def test_a_killed_holders_record_is_stale_never_reported_and_never_blocks(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    # its record stays in the file: it never blanked it
    assert f'"pid":{holder.pid}'.encode() in _record_of(tmp_path)
    assert lock_holder(tmp_path) is None  # the lock is free: not held, whatever the file says
    started = time.monotonic()
    with WriterLock(tmp_path, timeout=0).held():  # taken at once
        mine = lock_holder(tmp_path)
        assert mine is not None
        assert mine.pid == os.getpid()
    assert time.monotonic() - started < 0.05


def test_a_record_naming_a_gone_process_is_not_reported_while_another_holds_the_lock(
    tmp_path: Path, python: str
) -> None:
    """The window after a killed holder: a new holder has the flock but has not written its record yet."""
    gone = _dead_pid(python)
    path = tmp_path / LOCK_NAME
    record = {"pid": gone, "host": os.uname().nodename, "since": "2026-01-02T03:04:05.678Z"}
    path.write_text(json.dumps(record) + "\n")
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held by a writer that wrote no record
        assert lock_holder(tmp_path) is None
        waits: list[LockWait] = []
        with (
            pytest.raises(HandoffLockedError, match=r"\(it did not record who it is\)"),
            WriterLock(tmp_path, timeout=0.05, on_wait=waits.append).held(),
        ):
            pass
        assert [w.holder for w in waits] == [None]
    finally:
        os.close(fd)


def test_a_holder_on_another_host_is_reported_as_it_says(tmp_path: Path) -> None:
    path = tmp_path / LOCK_NAME
    path.write_text('{"pid":4242,"host":"elsewhere","since":"2026-01-02T03:04:05.678Z"}\n')
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        holder = lock_holder(tmp_path)
        assert holder is not None
        assert (holder.pid, holder.host) == (4242, "elsewhere")
        assert holder.since == dt.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC)
        assert str(holder) == "pid 4242 on elsewhere since 2026-01-02T03:04:05.678Z"
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "not json\n",
        "[1, 2]\n",
        '{"pid":0,"host":"elsewhere","since":"2026-01-02T03:04:05Z"}\n',  # pid 0 is a process group
        '{"pid":-1,"host":"elsewhere","since":"2026-01-02T03:04:05Z"}\n',
        '{"pid":true,"host":"elsewhere","since":"2026-01-02T03:04:05Z"}\n',
        '{"pid":"12","host":"elsewhere","since":"2026-01-02T03:04:05Z"}\n',
        '{"pid":12,"host":7,"since":"2026-01-02T03:04:05Z"}\n',
        '{"pid":12,"host":"elsewhere","since":"yesterday"}\n',
        '{"pid":12,"host":"elsewhere","since":"2026-01-02T03:04:05"}\n',  # no time zone
        '{"pid":12,"host":"elsewhere"}\n',
        "\xff\xfe garbage\n",
    ],
)
def test_a_malformed_record_names_no_holder(tmp_path: Path, text: str) -> None:
    path = tmp_path / LOCK_NAME
    path.write_bytes(text.encode("latin-1"))
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert lock_holder(tmp_path) is None
        with (
            pytest.raises(HandoffLockedError, match="did not record who it is"),
            WriterLock(tmp_path, timeout=0).held(),
        ):
            pass
    finally:
        os.close(fd)


def test_a_lock_file_that_is_missing_names_no_holder(tmp_path: Path) -> None:
    assert lock_holder(tmp_path) is None
    assert lock_holder(tmp_path / "no-such-thread") is None
    assert not (tmp_path / LOCK_NAME).exists()  # reading who holds it creates nothing


def test_housekeeping_under_try_writer_lock_names_itself_too(tmp_path: Path) -> None:
    with try_writer_lock(tmp_path) as free:
        assert free
        holder = lock_holder(tmp_path)
        assert holder is not None
        assert holder.pid == os.getpid()
    assert _record_of(tmp_path) == b""


def test_a_replaced_lock_file_carries_the_record_of_its_holder(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path, timeout=1)
    with lock.held():
        pass
    (tmp_path / LOCK_NAME).unlink()
    with lock.held():
        holder = lock_holder(tmp_path)
        assert holder is not None
        assert holder.pid == os.getpid()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_leaving_its_parents_block_neither_drops_nor_blanks_the_parents_lock(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path, timeout=0.05)
    with lock.held():
        pid = os.fork()
        if pid != 0:
            os.waitpid(pid, 0)  # the child has left the block below and exited
            holder = lock_holder(tmp_path)
            with try_writer_lock(tmp_path) as free:
                pass
    if pid == 0:  # the child, out of the block it inherited holding the lock
        os._exit(0)
    assert not free
    assert holder is not None
    assert holder.pid == os.getpid()
    assert lock_holder(tmp_path) is None  # the parent's own block is over


def test_the_store_passes_on_lock_wait_to_its_lock(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    waits: list[LockWait] = []
    # the holder locks tmp_path; the store writes there
    store = HandoffStore(tmp_path, agent_id="a", thread_id="t", lock_timeout=0.2, on_lock_wait=waits.append)
    with pytest.raises(HandoffLockedError, match=rf"pid {holder.pid} since"):
        store.save(content("a", 1, 0))
    assert [w.holder.pid if w.holder else None for w in waits] == [holder.pid]
