"""A thread's kind: a LangGraph checkpointer's thread says what it is, and a plain writer's save into it is refused."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from handoff_files import HandoffStore, HandoffValidationError
from handoff_files.thread.journal import first_entry
from handoff_files.thread.kind import ThreadKindError, thread_kind
from tests.conftest import ROOT

CONTENT: dict[str, Any] = {"narrative": "Working.", "priorities": [{"task": "go on", "urgency": "first"}]}
#: What a LangGraph saver writes: its record under state.data.langgraph (the saver's own shape, abridged).
CHECKPOINT: dict[str, Any] = {
    **CONTENT,
    "state": {"data": {"langgraph": {"format": 1, "checkpoint_id": "1ef-a", "metadata": {}, "checkpoint": {}}}},
}


def _saver(path: Path) -> HandoffStore:
    """A store as HandoffSaver opens one (agent id "langgraph", the kind said)."""
    return HandoffStore(path, agent_id="langgraph", thread_id=path.name, kind="langgraph")


def test_a_savers_store_records_its_kind_in_the_created_line(thread_dir: Path) -> None:
    _saver(thread_dir).init()
    created = first_entry(thread_dir / "journal.jsonl")
    assert created is not None
    assert (created.event, created.extra.get("kind")) == ("created", "langgraph")
    assert thread_kind(HandoffStore(thread_dir).layout) == "langgraph"  # before any checkpoint


def test_a_plain_thread_has_no_kind(thread_dir: Path) -> None:
    HandoffStore(thread_dir).save(CONTENT)
    assert thread_kind(HandoffStore(thread_dir).layout) is None
    # a plain thread whose agent happens to be called "langgraph" (its folder's name) is plain: no checkpoint
    other = thread_dir.parent / "langgraph"
    HandoffStore(other).save(CONTENT)
    assert thread_kind(HandoffStore(other).layout) is None
    assert HandoffStore(other).save(CONTENT).generation == 2


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda store: store.save(CONTENT), id="save"),
        pytest.param(lambda store: store.update(lambda _: CONTENT), id="update"),
        pytest.param(lambda store: store.seal(), id="seal"),
        pytest.param(lambda store: store.migrate(ROOT / "samples" / "v1.0" / "coding-task.json"), id="migrate"),
    ],
)
def test_a_plain_write_into_a_savers_thread_is_refused_naming_the_folder_and_what_to_do(
    thread_dir: Path, write: Any
) -> None:
    saver = _saver(thread_dir)
    first = saver.save(CHECKPOINT)
    before = sorted(path.name for path in (thread_dir / "history").iterdir())
    with pytest.raises(ThreadKindError) as refused:
        write(HandoffStore(thread_dir))
    text = str(refused.value)
    assert text.startswith(f"{thread_dir}: ")
    assert "LangGraph" in text
    assert "graph.update_state(config, values)" in text
    assert "handoff show" in text
    assert sorted(path.name for path in (thread_dir / "history").iterdir()) == before
    assert saver.save(CHECKPOINT).generation == first.generation + 1  # the saver's own saves still pass


def test_sealing_a_hand_edit_of_a_checkpoint_is_refused_and_says_why(thread_dir: Path) -> None:
    _saver(thread_dir).save(CHECKPOINT)
    primary = thread_dir / "handoff.json"
    document = json.loads(primary.read_text(encoding="utf-8"))
    document["narrative"] = "Edited by hand."
    primary.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ThreadKindError, match="hand edit of a checkpoint is not sealed"):
        HandoffStore(thread_dir).seal(accept_corrupt=True)
    with pytest.raises(ThreadKindError):
        HandoffStore(thread_dir).restore(accept_edit=True)


def test_adopting_into_a_savers_new_thread_is_refused(thread_dir: Path) -> None:
    _saver(thread_dir).init()  # made by the saver (its writes come before its first checkpoint)
    HandoffStore(thread_dir.parent / "source").save(CONTENT)
    source = HandoffStore(thread_dir.parent / "source").restore().handoff
    with pytest.raises(ThreadKindError, match="LangGraph"):
        HandoffStore(thread_dir).adopt(source, {"agent_id": "source", "thread_id": "source", "generation": 1})


def test_a_thread_an_older_saver_made_is_known_by_its_newest_checkpoint(thread_dir: Path) -> None:
    # an older release's saver: no kind in its created line, only the agent id and the record
    older = HandoffStore(thread_dir, agent_id="langgraph", thread_id=thread_dir.name)
    older.save(CHECKPOINT)
    journal = thread_dir / "journal.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    journal.write_text("".join(line for line in lines if '"created"' not in line), encoding="utf-8")
    assert thread_kind(HandoffStore(thread_dir).layout) == "langgraph"
    with pytest.raises(ThreadKindError):
        HandoffStore(thread_dir).save(CONTENT)


def test_an_unknown_kind_is_refused(thread_dir: Path) -> None:
    with pytest.raises(HandoffValidationError, match="kind must be"):
        HandoffStore(thread_dir, kind="crewai")  # type: ignore[arg-type]


def test_the_refusal_pickles(thread_dir: Path) -> None:
    error = ThreadKindError(thread_dir, "a reason")
    assert str(pickle.loads(pickle.dumps(error))) == str(error)


def test_a_first_save_records_the_kind_when_another_writers_init_made_the_folders(thread_dir: Path) -> None:
    # LangGraph runs put and put_writes in two threads: put_writes' init made history/ and has not
    # written its "created" line yet when put's save, seeing history/ there, commits the first checkpoint
    (thread_dir / "history").mkdir(parents=True, mode=0o700)
    _saver(thread_dir).save(CHECKPOINT)
    _saver(thread_dir).init()  # the racing init, late: the thread is not new any more, it adds nothing
    lines = (thread_dir / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["created", "document", "saved"]  # a journal-first save
    assert json.loads(lines[0])["kind"] == "langgraph"
