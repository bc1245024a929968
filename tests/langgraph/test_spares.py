"""Spare writes files: a checkpoint's first pending writes cost one flush; a rename a power loss undid comes back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from handoff_files.langgraph import HandoffSaver, layout, spares
from handoff_files.langgraph.checkup import examine_saver_files
from handoff_files.langgraph.spares import SPARES_DIR
from handoff_files.thread.kind import thread_kind
from handoff_files.thread.layout import ThreadDir

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


def _writes_a_power_loss_unnamed(root: Path) -> tuple[Any, Path, Path]:
    """A checkpoint with one acknowledged write whose rename a power loss undid: its config, the file, the spare."""
    saver = HandoffSaver(root)
    config = _put(saver, 1)
    saver.put_writes(config, [("n", 7)], task_id="task")
    return (config, *_undo_rename(root))


def _undo_rename(root: Path) -> tuple[Path, Path]:
    """What a power loss may leave: the writes file back under its spare's name (its data flushed, its rename not)."""
    (named,) = (root / "t" / "writes").glob("*.jsonl")
    spare = root / SPARES_DIR / f"{os.getpid()}-0123456789ab"
    named.rename(spare)
    return named, spare


def test_writes_whose_rename_a_power_loss_undid_are_read_by_the_next_process_under_their_name(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    config = _put(saver, 1)
    saver.put_writes(config, [("n", 7), ("note", "keep me")], task_id="task")
    named, spare = _undo_rename(root)
    findings = examine_saver_files(root / "t")
    assert [f for f in findings if f.level == "error" and str(spare) in f.what]  # doctor sees them before a saver
    assert not [f for f in examine_saver_files(root / "other") if f.level == "error"]  # another thread's are not its
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
    config, named, spare = _writes_a_power_loss_unnamed(root)
    named.write_bytes(b"")  # another file took the name meanwhile
    HandoffSaver(root).get_tuple(config)
    assert spare.stat().st_size > 0
    errors = [f.what for f in examine_saver_files(root / "t") if f.level == "error"]
    assert any(str(spare) in text and f"pending writes of t/writes/{named.name}" in text for text in errors)


def test_empty_spares_of_a_process_that_is_gone_are_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    saver.put_writes(_put(saver, 1), [("n", 1)], task_id="task")
    spares = root / SPARES_DIR
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


def test_spares_are_shared_by_the_threads_of_a_root_so_a_new_thread_costs_no_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    saver.put_writes(_put(saver, 1), [("n", 1)], task_id="task")  # the first batch: 8 spares
    made = {path.name for path in (root / SPARES_DIR).iterdir()}
    other: Any = {"configurable": {"thread_id": "u", "checkpoint_ns": ""}}
    checkpoint = create_checkpoint(empty_checkpoint(), None, 1)
    config = saver.put(other, checkpoint, {}, {})
    flushes = _Flushes(monkeypatch)
    saver.put_writes(config, [("n", 2)], task_id="task")
    assert flushes.count == 1  # its writes file alone: no batch of spares (writes/ came with the put's history/)
    assert {path.name for path in (root / SPARES_DIR).iterdir()} < made


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
        assert f'"file":"t/writes/{path.name}"' in line
    assert [got.pending_writes for got in (saver.get_tuple(first), saver.get_tuple(second)) if got] == [
        [("a", "n", 1)],
        [("b", "n", 2)],
    ]


@pytest.mark.parametrize(
    "named",
    [
        "../elsewhere/writes/00000001+x.jsonl",
        "/etc/writes/00000001+x.jsonl",
        "t/.hidden/writes/a.jsonl",
        "t/history/00000001.json",
        "writes/a.jsonl",
        "t/writes/notes.txt",
    ],
)
def test_a_spare_naming_a_path_outside_a_namespaces_writes_is_left_where_it_is(tmp_path: Path, named: str) -> None:
    """A spare's path is hostile input: one that leaves the root or names no writes file is never used."""
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    saver.put_writes(_put(saver, 1), [("n", 1)], task_id="task")
    fields = {"task_id": "task", "task_path": "", "idx": 0, "channel": "n", "value": 1, "file": named}
    spare = root / SPARES_DIR / f"{os.getpid()}-badbadbadbad"
    spare.write_bytes(json.dumps({**fields, "check": layout._check(fields)}).encode() + b"\n")
    assert spares.spare_owner(spare) is None
    HandoffSaver(root).get_tuple(_THREAD)
    assert spare.read_bytes()  # left for a person, nothing moved or made
    assert not (tmp_path / "elsewhere").exists()


def _plant(root: Path, name: str, named: str) -> Path:
    """A spare holding one whole line that names *named* (as a power loss may leave one, or a person plant it)."""
    fields = {"task_id": "task", "task_path": "", "idx": 0, "channel": "n", "value": 1, "file": named}
    spare = root / SPARES_DIR / name
    spare.write_bytes(json.dumps({**fields, "check": layout._check(fields)}).encode() + b"\n")
    return spare


def test_a_spare_that_cannot_be_moved_never_stops_the_others_and_one_of_a_deleted_thread_goes(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    config, named, _ = _writes_a_power_loss_unnamed(root)
    gone = _plant(root, "1-0-0-000000000001", "a/writes/00000001+x.jsonl")  # its thread deleted: sorted first
    taken = _plant(root, "zz-0-0-000000000002", f"t/writes/{named.name}")  # sorted last: its file is back by then
    got = HandoffSaver(root).get_tuple(config)
    assert got is not None
    assert got.pending_writes == [("task", "n", 7)]
    assert not gone.exists()
    assert taken.exists()  # its file is there now: left, and doctor names it
    assert any(str(taken) in f.what for f in examine_saver_files(root / "t") if f.level == "error")


def test_every_saver_call_sees_writes_a_power_loss_left_in_a_spare_list_and_copy_too(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    _writes_a_power_loss_unnamed(root)
    fresh = HandoffSaver(root)
    assert [item.pending_writes for item in fresh.list(None)] == [[("task", "n", 7)]]
    fresh.copy_thread("t", "u")
    copied = fresh.get_tuple({"configurable": {"thread_id": "u", "checkpoint_ns": ""}})
    assert copied is not None
    assert copied.pending_writes == [("task", "n", 7)]


def test_savers_of_one_root_share_one_pool_so_spares_do_not_pile_up(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    for number in range(20):
        saver = HandoffSaver(root)
        config = saver.put(
            {"configurable": {"thread_id": f"t{number}", "checkpoint_ns": ""}}, empty_checkpoint(), {}, {}
        )
        saver.put_writes(config, [("n", number)], task_id="task")
    assert len(list((root / SPARES_DIR).iterdir())) < 16  # 8 + 16 made, 20 taken: one pool, not twenty


def test_a_spare_of_an_earlier_process_with_this_pid_is_told_apart_by_its_start_time(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    saver.put_writes(_put(saver, 1), [("n", 1)], task_id="task")
    reused = root / SPARES_DIR / f"{os.getpid()}-1-0-000000000003"  # this pid, started at tick 1: another process
    reused.touch()
    HandoffSaver(root)
    assert not reused.exists()
    assert list((root / SPARES_DIR).iterdir())  # this process's own are kept


def test_a_spare_holding_only_a_line_cut_short_is_removed_and_one_naming_no_writes_file_is_reported(
    tmp_path: Path,
) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    saver.put_writes(_put(saver, 1), [("n", 1)], task_id="task")
    torn = root / SPARES_DIR / "1-0-0-000000000004"
    torn.write_bytes(b'{"task_id":"task","ta')  # a power loss mid-append: put_writes never returned
    odd = _plant(root, "1-0-0-000000000005", "t/writes/notes.txt")
    HandoffSaver(root)
    assert not torn.exists()
    assert odd.exists()
    errors = [f.what for f in examine_saver_files(root / "t") if f.level == "error"]
    assert any(str(odd) in what and "naming no writes file" in what for what in errors)


def test_doctor_refuses_a_link_in_place_of_the_spares_folder_and_reads_nothing_through_it(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    saver.put_writes(_put(saver, 1), [("n", 1)], task_id="task")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / SPARES_DIR).rename(tmp_path / "old-spares")
    (root / SPARES_DIR).symlink_to(outside)
    errors = [f.what for f in examine_saver_files(root / "t") if f.level == "error"]
    assert errors
    assert all("link" in what for what in errors)


def test_a_thread_deleted_by_another_saver_is_recorded_as_the_savers_again_when_writes_remake_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "graphs"
    first, second = HandoffSaver(root), HandoffSaver(root)
    first.put_writes(_put(first, 1), [("n", 1)], task_id="task")
    second.delete_thread("t")
    ahead: Any = {
        "configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "1f1f0000-0000-6000-8000-000000000000"}
    }
    first.put_writes(ahead, [("n", 2)], task_id="task")  # writes before their put (async durability)
    assert thread_kind(ThreadDir(root / "t")) == "langgraph"


@pytest.mark.parametrize("name", ["99999999999999999999-0-0-aa", "\u00b2-0-0-aa", "12-notanumber-0-aa", "-", "x"])
def test_an_odd_spare_name_never_stops_a_saver_from_opening(tmp_path: Path, name: str) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    config = _put(saver, 1)
    saver.put_writes(config, [("n", 1)], task_id="task")
    (root / SPARES_DIR / name).touch()
    got = HandoffSaver(root).get_tuple(config)
    assert got is not None
    assert got.pending_writes == [("task", "n", 1)]


def test_a_spare_naming_a_path_with_a_nul_byte_never_stops_a_saver_from_opening(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    config = _put(saver, 1)
    saver.put_writes(config, [("n", 1)], task_id="task")
    spare = _plant(root, "1-0-0-000000000006", "t\x00x/writes/00000001+c.jsonl")
    assert spares.spare_owner(spare) is None
    assert HandoffSaver(root).get_tuple(config) is not None
    assert spare.exists()


def test_a_name_of_an_earlier_release_is_judged_by_its_pid_alone(tmp_path: Path) -> None:
    assert spares._alive(f"{os.getpid()}-0123456789ab")
    assert not spares._alive("999999999-0123456789ab")


def test_doctor_advises_a_merge_when_the_spares_file_exists_too(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    _, named, spare = _writes_a_power_loss_unnamed(root)
    named.write_bytes(b"")
    findings = [f for f in examine_saver_files(root / "t") if str(spare) in f.what]
    assert findings
    assert "merge" in findings[0].advice
