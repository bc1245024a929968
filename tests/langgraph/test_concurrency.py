"""Several processes on one saver root: different threads side by side, and two writers on the same thread."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from handoff_files.langgraph import HandoffSaver

PUTS = 60


def test_two_writers_on_one_thread_and_two_on_others_lose_no_put_and_reuse_no_id(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    root = tmp_path / "graphs"
    plan = [("shared", "a"), ("shared", "b"), ("own-1", "c"), ("own-2", "d")]
    workers = [
        subprocess.Popen(
            [python, "-m", "tests.langgraph.put_worker", str(root), thread, str(PUTS), tag],
            env=subprocess_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for thread, tag in plan
    ]
    acknowledged: dict[str, list[str]] = {}
    for (thread, tag), worker in zip(plan, workers, strict=True):
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err  # no "database is locked", no error of any kind
        acknowledged.setdefault(thread, []).extend(out.split())
        assert len(out.split()) == PUTS, tag
    saver = HandoffSaver(root)
    for thread, ids in acknowledged.items():
        stored = list(saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}))
        stored_ids = [item.config["configurable"]["checkpoint_id"] for item in stored]
        assert sorted(stored_ids) == sorted(ids), f"{thread}: every acknowledged put is there, and only those"
        assert len(set(stored_ids)) == len(stored_ids), f"{thread}: no checkpoint id is used twice"
        for item in stored:
            metadata: dict[str, Any] = dict(item.metadata)
            writer, value = metadata["writer"], item.checkpoint["channel_values"]["who"]
            assert item.pending_writes == [(f"{writer}-task", "who", f"{value}-write")]
    assert len(acknowledged["shared"]) == 2 * PUTS
