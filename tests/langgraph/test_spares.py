"""Spare writes files: a checkpoint's first pending writes cost one flush; a rename a power loss undid comes back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.checkup import examine_saver_files
from handoff_files.langgraph.spares import SPARES_DIR

_THREAD: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _put(saver: HandoffSaver, step: int) -> Any:
    checkpoint = create_checkpoint(empty_checkpoint(), None, step)
    checkpoint["channel_values"] = {"n": step}
    checkpoint["channel_versions"] = {"n": step + 1}
    return saver.put(_THREAD, checkpoint, {"step": step}, {"n": step + 1})


class _Flushes:
    """The real fsync and fdatasync, counted (each still flushes)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real_fsync, real_fdatasync = os.fsync, os.fdatasync

        def fsync(fd: int) -> None:
            self.count += 1
            real_fsync(fd)

        def fdatasync(fd: int) -> None:
            self.count += 1
            real_fdatasync(fd)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "fdatasync", fdatasync)


def test_each_checkpoints_first_pending_writes_cost_one_flush_as_a_sqlite_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    configs = [_put(saver, step) for step in range(40)]
    flushes = _Flushes(monkeypatch)
    for step, config in enumerate(configs):
        saver.put_writes(config, [("n", step)], task_id="task")
    # one fdatasync each, a directory flush per batch of spares (8, 16, 32: three for 40) and one for each
    # folder made (writes/ and its spares'); a new file each, flushed with its directory, was 2 per checkpoint
    assert flushes.count <= len(configs) + 5
    for step, config in enumerate(configs):
        got = saver.get_tuple(config)
        assert got is not None
        assert got.pending_writes == [("task", "n", step)]


def _undo_rename(writes: Path) -> tuple[Path, Path]:
    """What a power loss may leave: the writes file back under its spare's name (its data flushed, its rename not)."""
    (named,) = writes.glob("*.jsonl")
    spare = writes / SPARES_DIR / f"{os.getpid()}-0123456789ab"
    named.rename(spare)
    return named, spare


def test_writes_whose_rename_a_power_loss_undid_are_read_by_the_next_process_under_their_name(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    config = _put(saver, 1)
    saver.put_writes(config, [("n", 7), ("note", "keep me")], task_id="task")
    named, spare = _undo_rename(root / "t" / "writes")
    findings = examine_saver_files(root / "t")
    assert [f for f in findings if f.level == "error" and str(spare) in f.what]  # doctor sees them before a saver
    child = (
        "import sys\n"
        "from handoff_files.langgraph import HandoffSaver\n"
        "config = {'configurable': {'thread_id': 't', 'checkpoint_ns': ''}}\n"
        "got = HandoffSaver(sys.argv[1]).get_tuple(config)\n"
        "print(got.pending_writes)\n"
    )
    done = subprocess.run([sys.executable, "-c", child, str(root)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[('task', 'n', 7), ('task', 'note', 'keep me')]"
    assert named.is_file()
    assert not spare.exists()


def test_a_spare_holding_writes_whose_name_is_taken_is_left_for_a_person_and_doctor_names_it(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    config = _put(saver, 1)
    saver.put_writes(config, [("n", 7)], task_id="task")
    named, spare = _undo_rename(root / "t" / "writes")
    named.write_bytes(b"")  # another file took the name meanwhile
    HandoffSaver(root).get_tuple(config)
    assert spare.stat().st_size > 0
    errors = [f.what for f in examine_saver_files(root / "t") if f.level == "error"]
    assert any(str(spare) in text and "without their name" in text for text in errors)


def test_empty_spares_of_a_process_that_is_gone_are_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    saver.put_writes(_put(saver, 1), [("n", 1)], task_id="task")
    spares = root / "t" / "writes" / SPARES_DIR
    ours = sorted(path.name for path in spares.iterdir())
    assert ours
    assert all(name.startswith(f"{os.getpid()}-") for name in ours)
    child = [sys.executable, "-c", "import os; print(os.getpid())"]
    gone = subprocess.run(child, capture_output=True, text=True, check=True)
    dead = spares / f"{gone.stdout.strip()}-feedfacecafe"
    dead.touch()
    HandoffSaver(root).get_tuple(_THREAD)
    assert not dead.exists()
    assert sorted(path.name for path in spares.iterdir()) == ours


def test_a_writes_file_made_from_a_spare_is_the_checkpoints_alone(tmp_path: Path) -> None:
    """Two checkpoints' first writes take two spares: neither file holds the other's lines, each line names its file."""
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    first, second = _put(saver, 1), _put(saver, 2)
    saver.put_writes(first, [("n", 1)], task_id="a")
    saver.put_writes(second, [("n", 2)], task_id="b")
    files = sorted((root / "t" / "writes").glob("*.jsonl"))
    assert len(files) == 2
    for path in files:
        (line,) = path.read_text().splitlines()
        assert f'"file":"{path.name}"' in line
    assert [got.pending_writes for got in (saver.get_tuple(first), saver.get_tuple(second)) if got] == [
        [("a", "n", 1)],
        [("b", "n", 2)],
    ]
