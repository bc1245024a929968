"""A LangGraph agent whose one task writes 9 channels per step, for the kill test on a bucket.

``python -m tests.langgraph.wide_agent ROOT THREAD`` starts the graph, or resumes it from its last
checkpoint, and runs it to the end (``durability="sync"``). A step sets ``count`` and ``c0``..``c7``
to the same number: a checkpoint whose channels disagree was resumed from part of a task's writes.
"""

from __future__ import annotations

import sys
from typing import Any, Final, TypedDict

from langgraph.graph import END, START, StateGraph

from handoff_files.langgraph import HandoffSaver

STEPS: Final = 40
CHANNELS: Final = tuple(f"c{i}" for i in range(8))


class State(TypedDict, total=False):
    count: int
    c0: int
    c1: int
    c2: int
    c3: int
    c4: int
    c5: int
    c6: int
    c7: int


def _work(state: State) -> dict[str, int]:
    step = state.get("count", 0) + 1
    return {"count": step, **dict.fromkeys(CHANNELS, step)}


def _more(state: State) -> str:
    return "work" if state.get("count", 0) < STEPS else END


def main(root: str, thread: str) -> None:
    """Start the graph, or resume it from its last checkpoint, and run it to the end."""
    graph = StateGraph(State)
    graph.add_node("work", _work)
    graph.add_edge(START, "work")
    graph.add_conditional_edges("work", _more, ["work", END])
    app = graph.compile(checkpointer=HandoffSaver(root))
    config: Any = {"configurable": {"thread_id": thread}, "recursion_limit": 10 * STEPS}
    snapshot = app.get_state(config)
    if snapshot.values.get("count") == STEPS and not snapshot.next:
        return
    start: Any = {"count": 0, **dict.fromkeys(CHANNELS, 0)}
    app.invoke(None if snapshot.created_at else start, config, durability="sync")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
