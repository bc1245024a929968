"""States past what a readable file holds: each large value in a blob of its own, read back, checked, collected."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.graph import END, START, StateGraph

from handoff_files import HandoffError
from handoff_files.langgraph import HandoffSaver

THREAD: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _big(megabytes: float, tag: str = "x") -> list[str]:
    return [f"{tag}{index:07d} " + "y" * 991 for index in range(int(megabytes * 1000))]


def _put(saver: HandoffSaver, config: Any, base: Any, step: int, value: Any, *, run: str = "run") -> tuple[Any, Any]:
    checkpoint = create_checkpoint(base, None, step)
    checkpoint["channel_values"] = {"big": value, "n": step}
    checkpoint["channel_versions"] = {"big": step + 1, "n": step + 1}
    return saver.put(config, checkpoint, {"run_id": run}, {"big": step + 1, "n": step + 1}), checkpoint


def _blobs(root: Path) -> list[Path]:
    return sorted((root / "t" / "blobs").iterdir()) if (root / "t" / "blobs").exists() else []


def test_a_40_mb_state_is_stored_and_read_back_whole_by_a_fresh_saver(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    value = _big(40)
    config, _ = _put(HandoffSaver(root), THREAD, empty_checkpoint(), 0, value)
    got = HandoffSaver(root).get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"]["big"] == value
    (history,) = (root / "t" / "history").iterdir()
    assert history.stat().st_size < 64 * 1024, "the checkpoint's file stays small and readable"
    (blob,) = _blobs(root)
    assert blob.stat().st_size > 40_000_000
    assert blob.read_bytes().count(b"\n") == 0, "one JSON value, one line"


def test_a_large_value_goes_to_one_blob_shared_by_every_checkpoint_that_holds_it(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    value = _big(1)
    config, base = _put(saver, THREAD, empty_checkpoint(), 0, value)
    config, base = _put(saver, config, base, 1, value)
    assert len(_blobs(root)) == 1, "an unchanged value is written once"
    config, base = _put(saver, config, base, 2, _big(1, "z"), run="other")
    assert len(_blobs(root)) == 2
    got = HandoffSaver(root).get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"]["big"] == _big(1, "z")
    history = list(HandoffSaver(root).list(THREAD))
    assert [item.checkpoint["channel_values"]["big"][0][0] for item in history] == ["z", "x", "x"]
    saver.delete_for_runs(["other"])
    assert len(_blobs(root)) == 1, "the blob no checkpoint names any more goes with it"
    saver.prune(["t"])
    assert len(_blobs(root)) == 1, "the newest kept still names it"


def test_keep_collects_the_blobs_of_checkpoints_it_drops(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root, keep=1)
    config, base = THREAD, empty_checkpoint()
    for step in range(3):
        config, base = _put(saver, config, base, step, _big(0.5, chr(ord("a") + step)))
    assert len(_blobs(root)) == 1


def test_a_damaged_blob_is_refused_naming_it_never_read_as_another_value(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    config, _ = _put(HandoffSaver(root), THREAD, empty_checkpoint(), 0, _big(0.5))
    (blob,) = _blobs(root)
    data = bytearray(blob.read_bytes())
    data[100] ^= 1
    blob.write_bytes(bytes(data))
    with pytest.raises(HandoffError, match=blob.name):
        HandoffSaver(root).get_tuple(config)
    blob.unlink()
    with pytest.raises(HandoffError, match=blob.name):
        HandoffSaver(root).get_tuple(config)


class State(TypedDict, total=False):
    big: list[str]
    n: int


def test_a_graph_whose_node_returns_a_large_update_runs_resumes_and_copies(tmp_path: Path) -> None:
    root = tmp_path / "graphs"

    def grow(state: State) -> State:
        return {"big": _big(0.4, str(state.get("n", 0))), "n": state.get("n", 0) + 1}

    graph = StateGraph(State)
    graph.add_node("grow", grow)
    graph.add_edge(START, "grow")
    graph.add_conditional_edges("grow", lambda state: "grow" if state.get("n", 0) < 3 else END, ["grow", END])
    config: Any = {"configurable": {"thread_id": "t"}}
    graph.compile(checkpointer=HandoffSaver(root)).invoke({"n": 0}, config)
    again = graph.compile(checkpointer=HandoffSaver(root))
    assert again.get_state(config).values["big"] == _big(0.4, "2")
    saver = HandoffSaver(root)
    saver.copy_thread("t", "u")
    copied = graph.compile(checkpointer=saver)
    assert copied.get_state({"configurable": {"thread_id": "u"}}).values == again.get_state(config).values
    history = list(copied.get_state_history({"configurable": {"thread_id": "u"}}))
    assert len(history) == len(list(again.get_state_history(config)))
    assert (root / "u" / "blobs").is_dir()


def test_a_large_pending_write_is_stored_in_a_blob_and_read_back(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    config, _ = _put(saver, THREAD, empty_checkpoint(), 0, "small")
    saver.put_writes(config, [("big", _big(0.5))], task_id="task")
    writes = next((root / "t" / "writes").glob("*.jsonl"))
    assert writes.stat().st_size < 4096
    got = HandoffSaver(root).get_tuple(config)
    assert got is not None
    assert got.pending_writes == [("task", "big", _big(0.5))]


def test_handoff_show_names_a_large_value_by_its_blob_and_size_without_reading_it(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = tmp_path / "graphs"
    _put(HandoffSaver(root), THREAD, empty_checkpoint(), 0, _big(0.5))
    (blob,) = _blobs(root)
    blob.write_bytes(b"damage")  # show never reads it: nothing to refuse
    done = subprocess.run(
        [sys.executable, "-m", "handoff_files", "show", str(root / "t")], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"<in blobs/{blob.stem[:12]}…" in done.stdout


def test_handoff_doctor_finds_a_damaged_or_missing_blob(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = tmp_path / "graphs"
    _put(HandoffSaver(root), THREAD, empty_checkpoint(), 0, _big(0.5))

    def doctor() -> Any:
        command = [sys.executable, "-m", "handoff_files", "doctor", str(root / "t")]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    assert doctor().returncode == 0
    (blob,) = _blobs(root)
    data = bytearray(blob.read_bytes())
    data[10] ^= 1
    blob.write_bytes(bytes(data))
    done = doctor()
    assert done.returncode == 1
    assert blob.name in done.stdout
    assert "do not hash to the digest" in done.stdout
    blob.unlink()
    assert doctor().returncode == 1
