"""HandoffSaver beside SqliteSaver after a restart: a fresh process's first read of a long thread, and a 40 MB state.

Usage: ``python -m bench.bench_langgraph_cold [--quick] [--out PATH]`` (``make bench`` runs it in
``.venv-bench``, where ``langgraph-checkpoint-sqlite`` is installed; elsewhere SqliteSaver's column
says n/a and why).

Cold restart (issue 20, item 3): a chat-like thread of N checkpoints (10, 1,000 and 10,000) is
written with ``put`` on both savers, the same content in the same order: checkpoint *i* holds the
last ``WINDOW`` messages of the conversation (LangChain ``HumanMessage``/``AIMessage``, a question
and an answer per step, so the state changes every step and grows only until the window is full)
and a step counter. Then FRESH PROCESSES (``python -c``) read it: one imports the saver and LangGraph,
opens the saver, compiles a graph whose state has the thread's channels and calls ``get_state`` once
(the issue's measure: that call is timed alone, the open + compile apart); another imports only the
saver, opens it and calls ``get_tuple`` once (an aside: the saver alone). Each checks that it read
the newest checkpoint and prints its times, its imports and its peak RSS; the parent times the
whole process. Rounds are interleaved, each of the four children once per round in rotating order;
ratios are median ÷ median.

40 MB state (item 4): one checkpoint whose state holds ``--state-mb`` MB of JSON-able text (a list
of 1,000-character strings), ``put`` by a fresh process and read back by ``get_tuple`` in another,
on both savers; each child reports its time and how much its peak RSS rose. A saver that refuses
the put (a ``HandoffError``) is shown as ``refused: <its message>``, so the bench runs before and
after that limit is lifted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from bench.fresh import ROOT, byte_compiled, child_env
from bench.langgraph_cold_children import CHILD_BIG_GET, CHILD_BIG_PUT, CHILD_COLD, CHILD_STATE, DOC_CHARS, WINDOW
from bench.report import (
    GOAL_MET,
    GOAL_MISSED,
    machine_facts,
    markdown_table,
    ms,
    run_kind,
    text_table,
    verdict,
    write_report,
)
from bench.sqlite_saver import missing
from bench.timing import interleaved

__all__ = ["big_rows", "build", "code_version", "cold_tables", "main", "measure_big", "measure_cold", "refusal_cell"]

COUNTS: Final = (10, 1000, 10_000)
QUICK_COUNTS: Final = (10, 1000)
STATE_MB: Final = 40
#: the issue's goals: a first read within 2x SqliteSaver's, and "the same" at every thread length
#: (read here as within 1.5x of the 10-checkpoint figure: fresh processes on a shared machine vary)
GOAL_VS_SQLITE: Final = 2.0
GOAL_FLAT: Final = 1.5
DEFAULT_OUT: Final = Path(__file__).resolve().parent / "results-langgraph-cold.md"
SAVERS: Final = ("HandoffSaver", "SqliteSaver")
#: what a fresh process reads first: a compiled graph's get_state (the issue's measure), the saver's get_tuple
PROBES: Final = ("get_state", "get_tuple")


def _child(code: str, *args: str) -> dict[str, Any]:
    """Run ``python -c code args…`` to its end; its one JSON line, or RuntimeError if it failed."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=child_env(), capture_output=True, check=False, cwd=ROOT
    )
    if done.returncode:
        # a contender that failed has measured nothing: stop the run rather than time an error path
        msg = f"{args[:3]} exited {done.returncode}: {done.stderr.decode(errors='replace').strip()[-2000:]}"
        raise RuntimeError(msg)
    result: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


def _messages(step: int) -> list[Any]:
    """The question and answer of *step*: a chat turn of ~0.8 KB that differs from step to step."""
    from langchain_core.messages import AIMessage, HumanMessage

    question = f"Question {step}: what changed in part {step % 97} since the last run, and why? " * 2
    answer = f"Answer {step}: part {step % 97} moved because its input changed; the check passes. " * 5
    return [HumanMessage(question, id=f"human-{step}"), AIMessage(answer, id=f"ai-{step}")]


def _saver(kind: str, where: Path) -> tuple[Any, Callable[[], None]]:
    """A saver of *kind* on *where*, and what closes it."""
    if kind == "HandoffSaver":
        from handoff_files.langgraph import HandoffSaver

        return HandoffSaver(where), lambda: None
    import importlib

    # by name: langgraph-checkpoint-sqlite is in .venv-bench only, where mypy does not look
    module: Any = importlib.import_module("langgraph.checkpoint.sqlite")
    connection = sqlite3.connect(where, check_same_thread=False)
    return module.SqliteSaver(connection), connection.close


def build(kind: str, where: Path, thread_id: str, count: int) -> float:
    """Put *count* checkpoints of the chat thread into a *kind* saver at *where*; the seconds it took."""
    from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

    saver, close = _saver(kind, where)
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    checkpoint, messages = empty_checkpoint(), list[Any]()
    start = time.perf_counter()
    for step in range(1, count + 1):
        messages = [*messages, *_messages(step)][-WINDOW:]
        checkpoint = create_checkpoint(checkpoint, None, step)
        checkpoint["channel_values"] = {"messages": messages, "step": step}
        checkpoint["channel_versions"] = {"messages": step, "step": step}
        metadata = {"source": "loop", "step": step, "parents": {}}
        config = saver.put(config, checkpoint, metadata, {"messages": step, "step": step})
    seconds = time.perf_counter() - start
    close()  # SQLite: the last connection to close checkpoints its WAL, as a stopped agent's does
    return seconds


def _disk_bytes(where: Path) -> int:
    paths = [where] if where.is_file() else list(where.rglob("*"))
    paths += list(where.parent.glob(where.name + "-*")) if where.is_file() else []  # SQLite's -wal, -shm
    return sum(path.stat().st_size for path in paths if path.is_file())


def _where(scratch: Path, kind: str, label: str) -> Path:
    return scratch / (f"handoff-{label}" if kind == "HandoffSaver" else f"sqlite-{label}.db")


def code_version() -> tuple[str, str]:
    """The fact naming the code measured: the checkout's commit, and whether ``handoff_files`` differs from it."""
    git = ["git", "-C", str(ROOT)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        changed = subprocess.run([*git, "diff", "--quiet", "HEAD", "--", "handoff_files"], check=False).returncode
    except (OSError, subprocess.CalledProcessError):
        return ("handoff_files", "unknown (not a git checkout)")
    return ("handoff_files", f"commit {head.stdout.strip()}" + (" with uncommitted changes" if changed else ""))


def _cold_case(sink: list[dict[str, Any]], probe: str, *args: str) -> Callable[[], None]:
    """One fresh process's first read (*probe*'s child run with *args*), its JSON line appended to *sink*."""
    code = CHILD_STATE if probe == "get_state" else CHILD_COLD
    return lambda: sink.append(_child(code, *args))


def measure_cold(scratch: Path, counts: Sequence[int], rounds: int, kinds: Sequence[str]) -> dict[int, Any]:
    """Build each thread length on every saver in *kinds*, then time fresh processes' first read of it.

    Each round runs four children (for each saver: a graph's first ``get_state``, and the saver's
    first ``get_tuple`` alone) in rotating order.

    :returns: per count: ``build`` (seconds per put), ``disk`` (bytes), and per probe in
        :data:`PROBES`, ``wall`` (:class:`Sample` per saver) and ``child`` (the children's JSON
        lines per saver, warm-up left out).
    """
    results: dict[int, Any] = {}
    for count in counts:
        thread_id, wheres = f"chat-{count}", {kind: _where(scratch, kind, str(count)) for kind in kinds}
        per_put = {kind: build(kind, wheres[kind], thread_id, count) / count for kind in kinds}
        children = {(probe, kind): list[dict[str, Any]]() for probe in PROBES for kind in kinds}
        cases = {
            f"{probe} {kind}": _cold_case(lines, probe, kind, str(wheres[kind]), thread_id, str(count))
            for (probe, kind), lines in children.items()
        }
        wall = interleaved(cases, repeats=rounds, warmup=1)
        results[count] = {
            "build": per_put,
            "disk": {kind: _disk_bytes(wheres[kind]) for kind in kinds},
            "wall": {probe: {kind: wall[f"{probe} {kind}"] for kind in kinds} for probe in PROBES},
            "child": {probe: {kind: children[probe, kind][-rounds:] for kind in kinds} for probe in PROBES},
        }
        print(f"  {count:,} checkpoints measured", file=sys.stderr)
    return results


def measure_big(scratch: Path, megabytes: float, rounds: int, kinds: Sequence[str]) -> dict[str, Any]:
    """Put and read back a checkpoint of *megabytes* MB on every saver, each in a fresh process, interleaved.

    :returns: per saver: ``put`` and ``get`` (the children's JSON lines; a refused put's line is
        ``{"refused": message}`` and its read is left out).
    """
    found: dict[str, dict[str, list[dict[str, Any]]]] = {kind: {"put": [], "get": []} for kind in kinds}
    counter = iter(range(1_000_000))

    def case(kind: str) -> Callable[[], object]:
        def run() -> None:  # a new folder or database each time: the put is the thread's first checkpoint
            label = f"big-{next(counter)}"
            where, size = _where(scratch, kind, label), str(megabytes)
            put = _child(CHILD_BIG_PUT, kind, str(where), "big", size)
            found[kind]["put"].append(put)
            if "refused" not in put:
                found[kind]["get"].append(_child(CHILD_BIG_GET, kind, str(where), "big", size))
            shutil.rmtree(where, ignore_errors=True) if where.is_dir() else where.unlink(missing_ok=True)

        return run

    interleaved({kind: case(kind) for kind in kinds}, repeats=rounds, warmup=0)
    return found


def refusal_cell(message: str, scratch: Path) -> str:
    """A refused put as a table cell: ``refused: <message>``, the scratch folder shortened, pipes escaped."""
    return "refused: " + message.replace(str(scratch), "<scratch>").replace("|", "\\|")


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _pair(values: Mapping[str, float | None], fmt: Callable[[float], str]) -> list[str]:
    """The HandoffSaver and SqliteSaver cells and their ratio (n/a where one is missing)."""
    ours, theirs = values.get("HandoffSaver"), values.get("SqliteSaver")
    ratio = f"{ours / theirs:.2f}x" if ours is not None and theirs else "n/a"
    return [fmt(ours) if ours is not None else "n/a", fmt(theirs) if theirs is not None else "n/a", ratio]


def _mb(value: float) -> str:
    return f"{value / 1e6:.1f}"


def _goal_lines(reads: Mapping[int, Mapping[str, float]], what: str, whose: str) -> list[str]:
    """The two goal lines (within 2x SqliteSaver's at every length; flat from the shortest to the longest thread)."""
    first, last = min(reads), max(reads)
    if all("SqliteSaver" in r for r in reads.values()):
        worst, at = max((r["HandoffSaver"] / r["SqliteSaver"], n) for n, r in reads.items())
        versus = f"{verdict(worst, GOAL_VS_SQLITE)} (worst {worst:.2f}x, at {at:,} checkpoints)"
    else:
        versus = "n/a (SqliteSaver not measured)"
    ours = reads[last]["HandoffSaver"] / reads[first]["HandoffSaver"]
    theirs = (
        f"; SqliteSaver's {reads[last]['SqliteSaver'] / reads[first]['SqliteSaver']:.2f}x"
        if "SqliteSaver" in reads[last]
        else ""
    )
    return [
        f"{whose}: {what} within {GOAL_VS_SQLITE:g}x SqliteSaver's at every length: {versus}",
        f"{whose}: {what} the same at {first:,} and {last:,} checkpoints (within {GOAL_FLAT:g}x): "
        f"{verdict(ours, GOAL_FLAT)} (HandoffSaver's at {last:,} is {ours:.2f}x its figure at {first:,}{theirs})",
    ]


def _medians(lines: Mapping[str, Sequence[dict[str, Any]]], key: str) -> dict[str, float]:
    return {kind: _median([line[key] for line in found]) for kind, found in lines.items()}


def cold_tables(cold: dict[int, Any]) -> tuple[list[list[str]], list[list[str]], list[str]]:
    """The first-read rows, the thread rows (size on disk, build) and the goal lines of :func:`measure_cold`.

    The goals judge the graph's first ``get_state`` (issue 20 item 3's measure); the saver's first
    ``get_tuple`` is judged by the same figures as an aside, marked so in its rows and lines.
    """
    first = min(cold)
    reads = {probe: {n: _medians(r["child"][probe], "read") for n, r in cold.items()} for probe in PROBES}
    rows, threads = [], []
    for count, result in cold.items():
        for probe in PROBES:
            now, then = reads[probe][count], reads[probe][first]
            growth = " / ".join(f"{now[kind] / then[kind]:.2f}x" if kind in now else "n/a" for kind in SAVERS)
            cells = _pair(now, ms)
            goal = verdict(now["HandoffSaver"] / now["SqliteSaver"], GOAL_VS_SQLITE) if cells[2] != "n/a" else "n/a"
            child = result["child"][probe]
            if probe == "get_state":
                rows.append([f"{count:,}", "first get_state ms (in the child)", *cells, goal, growth])
                compiled = _pair(_medians(child, "compile"), ms)
                rows.append([f"{count:,}", "open + compile ms (get_state child)", *compiled, "-", "-"])
            else:
                rows.append(
                    [f"{count:,}", "open + first get_tuple ms (in the child)", *cells, f"aside: {goal}", growth]
                )
            wall = {kind: sample.median for kind, sample in result["wall"][probe].items()}
            rows.append([f"{count:,}", f"whole process ms (wall, {probe} child)", *_pair(wall, ms), "-", "-"])
            rows.append([f"{count:,}", f"imports ms ({probe} child)", *_pair(_medians(child, "import"), ms), "-", "-"])
            rows.append([f"{count:,}", f"peak RSS MB ({probe} child)", *_pair(_medians(child, "rss"), _mb), "-", "-"])
        threads.append([f"{count:,}", *_pair(result["disk"], _mb)[:2], *_pair(result["build"], ms)[:2]])
    lines = [
        *_goal_lines(reads["get_state"], "first get_state", "goal (issue 20 item 3)"),
        *_goal_lines(reads["get_tuple"], "first get_tuple", "aside, the saver alone (not the issue's goal)"),
    ]
    return rows, threads, lines


def big_rows(big: dict[str, Any], scratch: Path, megabytes: float) -> tuple[list[list[str]], list[str]]:
    """The rows and the goal line of :func:`measure_big`."""
    refused = {kind: next((p["refused"] for p in r["put"] if "refused" in p), None) for kind, r in big.items()}

    def values(what: str, key: str) -> dict[str, float | None]:
        return {
            kind: _median([c[key] for c in r[what]]) if r[what] and not refused[kind] else None
            for kind, r in big.items()
        }

    rows = []
    for what, label in (("put", "put"), ("get", "get_tuple (a fresh process)")):
        for key, unit, fmt in (("seconds", "ms", ms), ("rss_rise", "peak RSS rise MB", _mb)):
            cells = _pair(values(what, key), fmt)
            for i, kind in enumerate(SAVERS):
                if refused.get(kind):
                    cells[i] = (
                        refusal_cell(refused[kind] or "", scratch)
                        if (what, key) == ("put", "seconds")
                        else "n/a (put refused)"
                    )
            rows.append([f"{megabytes:g} MB", f"{label} {unit}", *cells])
    stored = "HandoffSaver" in big and not refused["HandoffSaver"]
    line = f"a {megabytes:g} MB state stored and read back: {GOAL_MET if stored else GOAL_MISSED}"
    if refused.get("HandoffSaver"):
        line += f" ({refusal_cell(refused['HandoffSaver'] or '', scratch)})"
    return rows, [line]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the tables and write the report."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_langgraph_cold", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 and 1,000 checkpoints, 2 rounds: a smoke run")
    parser.add_argument("--counts", type=lambda text: [int(n) for n in text.split(",")], help="thread lengths")
    parser.add_argument("--state-mb", type=float, default=STATE_MB, help="the big state's size (MB)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    counts = args.counts or (QUICK_COUNTS if args.quick else COUNTS)
    rounds, big_rounds = (2, 2) if args.quick else (7, 5)
    reason = missing()
    kinds = SAVERS[:1] if reason else SAVERS
    notes = [reason] if reason else []
    notes.append(f"fresh processes: the package {byte_compiled(ROOT)}")
    with tempfile.TemporaryDirectory(prefix="handoff-langgraph-cold-") as name:
        scratch = Path(name)
        cold = measure_cold(scratch, counts, rounds, kinds)
        big = measure_big(scratch, args.state_mb, big_rounds, kinds)
        facts = machine_facts(scratch)
        read_rows, thread_rows, goals = cold_tables(cold)
        rows_big, goal_big = big_rows(big, scratch, args.state_mb)
    headers = ["checkpoints", "measure", "HandoffSaver", "SqliteSaver", "÷ SqliteSaver", "goal", "÷ at fewest (H / S)"]
    thread_headers = [
        "checkpoints",
        "HandoffSaver MB on disk",
        "SqliteSaver MB on disk",
        "HandoffSaver put ms",
        "SqliteSaver put ms",
    ]
    big_headers = ["state", "measure", "HandoffSaver", "SqliteSaver", "÷ SqliteSaver"]
    for head, rows in ((headers, read_rows), (thread_headers, thread_rows), (big_headers, rows_big)):
        print(text_table(head, rows, left=2 if head is not thread_headers else 1), end="\n\n")
    print("\n".join([*goals, *goal_big, *notes]), flush=True)
    method = (
        f"**Cold restart.** A chat-like thread of N checkpoints, written with `put` on both savers, the same content "
        f"in the same order: checkpoint *i* holds the last {WINDOW} messages (a LangChain `HumanMessage` and "
        "`AIMessage` per step, ~0.8 KB a turn, so the state changes every step and stops growing once the window is "
        "full) and a step counter. Then, for each saver, two kinds of fresh process (`python -c`) read it once. "
        "The *get_state* child (issue 20 item 3's measure) imports the saver and LangGraph (`StateGraph`, "
        "`add_messages`), opens the folder (`HandoffSaver(root)`) or the database "
        "(`SqliteSaver(sqlite3.connect(path))`), builds a `StateGraph` whose state has the thread's channels "
        "(`messages: Annotated[list, add_messages]`, `step: int`) and one trivial node, and compiles it with the saver "
        "as its checkpointer (*open + compile*: from the end of its imports to the return of `compile`); then it "
        "calls `app.get_state(config)` once (*first get_state*: that call alone, which holds the saver's first "
        "`get_tuple`, any set-up the saver defers to its first use, and LangGraph's building of the snapshot from "
        "the checkpoint), and checks that the values are the newest checkpoint's (the step counter is N and the "
        "last message is step N's answer). The *get_tuple* child (an aside: the saver alone, without LangGraph's "
        "graph) imports only the saver, opens it and calls `get_tuple` once (*open + first get_tuple*: from the end "
        "of its imports to the return of `get_tuple`, the open included), checking that the metadata's step is N. "
        "*imports* is timed in each child from its first line to the end of its imports (the get_state child's "
        "include LangGraph's graph modules); *whole process* by the parent, from the start of the interpreter to its "
        "exit; *peak RSS* is the child's `ru_maxrss` at its end. The files are in the OS page cache (a restarted "
        "process, not a rebooted machine). "
        "Rounds interleaved: each round runs the four children (two savers, two reads) once, in rotating order; one "
        "warm-up round; medians of the rounds, ratios median / median. The goals (issue 20, item 3) judge *first "
        f"get_state*: within {GOAL_VS_SQLITE:g}x SqliteSaver's on the same thread, and the same at every length "
        f"(read here as within {GOAL_FLAT:g}x of the shortest thread's figure); the *first get_tuple* rows and lines "
        "are judged by the same figures but marked as an aside, not the issue's goal. The last column is each "
        "saver's figure divided by its own at the shortest thread. *put ms* under the thread table is the mean "
        "`put` while building it (not interleaved: an aside).\n\n"
        f"**Big state.** One checkpoint whose state is a list of {DOC_CHARS:,}-character strings, "
        f"{args.state_mb:g} MB of text in all, `put` as the first checkpoint of a new thread by a fresh process and "
        "read back by `get_tuple` in another fresh process, which checks every string came back; each child "
        "reports the time of that call and how much its peak RSS (`ru_maxrss`) rose during it. A `HandoffError` "
        "from the put is shown as `refused: <its message>`. A rise of 0 means the call stayed under the peak "
        "the imports had reached. Rounds interleaved as above, no warm-up.\n\n"
        "SqliteSaver at its defaults (WAL, synchronous=FULL); HandoffSaver at its defaults (durability full, every "
        "checkpoint kept)."
    )
    write_report(
        args.out,
        "HandoffSaver beside SqliteSaver after a restart: the first read of a long thread, and a big state",
        [
            *facts,
            code_version(),
            run_kind(quick=args.quick),
            ("thread lengths", ", ".join(f"{count:,}" for count in counts) + " checkpoints"),
            ("rounds", f"{rounds} (cold restart), {big_rounds} (big state)"),
        ],
        [
            "## Goals\n\n" + "\n".join(f"- {line}" for line in [*goals, *goal_big, *notes]),
            "## A fresh process's first read\n\n" + markdown_table(headers, read_rows, left=2),
            "## The threads\n\n" + markdown_table(thread_headers, thread_rows),
            f"## A {args.state_mb:g} MB state\n\n" + markdown_table(big_headers, rows_big, left=2),
            "## Method\n\n" + method,
        ],
    )
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
