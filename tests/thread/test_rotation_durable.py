"""A rotation never drops the journal that held the only durable copy of a kept generation.

A journal-first save flushes its journal line and writes its ``history/`` copy unflushed. A
rotation removes the older journal file: the copies of the generations it held, which the
thread still keeps, must be on disk first. They were not (only the newest was flushed), so a
power loss just after a rotation could lose every kept generation that file held: in the disk
model below, every crash state after the last save lost some (generations 2 to 15 of 26).
"""

from __future__ import annotations

import random
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Literal

import pytest

from bench.torture.oslayer import Recorder
from bench.torture.powerloss import Disk, crash_states
from handoff_files import HandoffStore
from handoff_files.foundation.atomic import fsync_file
from handoff_files.foundation.errors import HandoffError, HandoffWriteError
from handoff_files.thread import copyback
from handoff_files.thread import journal as journal_module
from handoff_files.thread.history import load_generation
from handoff_files.thread.journal import Journal
from handoff_files.thread.settings import Durability

_KEEP = 100
_STATES = 120


def _content(step: int) -> dict[str, object]:
    return {"narrative": f"step {step} " + "x" * 2000, "state": {"data": {"step": step}}}


#: How the traced saves go: journal-first only; each followed by an acknowledgement (its "resumed"
#: line may be the append that rotates); every fifth a full save (its line, unflushed, may rotate).
Pattern = Literal["saves", "acknowledged", "mixed"]


def _lost(tmp_path: Path, pattern: Pattern = "saves") -> tuple[int, list[str]]:
    """Trace saves across two rotations; in each crash state after the last, the acknowledged generations lost."""
    thread = tmp_path / "thread"
    store = HandoffStore(thread, agent_id="agent", keep=_KEEP)
    store.save(_content(0))
    durable = Disk.snapshot(thread)
    recorder = Recorder(thread, durable.names, {inode: len(data) for inode, data in durable.data.items()}, broken=None)
    generations = []
    with recorder:
        for step in range(1, 30 if pattern != "saves" else 26):
            mode: Durability = "full" if pattern == "mixed" and step % 5 == 0 else "journal"
            generations.append(store.save(_content(step), durability=mode).generation)
            if pattern == "acknowledged":
                store.acknowledge()
    assert (thread / "journal.1.jsonl").exists()  # rotated twice: the first file's lines were dropped
    checked, lost = 0, []
    for state in crash_states(recorder.ops, durable, random.Random(7), limit=_STATES, start=len(recorder.ops)):
        where = tmp_path / f"state-{checked}"
        state.disk.materialise(where)
        layout = HandoffStore(where).layout
        in_journal = {entry.generation for entry, document in Journal(layout).committed_documents() if document}
        for generation in generations:
            try:
                load_generation(layout, generation)
            except HandoffError:
                if generation not in in_journal:
                    lost.append(f"state {checked}: generation {generation} is neither in history/ nor in a journal")
        shutil.rmtree(where)
        checked += 1
    return checked, lost


def test_a_power_loss_after_a_rotation_loses_no_kept_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "ROTATE_BYTES", 1)  # rotate every ROTATE_LINES saves
    monkeypatch.setattr(copyback, "_FLUSHERS", 1)  # the disk model follows one thread: flush in it
    checked, lost = _lost(tmp_path)
    assert checked >= 50
    assert lost == []


@pytest.mark.parametrize("pattern", ["acknowledged", "mixed"])
def test_a_rotation_by_another_append_or_a_full_save_loses_no_kept_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: Pattern
) -> None:
    # an acknowledgement's line rotated without the save's checkpoint (history/'s names unflushed);
    # a full save's unflushed line rotated and left the new journal's name unflushed, into which
    # the next journal-first saves committed (both found by a review, in this model)
    monkeypatch.setattr(journal_module, "ROTATE_BYTES", 1)
    monkeypatch.setattr(copyback, "_FLUSHERS", 1)
    checked, lost = _lost(tmp_path, pattern)
    assert checked >= 20
    assert lost == []


def test_the_model_catches_a_rotation_that_flushes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_module, "ROTATE_BYTES", 1)
    monkeypatch.setattr(copyback, "_flush", lambda paths: None)
    _, lost = _lost(tmp_path)
    assert lost, "without the flush, a crash state loses kept generations"


def test_the_copies_are_flushed_together_and_a_failure_refuses_the_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "ROTATE_BYTES", 1)
    flushed: list[str] = []
    threads: set[int] = set()
    guard = threading.Lock()
    real = fsync_file

    def recorded(path: Path) -> None:
        with guard:
            flushed.append(path.name)
            threads.add(threading.get_ident())
        real(path)

    monkeypatch.setattr(copyback, "fsync_file", recorded)
    store = HandoffStore(tmp_path / "thread", agent_id="agent", keep=_KEEP)
    for step in range(25):
        store.save(_content(step))
    # the second rotation dropped the first file's lines: each of their copies was flushed first
    assert {f"{generation:08d}.json" for generation in range(1, 9)} <= set(flushed)
    assert threading.get_ident() not in threads, "several at once, by a pool"
    head = store.restore().generation

    def failing(path: Path) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(copyback, "fsync_file", failing)
    failed, before = None, head
    for step in range(25, 45):  # up to the next rotation
        before = store.restore().generation
        try:
            store.save(_content(step))
        except HandoffWriteError as exc:
            failed = exc
            break
    assert failed is not None
    assert "rotated away" in str(failed)
    assert "Input/output error" in str(failed)
    assert store.restore().generation == before, "the refused save committed nothing"
    monkeypatch.setattr(copyback, "fsync_file", real)
    assert store.save(_content(99)).generation == before + 1


_SAVES_AT_EXIT = """
import atexit, sys
from handoff_files import HandoffStore
from handoff_files.thread import journal
journal.ROTATE_BYTES = 1
store = HandoffStore(sys.argv[1], agent_id="agent", keep=100)
content = {"narrative": "x" * 2000}
atexit.register(lambda: [store.save(content) for _ in range(20)])  # rotates twice, the second with copies to flush
"""


def test_a_rotation_in_an_exit_handler_flushes_its_copies_without_a_pool(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    # at interpreter exit no new thread can start: the pool raised RuntimeError, not a HandoffError
    done = subprocess.run(
        [python, "-c", _SAVES_AT_EXIT, str(tmp_path / "thread")],
        env=subprocess_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert HandoffStore(tmp_path / "thread").restore().generation == 20
