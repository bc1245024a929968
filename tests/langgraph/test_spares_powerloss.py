"""Every crash state a power loss may leave during ``put_writes`` (spares made, taken, renamed unflushed) loses nothing.

The torture suite's disk model (:mod:`bench.torture.powerloss`): real ``put_writes`` calls run on a
real directory while :class:`~bench.torture.oslayer.Recorder` logs each filesystem operation, then
every crash state the model allows (any subset of the operations not yet made durable by an fsync,
writes torn or zeroed) is written into a fresh directory, and a fresh ``HandoffSaver`` opened on it
must read back every pending write acknowledged before the crash, and never a write that is not one.
The model's power is shown the way the torture suite shows it: a writer with its directory or file
flushes turned into no-ops, and a saver that does not recover spares, each lose acknowledged writes.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from bench.torture.oslayer import Broken, Recorder
from bench.torture.powerloss import Disk, crash_states
from handoff_files.foundation.errors import HandoffParseError
from handoff_files.langgraph import HandoffSaver, folders

_THREAD: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
_STATES = 400


def _put(saver: HandoffSaver, step: int) -> Any:
    checkpoint = create_checkpoint(empty_checkpoint(), None, step)
    checkpoint["channel_values"] = {"n": step}
    checkpoint["channel_versions"] = {"n": step + 1}
    return saver.put(_THREAD, checkpoint, {"step": step}, {"n": step + 1})


def _failures(tmp_path: Path, broken: Broken | None = None) -> tuple[int, list[str]]:
    """Trace three checkpoints' first writes, check every crash state; (states checked, what was wrong)."""
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    configs = [_put(saver, step) for step in range(1, 4)]  # untraced: the checkpoints are durable
    durable = Disk.snapshot(root)
    recorder = Recorder(root, durable.names, {inode: len(data) for inode, data in durable.data.items()}, broken=broken)
    acked: list[tuple[int, int]] = []  # (operations done when put_writes returned, checkpoint index)
    with recorder:
        for index, config in enumerate(configs):  # each a checkpoint's first writes: a spare each
            saver.put_writes(config, [("n", 100 + index)], task_id=f"task{index}")
            acked.append((len(recorder.ops), index))
    assert any(op.kind == "rename" and ".spares/" in op.path for op in recorder.ops)  # the spares were taken
    replayed = durable.copy()
    for op in recorder.ops:
        replayed.apply(op)
    assert Disk.snapshot(root).key() == replayed.key()  # the model saw every change
    checked, wrong = 0, []
    for state in crash_states(recorder.ops, durable, random.Random(7), limit=_STATES):
        where = tmp_path / f"state-{checked}"
        state.disk.materialise(where)
        fresh = HandoffSaver(where)  # a process after the power loss: recovery runs as it opens
        for index, config in enumerate(configs):
            done = any(point <= state.point and acked_index == index for point, acked_index in acked)
            wanted = [(f"task{index}", "n", 100 + index)]
            context = f"crash after op {state.point}, checkpoint {index} ({'acknowledged' if done else 'in flight'})"
            try:
                got = fresh.get_tuple(config)
            except HandoffParseError as exc:
                # documented: zeros (or bytes no line starts with) where an append was going are refused
                # as damage, never read as no writes; only an append never acknowledged may leave them
                if done:
                    wrong.append(f"{context}: refused: {exc}")
                continue
            if got is None:
                wrong.append(f"{context}: the checkpoint is gone")
            elif got.pending_writes != wanted if done else got.pending_writes not in ([], wanted):
                wrong.append(f"{context}: read {got.pending_writes}")
        shutil.rmtree(where)
        checked += 1
    return checked, wrong


def test_pending_writes_acknowledged_before_a_power_loss_are_all_read_back(tmp_path: Path) -> None:
    checked, wrong = _failures(tmp_path)
    assert wrong == []
    assert checked >= 100  # the trace allows a few hundred distinct states; all are checked


@pytest.mark.parametrize("broken", ["no-dir-fsync", "no-file-fsync"])
def test_the_model_catches_a_writer_that_skips_its_flushes(tmp_path: Path, broken: Broken) -> None:
    _, wrong = _failures(tmp_path, broken)
    assert any("acknowledged" in what for what in wrong)


def test_without_recovery_a_rename_a_power_loss_undid_loses_acknowledged_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the recovery at a saver's opening is for: turned off, the model finds acknowledged writes unread."""
    monkeypatch.setattr(folders, "recover", lambda *args, **kwargs: [])
    _, wrong = _failures(tmp_path)
    assert any("acknowledged" in what for what in wrong)
