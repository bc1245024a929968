"""What a person reads in a saver's files: an interrupt's question, writes named by generation, LangGraph's parent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from handoff_files import load
from handoff_files.langgraph import HandoffSaver


class State(TypedDict, total=False):
    answer: Any
    count: int


def _app(saver: HandoffSaver, question: Any) -> Any:
    def count(state: State) -> State:
        return {"count": state.get("count", 0) + 1}

    def ask(state: State) -> State:
        return {"answer": interrupt(question)}

    graph = StateGraph(State)
    graph.add_node("count", count)
    graph.add_node("ask", ask)
    graph.add_edge(START, "count")
    graph.add_edge("count", "ask")
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=saver)


CONFIG: Any = {"configurable": {"thread_id": "t"}}


def test_the_question_an_interrupt_asks_is_plain_json_and_resumes_in_a_fresh_saver(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    question = {"question": "Ship the importer fix?", "options": ["yes", "no"]}
    _app(HandoffSaver(root), question).invoke({"count": 0}, CONFIG)
    files = (root / "t" / "writes").glob("*.jsonl")
    lines = [json.loads(line) for path in files for line in path.read_text().splitlines()]
    asked = [line for line in lines if line["channel"] == "__interrupt__"]
    assert len(asked) == 1
    assert asked[0]["value"]["interrupts"][0]["value"] == question, "readable, not base64 msgpack"
    app = _app(HandoffSaver(root), question)
    (task,) = app.get_state(CONFIG).tasks
    assert task.interrupts[0].value == question
    assert app.invoke(Command(resume="yes"), CONFIG)["answer"] == "yes"


def test_an_interrupt_value_json_cannot_hold_stays_typed_and_reads_back(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    _app(HandoffSaver(root), {"choices": {"a", "b"}}).invoke({"count": 0}, CONFIG)
    (task,) = _app(HandoffSaver(root), None).get_state(CONFIG).tasks
    assert task.interrupts[0].value == {"choices": {"a", "b"}}


def test_writes_files_are_named_by_their_checkpoints_generation(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    _app(saver, "ok?").invoke({"count": 0}, CONFIG)
    by_generation = {}
    for path in (root / "t" / "history").iterdir():
        record = load(path).state.data["langgraph"]
        by_generation[path.stem] = record["checkpoint_id"]
    names = sorted(path.stem for path in (root / "t" / "writes").glob("*.jsonl"))
    assert names
    for name in names:
        generation, _, checkpoint = name.partition("+")
        assert by_generation[generation] == checkpoint, name


def test_each_checkpoint_records_langgraphs_parent_and_its_file_even_after_a_fork(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    app = _app(saver, "ok?")
    app.invoke({"count": 0}, CONFIG)
    history = list(app.get_state_history(CONFIG))
    old = history[-2]  # an early checkpoint: fork from it
    app.update_state(old.config, {"count": 41})
    records = {}
    for path in (root / "t" / "history").iterdir():
        handoff = load(path)
        records[handoff.generation] = handoff.state.data["langgraph"]
    newest = records[max(records)]
    parent = newest["parent_checkpoint_id"]
    assert parent == old.config["configurable"]["checkpoint_id"]
    assert records[newest["parent_generation"]]["checkpoint_id"] == parent
    assert newest["parent_generation"] != max(records) - 1, "the fork's parent is not the file saved before it"


def test_writes_that_come_before_their_checkpoint_are_renamed_to_its_generation_when_it_is_put(tmp_path: Path) -> None:
    from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

    saver = HandoffSaver(tmp_path / "graphs")
    first = create_checkpoint(empty_checkpoint(), None, 0)
    config = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, first, {}, {})
    ahead = create_checkpoint(first, None, 1)  # async durability: its step's writes land before its put
    ahead_config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": ahead["id"]}}
    saver.put_writes(ahead_config, [("n", "result")], task_id="task")
    writes = tmp_path / "graphs" / "t" / "writes"
    assert sorted(path.name for path in writes.glob("*.jsonl")) == [f"{ahead['id']}.jsonl"]
    saver.put(config, ahead, {}, {})
    assert sorted(path.name for path in writes.glob("*.jsonl")) == [f"00000002+{ahead['id']}.jsonl"]
    saver.put_writes(ahead_config, [("n", "again")], task_id="task2")
    assert sorted(path.name for path in writes.glob("*.jsonl")) == [f"00000002+{ahead['id']}.jsonl"]
    got = HandoffSaver(tmp_path / "graphs").get_tuple(ahead_config)
    assert got is not None
    assert got.pending_writes == [("task", "n", "result"), ("task2", "n", "again")]


def _cli(*args: object) -> Any:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "handoff_files", *map(str, args)], capture_output=True, text=True, check=False
    )


def test_handoff_show_gives_an_interrupts_question_itself_not_its_stored_form(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    question = "What is your name? Please type it as it is on your passport."
    _app(HandoffSaver(root), question).invoke({"count": 0}, CONFIG)
    done = _cli("show", root / "t")
    assert done.returncode == 0, done.stderr
    interrupts = done.stdout.split("INTERRUPTS", 1)[1].split("CHANNELS", 1)[0]
    assert '"What is your name? Please type it' in interrupts
    assert "interrupts" not in interrupts.lower().split("\n", 1)[1], "the stored form's keys are not shown"


def test_handoff_doctor_finds_a_damaged_pending_writes_file_that_get_tuple_would_fail_on(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    _app(HandoffSaver(root), "ok?").invoke({"count": 0}, CONFIG)
    assert _cli("doctor", root / "t").returncode == 0
    newest = sorted((root / "t" / "writes").glob("*.jsonl"))[-1]
    newest.write_bytes(newest.read_bytes().replace(b"ok?", b"no?", 1))
    done = _cli("doctor", root / "t")
    assert done.returncode == 1, done.stdout
    assert newest.name in done.stdout
    assert "move the file out of writes/" in done.stdout
