"""HandoffSaver beside SqliteSaver: the same LangGraph graph run to its end on each, and put/get_tuple alone.

Usage: ``python -m bench.bench_langgraph [--quick] [--out PATH]`` (``make bench`` runs it in
``.venv-bench``, where ``langgraph-checkpoint-sqlite`` is installed).

The graph: ``STEPS`` steps of one node that rewrites the state's ``payload`` (1 KB or 100 KB of
text) and counts, so every step's checkpoint holds a changed value of that size on both savers
(SqliteSaver stores a changed channel's whole value, as HandoffSaver does). A graph run is one
``invoke`` on a fresh thread, ``durability="sync"`` (each step's checkpoint written before the next
step). ``put`` and ``get_tuple`` are timed alone with a checkpoint of that graph. Rounds are
interleaved, each contender once per round in rotating order; ratios are median ÷ median.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypedDict

from bench.report import machine_facts, markdown_table, ms, run_kind, text_table, write_report
from bench.timing import interleaved

STEPS: Final = 20
SIZES: Final = (("1 KB", 1024), ("100 KB", 100 * 1024))
DEFAULT_OUT: Final = Path(__file__).resolve().parent / "results-langgraph.md"
GOAL: Final = 1.0


class State(TypedDict, total=False):
    payload: str
    count: int


def _graph(saver: Any, size: int) -> Any:
    from langgraph.graph import END, START, StateGraph

    def step(state: State) -> State:
        count = state.get("count", 0) + 1
        return {"count": count, "payload": (f"{count:06d} " * (size // 7 + 1))[:size]}

    graph = StateGraph(State)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", lambda state: "step" if state.get("count", 0) < STEPS else END, ["step", END])
    return graph.compile(checkpointer=saver)


def _contenders(root: Path) -> dict[str, Any]:
    from handoff_files.langgraph import HandoffSaver

    # by name: langgraph-checkpoint-sqlite is in .venv-bench only, where mypy does not look
    sqlite_module: Any = importlib.import_module("langgraph.checkpoint.sqlite")
    sqlite = sqlite_module.SqliteSaver(sqlite3.connect(root / "graphs.sqlite", check_same_thread=False))
    sqlite.setup()
    return {"HandoffSaver": HandoffSaver(root / "graphs"), "SqliteSaver": sqlite}


def measure(root: Path, rounds: int) -> list[list[str]]:
    """Time a graph run, put and get_tuple on both savers at each size; one table row per measure."""
    savers = _contenders(root)
    counter = itertools.count()
    rows = []
    for label, size in SIZES:
        graphs = {name: _graph(saver, size) for name, saver in savers.items()}

        runs = interleaved(
            {name: _run(graphs[name], f"{name}-{label}", counter) for name in savers}, repeats=rounds, warmup=1
        )
        # put and get_tuple alone: the newest checkpoint of a finished run, put again as a new child
        latest = {}
        for name, saver in savers.items():
            config: Any = {"configurable": {"thread_id": f"{name}-{label}-single", "checkpoint_ns": ""}}
            graphs[name].invoke({"count": 0, "payload": ""}, {**config, "recursion_limit": 4 * STEPS})
            latest[name] = saver.get_tuple(config)
        puts = interleaved({name: _put(saver, latest[name]) for name, saver in savers.items()}, repeats=rounds * 5)
        gets = interleaved({name: _get(saver, latest[name]) for name, saver in savers.items()}, repeats=rounds * 5)
        for what, samples in (("graph run", runs), ("put", puts), ("get_tuple", gets)):
            ours, theirs = samples["HandoffSaver"].median, samples["SqliteSaver"].median
            goal = f"<= {GOAL:g}x {'met' if ours / theirs <= GOAL else 'MISSED'}" if what == "graph run" else "-"
            rows.append([label, what, ms(ours), ms(theirs), f"{ours / theirs:.2f}x", goal])
    return rows


def _run(graph: Any, prefix: str, counter: itertools.count[int]) -> Callable[[], object]:
    def run() -> object:  # a fresh thread each time: a whole run, from its input to its end
        config = {"configurable": {"thread_id": f"{prefix}-{next(counter)}"}, "recursion_limit": 4 * STEPS}
        return graph.invoke({"count": 0, "payload": ""}, config, durability="sync")

    return run


def _get(saver: Any, tuple_: Any) -> Callable[[], object]:
    return lambda: saver.get_tuple(tuple_.config)


def _put(saver: Any, tuple_: Any) -> Callable[[], object]:
    from langgraph.checkpoint.base import create_checkpoint

    checkpoint = tuple_.checkpoint
    versions = {
        name: version
        for name, version in checkpoint["channel_versions"].items()
        if name in checkpoint["channel_values"]
    }

    def put() -> None:
        child = create_checkpoint(checkpoint, None, 1)
        saver.put(tuple_.config, child, {"source": "loop", "step": 1, "parents": {}}, versions)

    return put


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table and write the report."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_langgraph", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds: a smoke run, not a figure")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 15
    with tempfile.TemporaryDirectory(prefix="handoff-langgraph-") as scratch:
        rows = measure(Path(scratch), rounds)
        facts = machine_facts(Path(scratch))
    headers = ["state", "measure", "HandoffSaver ms", "SqliteSaver ms", "÷ SqliteSaver", "goal"]
    print(text_table(headers, rows, left=2))
    method = (
        f"A graph run: {STEPS} steps of one node that rewrites a payload of the state's size, on a fresh thread, "
        '`durability="sync"`, timed from `invoke` to its return. `put`: the newest checkpoint of such a run '
        "put again as a new child (every channel's value changed); `get_tuple`: that checkpoint read back. "
        "SqliteSaver at its defaults (WAL, synchronous=FULL), HandoffSaver at its defaults (durability full, "
        "every checkpoint kept). Medians of interleaved rounds."
    )
    write_report(
        args.out,
        "HandoffSaver beside SqliteSaver: a LangGraph graph run, put and get_tuple",
        [*facts, run_kind(quick=args.quick), ("rounds", str(rounds))],
        [markdown_table(headers, rows, left=2), "## Method\n\n" + method],
    )
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
