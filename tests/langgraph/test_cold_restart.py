"""A fresh process finds the newest checkpoint from one file, at 10 checkpoints as at hundreds, never a wrong one."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from handoff_files.langgraph import HandoffSaver

THREAD: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}

# the child counts the files it opens under history/ while it reads the newest checkpoint (an audit hook
# sees every open, the C library's too); it prints the count and the checkpoint's id and value
_CHILD = """
import json, sys
from handoff_files.langgraph import HandoffSaver
saver = HandoffSaver(sys.argv[1])
opened = []
def look(event, args):
    if event == "open" and "history" in str(args[0]):
        opened.append(str(args[0]))
sys.addaudithook(look)
got = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
print(json.dumps({"opened": len(opened), "id": got.checkpoint["id"], "n": got.checkpoint["channel_values"]["n"]}))
"""


def _checkpoint(base: Any, step: int) -> Any:
    checkpoint = create_checkpoint(base, None, step)
    checkpoint["channel_values"] = {"n": step}
    checkpoint["channel_versions"] = {"n": step + 1}
    return checkpoint


def _chain(saver: HandoffSaver, steps: int, start: int = 0) -> list[str]:
    config: Any = THREAD
    base = empty_checkpoint()
    ids = []
    for step in range(start, start + steps):
        base = _checkpoint(base, step)
        config = saver.put(config, base, {"step": step}, {"n": step + 1})
        ids.append(base["id"])
    return ids


def _fresh(python: str, env: dict[str, str], root: Path) -> dict[str, Any]:
    done = subprocess.run([python, "-c", _CHILD, str(root)], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_first_read_of_a_fresh_process_opens_the_same_files_at_10_and_at_300_checkpoints(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    counts = {}
    for size in (10, 300):
        root = tmp_path / f"graphs-{size}"
        ids = _chain(HandoffSaver(root), size)
        got = _fresh(python, subprocess_env, root)
        assert (got["id"], got["n"]) == (ids[-1], size - 1)
        counts[size] = got["opened"]
    assert counts[10] == counts[300] <= 1, counts


def test_a_checkpoint_put_out_of_id_order_never_hides_the_newest(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    ids = _chain(saver, 3)
    late = _checkpoint(empty_checkpoint(), 9)
    late["id"] = "0" + ids[0][1:]  # an id below every other: put last, yet not the newest
    saver.put(THREAD, late, {}, {"n": 10})
    assert saver.get_tuple(THREAD).checkpoint["id"] == ids[-1]  # type: ignore[union-attr]
    got = _fresh(python, subprocess_env, root)
    assert got["id"] == ids[-1]
    assert got["opened"] > 1, "the index was read: the newest file does not prove itself the newest"


def test_two_savers_writing_by_turns_and_a_lost_primary_still_give_the_newest(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    root = tmp_path / "graphs"
    first, second = HandoffSaver(root), HandoffSaver(root)
    ids = _chain(first, 2) + _chain(second, 2, start=2) + _chain(first, 1, start=4)
    assert _fresh(python, subprocess_env, root)["id"] == ids[-1]
    assert first.get_tuple(THREAD).checkpoint["id"] == ids[-1]  # type: ignore[union-attr]
    assert second.get_tuple(THREAD).checkpoint["id"] == ids[-1]  # type: ignore[union-attr]
    # a crash after the newest's history/ copy, before its primary: the primary is the generation before
    history = root / "t" / "history"
    newest, before = sorted(history.iterdir())[-1], sorted(history.iterdir())[-2]
    shutil.copyfile(before, root / "t" / "handoff.json")
    assert newest.exists()
    got = _fresh(python, subprocess_env, root)
    assert (got["id"], got["n"]) == (ids[-1], 4)


def test_deleting_the_newest_checkpoints_run_gives_the_one_before(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    config: Any = THREAD
    base = empty_checkpoint()
    ids = []
    for step, run in enumerate(("run-a", "run-a", "run-b")):
        base = _checkpoint(base, step)
        config = saver.put(config, base, {"run_id": run}, {"n": step + 1})
        ids.append(base["id"])
    saver.delete_for_runs(["run-b"])
    assert HandoffSaver(root).get_tuple(THREAD).checkpoint["id"] == ids[1]  # type: ignore[union-attr]
    assert saver.get_tuple(THREAD).checkpoint["id"] == ids[1]  # type: ignore[union-attr]
