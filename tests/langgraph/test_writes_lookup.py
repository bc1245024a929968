"""A task's writes for the checkpoint before the newest: found without listing ``history/``.

LangGraph stores a step's writes on one thread while the next checkpoint's ``put`` runs on
another, so the writes often arrive after that put returned. Their checkpoint's generation was
looked up by listing the whole namespace, which grew with the thread (4.8 ms a call at 1,500
checkpoints, against 0.3 ms at the start).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.store import Namespace

THREAD: RunnableConfig = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _puts(saver: HandoffSaver, count: int) -> list[RunnableConfig]:
    configs: list[RunnableConfig] = []
    checkpoint = empty_checkpoint()
    for step in range(count):
        checkpoint = create_checkpoint(checkpoint, None, step)
        parent = configs[-1] if configs else THREAD
        configs.append(saver.put(parent, checkpoint, {"step": step, "source": "loop", "parents": {}}, {}))
    return configs


def _counting_scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = Namespace.scan

    def scan(self: Namespace) -> Any:
        calls.append(1)
        return real(self)

    monkeypatch.setattr(Namespace, "scan", scan)
    return calls


def test_writes_after_the_next_put_land_with_their_checkpoint_without_a_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    configs = _puts(saver, 5)
    scans = _counting_scans(monkeypatch)
    saver.put_writes(configs[-2], [("payload", "for the one before")], "task-a")
    assert scans == [], "the checkpoint saved just before the newest is known to this process"
    monkeypatch.undo()
    pending = saver.get_tuple(configs[-2])
    assert pending is not None
    assert pending.pending_writes is not None
    assert [(task, channel, value) for task, channel, value in pending.pending_writes] == [
        ("task-a", "payload", "for the one before")
    ]
    newest = saver.get_tuple(configs[-1])
    assert newest is not None
    assert newest.pending_writes == []


def test_an_older_checkpoint_and_another_writer_still_go_by_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    configs = _puts(saver, 5)
    other = HandoffSaver(tmp_path / "graphs")  # another process's view: it knows no order of its own
    scans = _counting_scans(monkeypatch)
    saver.put_writes(configs[1], [("payload", "old")], "task-b")
    other.put_writes(configs[-2], [("payload", "theirs")], "task-c")
    assert len(scans) == 2, "neither is the newest or the one before it as this process saved them"
    monkeypatch.undo()
    for config, value in ((configs[1], "old"), (configs[-2], "theirs")):
        found = saver.get_tuple(config)
        assert found is not None
        assert found.pending_writes is not None
        assert [write[2] for write in found.pending_writes] == [value]


def test_keep_one_never_names_writes_for_the_checkpoint_it_pruned(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs", keep=1)
    configs = _puts(saver, 3)
    saver.put_writes(configs[-2], [("payload", "late")], "task-d")  # its checkpoint is gone
    writes = tmp_path / "graphs" / "t" / "writes"
    # named by the checkpoint's id alone, as the writes of a put still to come are: no pruned generation
    assert [path.name for path in writes.iterdir()] == [f"{configs[-2]['configurable']['checkpoint_id']}.jsonl"]
    newest = saver.get_tuple(configs[-1])
    assert newest is not None
    assert newest.pending_writes == []
    assert saver.get_tuple(configs[-2]) is None
    _puts(saver, 1)
    assert list(writes.iterdir()) == [], "the next put's pruning takes them"


def test_writes_after_the_newest_was_deleted_land_with_their_checkpoint(tmp_path: Path) -> None:
    # deleting the newest puts the one before back as a newer generation and removes its old file:
    # the generation remembered for it is gone (found by a review: the writes were filed under it)
    saver = HandoffSaver(tmp_path / "graphs")
    first = create_checkpoint(empty_checkpoint(), None, 0)
    kept = saver.put(THREAD, first, {"step": 0, "source": "loop", "parents": {}, "run_id": "r1"}, {})
    second = create_checkpoint(first, None, 1)
    saver.put(kept, second, {"step": 1, "source": "loop", "parents": {}, "run_id": "r2"}, {})
    saver.delete_for_runs(["r2"])
    saver.put_writes(kept, [("payload", "after the delete")], "task-e")
    for reader in (saver, HandoffSaver(tmp_path / "graphs")):
        found = reader.get_tuple(kept)
        assert found is not None
        assert found.pending_writes is not None
        assert [value for _, _, value in found.pending_writes] == ["after the delete"]
