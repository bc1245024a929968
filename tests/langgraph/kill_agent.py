"""A LangGraph agent of 100 steps for the kill test: run by ``handoff_killer``, killed and restarted.

Each step appends ``<step> <pid>`` to ``effects.log`` beside the thread (its side effect) and
records the step in the graph's state. A start resumes the thread where its last checkpoint left
it (``durability="sync"``: each step's checkpoint is on disk before the next step begins).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final, TypedDict

from langgraph.graph import END, START, StateGraph

from handoff_files.langgraph import HandoffSaver

STEPS: Final = 100


class State(TypedDict, total=False):
    count: int
    done: list[int]


def _effects() -> Path:
    return Path(os.environ["HANDOFF_DIR"]).parent / "effects.log"


def _work(state: State) -> State:
    step = state.get("count", 0) + 1
    with _effects().open("a", encoding="utf-8") as log:
        log.write(f"{step} {os.getpid()}\n")
    return {"count": step, "done": [*state.get("done", []), step]}


def _more(state: State) -> str:
    return "work" if state.get("count", 0) < STEPS else END


def main() -> None:
    """Start the graph, or resume it from its last checkpoint."""
    thread = Path(os.environ["HANDOFF_DIR"])
    graph = StateGraph(State)
    graph.add_node("work", _work)
    graph.add_edge(START, "work")
    graph.add_conditional_edges("work", _more, ["work", END])
    app = graph.compile(checkpointer=HandoffSaver(thread.parent))
    config: Any = {"configurable": {"thread_id": thread.name}, "recursion_limit": 10 * STEPS}
    snapshot = app.get_state(config)
    if snapshot.values.get("count") == STEPS and not snapshot.next:
        return
    # a thread with a checkpoint resumes from it (None as input), even when `next` is empty: a step
    # whose writes were saved before the kill counts as done and is not run again
    start: State | None = None if snapshot.created_at else {"count": 0, "done": []}
    app.invoke(start, config, durability="sync")


if __name__ == "__main__":
    main()
