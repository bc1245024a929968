"""Defects a review found in the saver, each reproduced first: writes kept, torn lines, damage, races, case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from handoff_files import HandoffError
from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.threads import DamagedCheckpointWarning


def _checkpoint(base: Any, step: int) -> Any:
    checkpoint = create_checkpoint(base, None, step)
    checkpoint["channel_values"] = {"n": step}
    checkpoint["channel_versions"] = {"n": step + 1}
    return checkpoint


def _put(saver: HandoffSaver, config: Any, checkpoint: Any) -> Any:
    return saver.put(config, checkpoint, {}, {"n": checkpoint["channel_versions"]["n"]})


def _chain(saver: HandoffSaver, steps: int) -> tuple[Any, Any]:
    """Put *steps* checkpoints on thread "t", each the child of the one before: the last config and checkpoint."""
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    base = empty_checkpoint()
    for step in range(steps):
        base = _checkpoint(base, step)
        config = _put(saver, config, base)
    return config, base


def test_keep_never_drops_the_writes_of_a_checkpoint_newer_than_those_kept(tmp_path: Path) -> None:
    """LangGraph's async durability writes a step's results before that step's checkpoint is put."""
    saver = HandoffSaver(tmp_path / "graphs", keep=2)
    config, base = _chain(saver, 3)
    ahead = _checkpoint(base, 3)  # its writes land first, then an older put prunes
    ahead_config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": ahead["id"]}}
    saver.put_writes(ahead_config, [("n", "result")], task_id="task")
    late = _checkpoint(base, 3)
    late["id"] = base["id"] + "-late"  # sorts between the kept ones and `ahead`
    _put(saver, config, late)
    _put(saver, config, ahead)
    got = saver.get_tuple(ahead_config)
    assert got is not None
    assert got.pending_writes == [("task", "n", "result")]


def test_a_torn_writes_line_left_by_a_crash_is_cut_before_the_next_append(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    config = _put(saver, {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, _checkpoint(empty_checkpoint(), 0))
    saver.put_writes(config, [("a", 1)], task_id="task1")
    writes = next((tmp_path / "graphs" / "t" / "writes").glob("*.jsonl"))
    with writes.open("ab") as handle:
        handle.write(b'{"task_id": "task2", "ch')  # the crash, mid-append
    saver.put_writes(config, [("b", 2)], task_id="task2")  # the re-run task writes again
    got = saver.get_tuple(config)
    assert got is not None
    assert got.pending_writes == [("task1", "a", 1), ("task2", "b", 2)]


def test_a_damaged_old_checkpoint_leaves_the_newest_readable_and_prune_clears_it(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs", durability="full")  # no copy in the journal to mend it from
    _chain(saver, 3)
    oldest = tmp_path / "graphs" / "t" / "history" / "00000001.json"
    oldest.write_bytes(oldest.read_bytes()[:100])
    newest = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
    assert newest is not None
    assert newest.checkpoint["channel_values"] == {"n": 2}
    with pytest.warns(DamagedCheckpointWarning, match="00000001.json.*passed over"):  # named, not a stop
        assert len(list(saver.list({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}))) == 2
    saver.prune(["t"], strategy="keep_latest")
    assert not oldest.exists()
    assert len(list(saver.list({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}))) == 1


def test_a_damaged_newest_checkpoint_is_an_error_not_the_one_before(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs", durability="full")  # no copy in the journal to mend it from
    _chain(saver, 2)
    newest = tmp_path / "graphs" / "t" / "history" / "00000002.json"
    newest.write_bytes(newest.read_bytes()[:100])
    with pytest.raises(HandoffError, match="00000002"):
        saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})


def test_ids_that_differ_only_in_case_never_share_a_folder(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    for thread, step in (("alice", 1), ("Alice", 2)):
        _put(saver, {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}, _checkpoint(empty_checkpoint(), step))
    names = sorted(path.name for path in (tmp_path / "graphs").iterdir())
    assert names[1] == "alice"
    assert names[0].startswith("Alice-")
    assert len({name.lower() for name in names}) == 2


def test_deleting_the_newest_checkpoint_leaves_a_thread_that_restores_clean(tmp_path: Path) -> None:
    from handoff_files import HandoffStore

    saver = HandoffSaver(tmp_path / "graphs")
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    base = empty_checkpoint()
    for step, run in enumerate(["keep", "keep", "drop"]):
        base = _checkpoint(base, step)
        config = saver.put(config, base, {"run_id": run}, {"n": step + 1})
    saver.delete_for_runs(["drop"])
    newest = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
    assert newest is not None
    assert newest.checkpoint["channel_values"] == {"n": 1}
    assert len(list(saver.list({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}))) == 2
    restored = HandoffStore(tmp_path / "graphs" / "t").restore()
    assert restored.problems == ()
    assert restored.handoff.state.data["langgraph"]["checkpoint_id"] == newest.config["configurable"]["checkpoint_id"]
    saver.delete_for_runs(["keep"])
    assert saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}) is None
    assert not (tmp_path / "graphs" / "t" / "handoff.json").exists()
