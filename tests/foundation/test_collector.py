"""The collector pause: off inside, back as it was after, re-entrant and shared by threads."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from handoff_files import HandoffStore, load
from handoff_files.foundation.collector import collector_paused


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled(), "the inner block must not turn it back on under the outer one"
    assert gc.isenabled()


def test_a_collector_the_program_turned_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_an_error_in_the_block_still_turns_it_back_on() -> None:
    gc.enable()
    message = "boom"
    with pytest.raises(ValueError, match=message), collector_paused():
        raise ValueError(message)
    assert gc.isenabled()


@contextmanager
def _held_by_another_thread() -> Iterator[None]:
    """Another thread sits inside a paused block for the duration of this one."""
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with collector_paused():
            inside.set()
            release.wait(10)

    other = threading.Thread(target=hold)
    other.start()
    assert inside.wait(10)
    try:
        yield
    finally:
        release.set()
        other.join(10)


def test_the_last_of_two_threads_to_leave_turns_it_back_on() -> None:
    gc.enable()
    with _held_by_another_thread():
        with collector_paused():
            pass
        assert not gc.isenabled(), "the other thread is still inside"
    assert gc.isenabled()


def test_loading_and_saving_leave_the_collector_as_they_found_it(tmp_path: Path) -> None:
    gc.enable()
    store = HandoffStore(tmp_path / "t")
    receipt = store.save({"narrative": "n"})
    load(receipt.path)
    assert gc.isenabled()


def test_a_child_forked_while_another_thread_holds_the_pause_gets_the_collector_back() -> None:
    gc.enable()
    with _held_by_another_thread():
        pid = os.fork()
        if pid == 0:  # the child: the holding thread does not exist here
            ok = gc.isenabled()
            with collector_paused():
                ok = ok and not gc.isenabled()
            os._exit(0 if ok and gc.isenabled() else 1)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert gc.isenabled()
