"""Damage passed over and named; copy, delete and prune under the writers' lock, leaving no words or half threads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph

from handoff_files import HandoffError
from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.index import MendedCheckpointWarning
from handoff_files.langgraph.threads import DamagedCheckpointWarning


class State(TypedDict, total=False):
    narrative: str
    count: int


def _app(saver: HandoffSaver) -> Any:
    def step(state: State) -> State:
        count = state.get("count", 0) + 1
        return {"count": count, "narrative": f"Step {count} of the import fix. More follows."}

    graph = StateGraph(State)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", lambda state: "step" if state.get("count", 0) < 4 else END, ["step", END])
    return graph.compile(checkpointer=saver)


def _config(thread: str = "t", **extra: Any) -> Any:
    return {"configurable": {"thread_id": thread}, **extra}


def test_a_damaged_old_checkpoint_is_passed_over_and_named_by_history_list_and_copy(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs", durability="full")  # no copy in the journal to mend it from
    app = _app(saver)
    app.invoke({"count": 0}, _config())
    count = len(list(app.get_state_history(_config())))
    damaged = tmp_path / "graphs" / "t" / "history" / "00000003.json"  # step 1: "Step 1 of …"
    damaged.write_bytes(damaged.read_bytes().replace(b"Step", b"Stop", 1))
    with pytest.warns(DamagedCheckpointWarning, match="00000003.json") as caught:
        history = list(_app(HandoffSaver(tmp_path / "graphs", durability="full")).get_state_history(_config()))
    assert len(history) == count - 1
    assert history[0].values["count"] == 4
    words = str(caught[0].message)
    assert "handoff doctor" in words
    assert "handoff prune" in words
    assert "handoff seal" not in words
    with pytest.warns(DamagedCheckpointWarning):
        assert [item.checkpoint["id"] for item in saver.list(_config(), limit=1)] == [
            history[0].config["configurable"]["checkpoint_id"]
        ]
    with pytest.warns(DamagedCheckpointWarning):
        saver.copy_thread("t", "u")
    assert len(list(saver.list(_config("u")))) == count - 1
    assert _app(saver).get_state(_config("u")).values["count"] == 4


def test_a_damaged_old_checkpoint_is_written_again_from_its_journal_line_at_the_first_read(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs")  # journal durability: each put's line holds its checkpoint
    app = _app(saver)
    app.invoke({"count": 0}, _config())
    count = len(list(app.get_state_history(_config())))
    damaged = tmp_path / "graphs" / "t" / "history" / "00000003.json"
    good = damaged.read_bytes()
    damaged.write_bytes(good[: len(good) // 2])  # as a power loss leaves an unflushed copy
    with pytest.warns(MendedCheckpointWarning, match="00000003.json did not verify"):
        history = list(_app(HandoffSaver(tmp_path / "graphs")).get_state_history(_config()))
    assert len(history) == count
    assert damaged.read_bytes() == good
    kept = [path.name for path in damaged.parent.iterdir() if path.name.startswith("damaged-")]
    assert len(kept) == 1
    assert kept[0].endswith("-00000003.json")


def test_doctor_repairs_a_damaged_copy_of_the_newest_checkpoint_from_the_primary(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    _app(saver).invoke({"count": 0}, _config())
    thread = tmp_path / "graphs" / "t"
    newest = sorted((thread / "history").iterdir())[-1]
    good = newest.read_bytes()
    newest.write_bytes(good.replace(b"Step", b"Stop", 1))
    done = subprocess.run(
        [sys.executable, "-m", "handoff_files", "doctor", str(thread), "--repair"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert newest.read_bytes() == good, done.stdout + done.stderr
    assert len(list(HandoffSaver(tmp_path / "graphs").list(_config()))) >= 5


def test_a_failed_copy_leaves_no_target_thread(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    _app(saver).invoke({"count": 0}, _config())
    writes = sorted((tmp_path / "graphs" / "t" / "writes").glob("*.jsonl"))
    writes[0].write_bytes(b"\x00" * 40)  # the pending writes of one checkpoint: damage, refused when read
    with pytest.raises(HandoffError):
        saver.copy_thread("t", "u")
    assert not (tmp_path / "graphs" / "u").exists()
    assert not [p for p in (tmp_path / "graphs").iterdir() if p.name.startswith(".copying")]
    assert saver.get_tuple(_config("u")) is None


def test_a_copy_never_merges_into_a_thread_that_appeared_meanwhile(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    _app(saver).invoke({"count": 0}, _config())
    other = tmp_path / "graphs" / "u"
    other.mkdir()
    (other / "notes.txt").write_text("someone's", encoding="utf-8")
    with pytest.raises(HandoffError, match="already exists"):
        saver.copy_thread("t", "u")
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]


_HOLDER = """
import sys, time
from langgraph.checkpoint.base import empty_checkpoint
from handoff_files.langgraph import HandoffSaver
saver = HandoffSaver(sys.argv[1])
config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
namespace = saver.folders.ready(saver.folders.ns_dir("t", ""))
with namespace.store.locked():
    print("held", flush=True)
    time.sleep(1.0)
    saver.put(config, empty_checkpoint(), {}, {})  # lands before the delete that waits for the lock
"""


def test_delete_thread_waits_for_a_writer_holding_the_lock(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    _app(saver).invoke({"count": 0}, _config())
    with subprocess.Popen([sys.executable, "-c", _HOLDER, str(root)], stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        saver.delete_thread("t")
        assert holder.wait(timeout=60) == 0
    assert HandoffSaver(root).get_tuple(_config()) is None, "the writer's put landed after the delete"
    assert not (root / "t").exists()


def test_deleted_checkpoints_leave_no_words_in_the_journal(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    app = _app(saver)
    app.invoke({"count": 0}, _config(metadata={"run_id": "run-1"}))
    journal = tmp_path / "graphs" / "t" / "journal.jsonl"
    assert b"Step 4 of the import fix" in journal.read_bytes()
    assert {item.metadata.get("run_id") for item in saver.list(_config())} == {"run-1"}
    saver.delete_for_runs(["run-1"])
    text = journal.read_bytes()
    assert b"of the import fix" not in text
    assert b"(removed: its generation was deleted)" in text
    assert saver.get_tuple(_config()) is None


class DeltaState(TypedDict, total=False):
    items: Annotated[list[str], DeltaChannel(lambda state, writes: [*(state or []), *(x for w in writes for x in w)])]


def _delta_app(saver: HandoffSaver) -> Any:
    graph = StateGraph(DeltaState)
    graph.add_node("add", lambda state: {"items": [f"item {len(state.get('items') or [])}"]})
    graph.add_edge(START, "add")
    graph.add_conditional_edges("add", lambda state: "add" if len(state.get("items") or []) < 3 else END, ["add", END])
    return graph.compile(checkpointer=saver)


def test_pruning_a_graph_with_a_delta_channel_is_refused_not_silent(tmp_path: Path) -> None:
    with pytest.raises(HandoffError, match="DeltaChannel"):
        _delta_app(HandoffSaver(tmp_path / "kept", keep=2)).invoke({"items": []}, _config())
    saver = HandoffSaver(tmp_path / "graphs")
    app = _delta_app(saver)
    app.invoke({"items": []}, _config())
    before = app.get_state(_config()).values["items"]
    assert len(before) == 3
    with pytest.raises(HandoffError, match="DeltaChannel"):
        saver.prune(["t"])
    assert _delta_app(HandoffSaver(tmp_path / "graphs")).get_state(_config()).values["items"] == before


def test_handoff_prune_of_a_savers_thread_folder_is_refused_with_the_roots_command(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    _app(saver).invoke({"count": 0}, _config())
    thread = tmp_path / "graphs" / "t"
    before = sorted(str(path.relative_to(thread)) for path in thread.rglob("*"))
    done = subprocess.run(
        [sys.executable, "-m", "handoff_files", "prune", str(thread), "--keep", "1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"handoff prune {tmp_path / 'graphs'} --keep 1" in done.stderr
    assert sorted(str(path.relative_to(thread)) for path in thread.rglob("*")) == before


def test_pruning_a_damaged_checkpoint_removes_its_pending_writes_too(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs", durability="full")  # no copy in the journal to mend it from
    _app(saver).invoke({"count": 0}, _config())
    thread = tmp_path / "graphs" / "t"
    damaged = thread / "history" / "00000003.json"
    damaged.write_bytes(damaged.read_bytes().replace(b"Step", b"Stop", 1))
    assert [p for p in (thread / "writes").glob("*.jsonl") if p.name.startswith("00000003+")]
    saver.prune(["t"])
    assert not damaged.exists()
    assert [p.name for p in (thread / "writes").glob("*.jsonl")] == [
        p.name
        for p in (thread / "writes").glob("*.jsonl")
        if p.name.startswith(sorted((thread / "history").iterdir())[-1].stem)
    ]
