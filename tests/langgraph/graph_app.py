"""A real LangGraph graph for the saver's tests: several nodes, a conditional edge, a subgraph and an interrupt.

Run as a script to drive one step of it in a fresh process:
``python -m tests.langgraph.graph_app ROOT THREAD start|resume`` prints the result as JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    narrative: str
    decisions: list[dict[str, Any]]
    count: int


def _plan(state: State) -> State:
    return {"narrative": "Planning the work.", "messages": [AIMessage("plan made", id="plan")], "count": 0}


def _child_step(state: State) -> State:
    step = state.get("count", 0)
    return {"messages": [AIMessage(f"sub-step {step}", id=f"sub-{step}")]}


def _work(state: State) -> State:
    step = state.get("count", 0) + 1
    return {"count": step, "messages": [AIMessage(f"worked {step}", id=f"work-{step}")]}


def _route(state: State) -> str:
    return "work" if state.get("count", 0) < 3 else "review"


def _review(state: State) -> State:
    answer = interrupt({"question": "ship it?", "count": state.get("count", 0)})
    return {
        "narrative": f"Reviewed after {state.get('count', 0)} steps: {answer}.",
        "decisions": [{"decision": "ship", "reason": f"the reviewer said {answer}"}],
        "messages": [HumanMessage(str(answer), id="answer")],
    }


def build(saver: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The graph, compiled with *saver*."""
    child = StateGraph(State)
    child.add_node("child_step", _child_step)
    child.add_edge(START, "child_step")
    child.add_edge("child_step", END)
    graph = StateGraph(State)
    graph.add_node("plan", _plan)
    graph.add_node("sub", child.compile())
    graph.add_node("work", _work)
    graph.add_node("review", _review)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "sub")
    graph.add_conditional_edges("sub", _route, {"work": "work", "review": "review"})
    graph.add_edge("work", "sub")
    graph.add_edge("review", END)
    return graph.compile(checkpointer=saver)


def step(saver: BaseCheckpointSaver[Any], thread: str, action: str) -> dict[str, Any]:
    """Start the graph (it stops at the review's interrupt) or resume it; the state after, as JSON."""
    graph = build(saver)
    config: Any = {"configurable": {"thread_id": thread}}
    if action == "start":
        graph.invoke({"messages": [HumanMessage("begin", id="begin")]}, config)
    else:
        graph.invoke(Command(resume="yes"), config)
    return summary(graph, config)


def summary(graph: CompiledStateGraph[Any, Any, Any, Any], config: Any) -> dict[str, Any]:
    """The state and the whole history, in a form two savers' runs can be compared by."""

    def values(raw: dict[str, Any]) -> dict[str, Any]:
        out = {key: value for key, value in raw.items() if key != "messages"}
        out["messages"] = [(message.type, message.content, message.id) for message in raw.get("messages", [])]
        return out

    snapshot = graph.get_state(config)
    history = [
        {
            "values": values(item.values),
            "next": list(item.next),
            "step": item.metadata.get("step") if item.metadata else None,
            "source": item.metadata.get("source") if item.metadata else None,
            "interrupts": [interrupt_.value for interrupt_ in item.interrupts],
            "parent": item.parent_config is not None,
        }
        for item in graph.get_state_history(config)
    ]
    return {"values": values(snapshot.values), "next": list(snapshot.next), "history": history}


if __name__ == "__main__":
    from handoff_files.langgraph import HandoffSaver

    print(json.dumps(step(HandoffSaver(sys.argv[1]), sys.argv[2], sys.argv[3]), default=str))
