"""The writers' lock: one flock on a held descriptor, with the guarantees of a file lock."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from handoff_files.foundation.errors import HandoffLockedError, HandoffWriteError
from handoff_files.foundation.lock import LOCK_NAME, WriterLock, try_writer_lock


def _free(directory: Path) -> bool:
    with try_writer_lock(directory) as free:
        return free


def test_held_excludes_another_open_and_releases_on_exit(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path, timeout=1)
    with lock.held():
        assert not _free(tmp_path)
    assert _free(tmp_path)


def test_reentrant_in_one_thread_released_only_by_the_outermost_block(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path, timeout=1)
    with lock.held():
        with lock.held():
            assert not _free(tmp_path)
        assert not _free(tmp_path)  # the inner block's end does not drop the outer hold
    assert _free(tmp_path)


def test_threads_of_one_process_exclude_each_other(tmp_path: Path) -> None:
    """Two threads sharing one lock object never hold it at once (each has its own descriptor)."""
    lock = WriterLock(tmp_path, timeout=10)
    inside = 0
    overlaps = 0
    guard = threading.Lock()

    def work() -> None:
        nonlocal inside, overlaps
        for _ in range(200):
            with lock.held():
                with guard:
                    inside += 1
                    overlaps += inside > 1
                time.sleep(0.0001)
                with guard:
                    inside -= 1

    workers = [threading.Thread(target=work) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert overlaps == 0


def test_a_timeout_names_the_directory_and_says_what_to_do(tmp_path: Path) -> None:
    holder = WriterLock(tmp_path)
    waiter = WriterLock(tmp_path, timeout=0.05)
    with (
        holder.held(),
        pytest.raises(HandoffLockedError, match=r"another writer has held \.lock") as caught,
        waiter.held(),
    ):
        pass
    assert str(tmp_path) in str(caught.value)
    with waiter.held():  # free again once the holder's block is over
        pass


def test_a_dead_holder_frees_the_lock_at_once(tmp_path: Path) -> None:
    """A process killed while it holds the lock leaves it free: the kernel drops its flock."""
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from handoff_files.foundation.lock import WriterLock\n"
        "with WriterLock(Path(sys.argv[1])).held():\n"
        "    print('held', flush=True)\n"
        "    time.sleep(60)\n"
    )
    with subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == "held\n"
            assert not _free(tmp_path)
            child.kill()
            child.wait(timeout=10)
            with WriterLock(tmp_path, timeout=1).held():
                pass
        finally:
            child.kill()


def test_a_replaced_lock_file_is_locked_anew(tmp_path: Path) -> None:
    """If .lock is removed while a descriptor is open, the next hold locks the file named .lock now."""
    lock = WriterLock(tmp_path, timeout=1)
    with lock.held():
        pass
    (tmp_path / LOCK_NAME).unlink()
    with lock.held():
        # another writer opening .lock now must find it held
        assert (tmp_path / LOCK_NAME).exists()
        assert not _free(tmp_path)
    assert _free(tmp_path)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_never_believes_it_holds_its_parents_lock(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path, timeout=0.05)
    with lock.held():
        pid = os.fork()
        if pid == 0:  # the child: the parent holds the lock, so the child must time out
            try:
                with lock.held():
                    os._exit(1)
            except HandoffLockedError:
                os._exit(0)
            os._exit(2)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_lock_file_that_cannot_be_opened_is_a_write_error(tmp_path: Path) -> None:
    (tmp_path / LOCK_NAME).symlink_to(tmp_path / "elsewhere")  # never followed
    with pytest.raises(HandoffWriteError, match="cannot open the lock file"), WriterLock(tmp_path).held():
        pass


def test_a_descriptor_dropped_while_the_interpreter_clears_modules_closes_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # at exit the interpreter sets a module's names to None before the last objects go: a saver
    # still referenced then printed "Exception ignored in: _Descriptor.__del__ … 'NoneType' object
    # is not callable" on stderr
    from handoff_files.foundation import lock as lock_module

    lock = WriterLock(tmp_path, timeout=1)
    with lock.held():
        pass
    descriptor = lock._descriptor()
    fd = descriptor.fd
    for name in ("os", "_close", "contextlib"):
        monkeypatch.setattr(lock_module, name, None)
    descriptor.close()
    monkeypatch.undo()
    assert descriptor.fd == -1
    with pytest.raises(OSError):  # closed for real
        os.fstat(fd)
