"""A saver given a serializer of the caller's (LangGraph's EncryptedSerializer) writes nothing of the state in clear."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from handoff_files.foundation.errors import HandoffError
from handoff_files.langgraph import HandoffSaver

SECRET = "tangerine-7731"  # noqa: S105 -- a marker to grep for, not a password; in a message, a plain string, a list, the metadata and an interrupt's question
KEY = b"0123456789abcdef0123456789abcdef"


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    note: str
    narrative: str
    decisions: Annotated[list[dict[str, Any]], operator.add]


def _graph(saver: HandoffSaver) -> Any:
    def think(state: State) -> State:
        return {
            "messages": [AIMessage(f"the password is {SECRET}")],
            "note": f"note {SECRET}",
            "narrative": f"story {SECRET}",
            "decisions": [{"decision": SECRET, "reason": "asked"}],
        }

    def ask(state: State) -> State:
        answer = interrupt({"question": f"may I use {SECRET}?"})
        return {"messages": [HumanMessage(str(answer))]}

    graph = StateGraph(State)
    graph.add_node("think", think)
    graph.add_node("ask", ask)
    graph.add_edge(START, "think")
    graph.add_edge("think", "ask")
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=saver)


def _run(saver: HandoffSaver) -> dict[str, Any]:
    app = _graph(saver)
    config: Any = {"configurable": {"thread_id": "t1"}, "metadata": {"tag": SECRET}}
    app.invoke({"messages": [HumanMessage(f"remember {SECRET}")]}, config)
    app.invoke(Command(resume=f"yes, {SECRET}"), config)
    values: dict[str, Any] = app.get_state(config).values
    return values


def _files_holding(root: Path, needle: bytes) -> list[str]:
    return sorted(
        str(path.relative_to(root)) for path in root.rglob("*") if path.is_file() and needle in path.read_bytes()
    )


def test_an_encrypting_serializer_leaves_nothing_of_the_state_in_clear(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    serde = EncryptedSerializer.from_pycryptodome_aes(key=KEY)
    values = _run(HandoffSaver(root, serde=serde))
    assert values["messages"][-1].content == f"yes, {SECRET}"
    assert _files_holding(root, SECRET.encode()) == []
    assert {path.name for path in root.rglob("*.jsonl")} >= {"journal.jsonl"}
    # read back by another saver with the key: the same state, history and pending interrupt answer
    again = _graph(HandoffSaver(root, serde=EncryptedSerializer.from_pycryptodome_aes(key=KEY)))
    config: Any = {"configurable": {"thread_id": "t1"}}
    assert again.get_state(config).values == values
    assert len(list(again.get_state_history(config))) >= 4


def test_without_the_key_the_checkpoint_is_refused_not_misread(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    _run(HandoffSaver(root, serde=EncryptedSerializer.from_pycryptodome_aes(key=KEY)))
    with pytest.raises(HandoffError, match="msgpack\\+aes"):
        HandoffSaver(root).get_tuple({"configurable": {"thread_id": "t1"}})


def test_the_default_serializer_still_writes_readable_json(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    _run(HandoffSaver(root))
    assert "t1/handoff.json" in _files_holding(root, SECRET.encode())
