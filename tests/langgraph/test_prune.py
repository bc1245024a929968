"""Growth under control: ``keep=N`` and ``handoff prune`` keep the newest checkpoints and their writes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from handoff_files.cli.main import main
from handoff_files.langgraph import HandoffSaver


def _put(saver: HandoffSaver, thread: str, steps: int) -> list[str]:
    ids: list[str] = []
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    base = empty_checkpoint()
    for step in range(steps):
        checkpoint = create_checkpoint(base, None, step)
        checkpoint["channel_values"] = {"n": step}
        checkpoint["channel_versions"] = {"n": step + 1}
        metadata: Any = {"step": step}
        config = saver.put(config, checkpoint, metadata, {"n": step + 1})
        saver.put_writes(config, [("n", step * 10)], task_id="t")
        ids.append(config["configurable"]["checkpoint_id"])
        base = checkpoint
    return ids


def _ids(saver: HandoffSaver, thread: str) -> list[str]:
    return [
        item.config["configurable"]["checkpoint_id"] for item in saver.list({"configurable": {"thread_id": thread}})
    ]


def test_keep_keeps_the_newest_checkpoints_and_their_writes_and_the_chain_resumes(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs", keep=3)
    ids = _put(saver, "t", 8)
    assert _ids(saver, "t") == ids[::-1][:3]
    newest = saver.get_tuple({"configurable": {"thread_id": "t"}})
    assert newest is not None
    assert newest.checkpoint["channel_values"] == {"n": 7}
    assert newest.pending_writes == [("t", "n", 70)]
    writes = sorted(path.stem for path in (tmp_path / "graphs" / "t" / "writes").glob("*.jsonl"))
    assert [stem.partition("+")[2] for stem in writes] == ids[-3:], "the removed checkpoints' writes went with them"
    history = sorted(path.stem for path in (tmp_path / "graphs" / "t" / "history").iterdir())
    assert [stem.partition("+")[0] for stem in writes] == history, "each named by its checkpoint's generation"


def test_handoff_prune_dry_run_removes_nothing_then_prunes(tmp_path: Path, capsys: Any) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    first, second = _put(saver, "first", 5), _put(saver, "second", 2)
    assert main(["prune", str(root), "--keep", "2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "first (root): would keep 2, would remove 3" in out
    assert "would remove 3 checkpoint(s) from 1 of 2 namespace(s)" in out
    assert _ids(saver, "first") == first[::-1], "a dry run removes nothing"
    assert main(["prune", str(root), "--keep", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {row["thread_id"]: len(row["removed"]) for row in report} == {"first": 3, "second": 0}
    assert _ids(HandoffSaver(root), "first") == first[::-1][:2]
    assert _ids(HandoffSaver(root), "second") == second[::-1]


def test_handoff_prune_refuses_a_keep_below_one_as_a_usage_error(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    done = subprocess.run(
        [python, "-m", "handoff_files", "prune", str(tmp_path), "--keep", "0"],
        env=subprocess_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "argument --keep: must be a whole number, 1 or more" in done.stderr, done.stderr


def test_handoff_prune_of_a_thread_not_under_the_root_says_so(tmp_path: Path, capsys: Any) -> None:
    root = tmp_path / "graphs"
    _put(HandoffSaver(root), "first", 2)
    assert main(["prune", str(root), "--keep", "1", "--thread", "second"]) == 1
    assert "no LangGraph thread 'second' under this root" in capsys.readouterr().err
