"""Issue 21's goals in one run: every save, load and restart against the floor of its promise and against SqliteSaver.

Usage: ``python -m bench.bench_floors [--quick] [--out PATH]`` (``make bench`` runs it in
``.venv-bench``, where LangGraph's ``SqliteSaver`` is installed; without it the bench says so and
stops).

Each group of contenders is timed interleaved, each once per round in a rotating order, and each
ratio is a median ÷ the median of its floor or peer from the same rounds of the same run:

- saves at 1 KB, 100 KB and 1 MB: ``HandoffStore.save`` with today's default durability, with
  ``durability="journal"`` and ``"full"``, their floors in plain os calls (:mod:`bench.floors_cases`)
  and ``SqliteSaver.put`` of the same content;
- loads: ``handoff_files.load`` of a fresh copy of the primary each call (a file this process never
  read) beside read + ``orjson.loads`` + BLAKE3 of another fresh copy; ``load`` of the same
  unchanged file again and again beside ``SqliteSaver.get_tuple``;
- fresh processes: ``HandoffStore(dir).restore()`` beside SqliteSaver's ``get_tuple``, ``handoff
  --version`` beside ``python -c pass``, ``handoff show`` beside a pydantic script that validates
  the same file with an equivalent model;
- a LangGraph graph of 30 steps, ``durability="sync"``, on ``HandoffSaver`` and on ``SqliteSaver``;
- with strace, system calls and flushes per save (1 KB) and per graph step.
"""

from __future__ import annotations

import argparse
import functools
import gc
import inspect
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import handoff_files
from bench import floors_cases as cases
from bench.bench_goals import REFERENCE_SHOW
from bench.bench_vs_sqlite import FRESH_RESTORE, content_for
from bench.fresh import ROOT, byte_compiled, child_env, python_run, strace_missing
from bench.report import machine_facts, markdown_table, ms, run_kind, text_table, write_report
from bench.sqlite_saver import FRESH_GET_TUPLE, THREAD_ID, Saver, missing
from bench.timing import Sample, interleaved
from bench.workload import Size
from handoff_files import HandoffStore
from handoff_files.format.loadcache import RACY_NS

DEFAULT_OUT: Final = Path(__file__).resolve().parent / "results-floors.md"
SIZES: Final = (Size("1 KB", 1024), Size("100 KB", 100 * 1024), Size("1 MB", 1024 * 1024))
MET: Final = "MET"
MISSED: Final = "MISSED"
NOT_MEASURED: Final = "n/a"


@dataclass(frozen=True, slots=True)
class Rounds:
    """How much to measure: sizes, (rounds, calls per batch) of saves, rounds of loads, fresh processes and graphs."""

    sizes: tuple[Size, ...]
    saves: Mapping[str, tuple[int, int]]
    loads: Mapping[str, int]
    fresh: int
    graph_sizes: tuple[Size, ...]
    graphs: int
    ops: int
    graph_ops: int


FULL: Final = Rounds(
    sizes=SIZES,
    saves={"1 KB": (40, 10), "100 KB": (30, 5), "1 MB": (20, 4)},
    loads={"1 KB": 100, "100 KB": 60, "1 MB": 30},
    fresh=15,
    graph_sizes=SIZES[:2],
    graphs=8,
    ops=10,
    graph_ops=2,
)
QUICK: Final = Rounds(
    sizes=SIZES[:1],
    saves={"1 KB": (2, 2)},
    loads={"1 KB": 2},
    fresh=2,
    graph_sizes=SIZES[:1],
    graphs=2,
    ops=2,
    graph_ops=1,
)

#: (goal, size, group, ours, baseline, at most): a group is ``<kind>:<size label>`` or ``cli``.
Goal = tuple[str, str, str, str, str, float]


def goals(default: str) -> list[Goal]:
    """Issue 21's goals table, row by row; *default* names the durability a store gets when given none."""
    out: list[Goal] = []
    today = f"default save (today: {default})"
    for size in (s.label for s in SIZES):
        saves, loads, put = f"saves:{size}", f"loads:{size}", 1.5 if size != "1 MB" else 0.9
        out += [
            (f"{today} ÷ journal floor", size, saves, "save:default", "floor:journal", 1.3),
            ('save durability="journal" ÷ journal floor', size, saves, "save:journal", "floor:journal", 1.3),
            ('save durability="full" ÷ full floor', size, saves, "save:full", "floor:full", 1.3),
            (f"{today} ÷ SqliteSaver.put", size, saves, "save:default", "put", put),
            ('save durability="journal" ÷ SqliteSaver.put', size, saves, "save:journal", "put", put),
            ("cold verified load ÷ read + orjson + BLAKE3", size, loads, "load:cold", "floor:load", 1.5),
            ("repeat load of an unchanged file ÷ get_tuple", size, loads, "load:repeat", "get_tuple", 0.2),
            ("repeat load, load(cache=True), file 3 s old ÷ get_tuple", size, loads, "load:cached", "get_tuple", 0.2),
            ("fresh-process restore ÷ SqliteSaver's", size, f"fresh:{size}", "restore", "get_tuple", 0.5),
        ]
    for size, goal in (("1 KB", 1.1), ("100 KB", 1.0)):
        out.append(("30-step graph, sync ÷ SqliteSaver", size, f"graph:{size}", "HandoffSaver", "SqliteSaver", goal))
    out += [
        ("handoff --version ÷ python -c pass", "-", "cli", "handoff --version", "python -c pass", 2.0),
        ("handoff show ÷ pydantic script", "-", "cli", "handoff show", "pydantic script", 1.2),
    ]
    return out


# -- measuring ------------------------------------------------------------------------------------


def _loads(folder: Path, thread: Path, database: Path, count: int) -> dict[str, Callable[[], object]]:
    primary = HandoffStore(thread).primary
    ours, floors = (
        cases.Copies(primary, folder / "copies-load", count),
        cases.Copies(primary, folder / "copies-floor", count),
    )
    reader = Saver(database)
    # the cache compares the bytes of a file changed in its last RACY_NS (a same-tick rewrite keeps
    # the times): a poller meets that for 3 s after each save; measured here is the file it polls between
    settled = (primary.stat().st_ctime_ns + RACY_NS - time.time_ns()) / 1e9
    if settled > 0:
        time.sleep(settled)
    return {
        "load:cold": lambda: handoff_files.load(ours()),
        "floor:load": lambda: cases.read_parse_hash(floors()),
        "load:repeat": functools.partial(handoff_files.load, primary),
        "load:cached": functools.partial(handoff_files.load, primary, cache=True),
        "get_tuple": reader.get_tuple,
    }


def measure_size(size: Size, root: Path, rounds: Rounds) -> dict[str, dict[str, Sample]]:
    """Saves, loads and fresh restores at *size*: ``{"saves:<size>": …, "loads:<size>": …, "fresh:<size>": …}``."""
    folder = root / size.label.replace(" ", "")
    content = content_for(size)
    print(f"{size.label}: preparing...", flush=True)
    saves = {case: cases.contender(case, folder / case.replace(":", "-"), content) for case in cases.SAVE_CASES}
    batches, batch = rounds.saves[size.label]
    print(f"{size.label}: saves, {batches} rounds of {batch}...", flush=True)
    found = {f"saves:{size.label}": interleaved(saves, repeats=batches, warmup=2, batch=dict.fromkeys(saves, batch))}
    del saves  # closes SqliteSaver's connection, as a process that ended would
    gc.collect()
    thread, database = folder / "save-default" / "thread", folder / "put" / "langgraph.sqlite"
    loads = _loads(folder, thread, database, rounds.loads[size.label] + 2)
    print(f"{size.label}: loads, {rounds.loads[size.label]} rounds...", flush=True)
    found[f"loads:{size.label}"] = interleaved(loads, repeats=rounds.loads[size.label], warmup=2)
    del loads
    gc.collect()
    print(f"{size.label}: fresh processes, {rounds.fresh} rounds...", flush=True)
    fresh = {
        "restore": python_run(FRESH_RESTORE, str(thread)),
        "get_tuple": python_run(FRESH_GET_TUPLE, str(database), THREAD_ID),
    }
    found[f"fresh:{size.label}"] = interleaved(fresh, repeats=rounds.fresh, warmup=1)
    return found


def _handoff_script() -> list[str]:
    script = Path(sys.executable).parent / "handoff"
    return [str(script)] if script.exists() else [sys.executable, "-m", "handoff_files"]


def measure_cli(root: Path, rounds: Rounds) -> dict[str, Sample]:
    """``handoff --version`` and ``handoff show`` (a 1 KB thread) beside their baselines, fresh processes."""
    thread = root / "cli" / "thread"
    store = HandoffStore(thread, agent_id=cases.AGENT_ID)
    store.save(content_for(SIZES[0]))
    script = _handoff_script()
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "handoff --version": [*script, "--version"],
        "handoff show": [*script, "show", str(thread)],
        "pydantic script": [sys.executable, "-c", REFERENCE_SHOW, str(store.primary)],
    }
    return interleaved(
        {name: functools.partial(_run, argv) for name, argv in commands.items()}, repeats=rounds.fresh, warmup=1
    )


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if done.returncode:
        msg = f"{argv[:3]}... exited {done.returncode}: {done.stderr.decode(errors='replace').strip()[-2000:]}"
        raise RuntimeError(msg)


def measure_graphs(root: Path, rounds: Rounds) -> dict[str, dict[str, Sample]]:
    """A 30-step graph run on each saver, interleaved, at each graph size: ``{"graph:<size>": …}``."""
    found = {}
    for size in rounds.graph_sizes:
        print(f"{size.label}: {rounds.graphs} rounds of a {cases.GRAPH_STEPS}-step graph...", flush=True)
        folder = root / f"graph-{size.label.replace(' ', '')}"
        runs = {name: cases.graph_run(name, folder / name, size.target) for name in ("HandoffSaver", "SqliteSaver")}
        found[f"graph:{size.label}"] = interleaved(runs, repeats=rounds.graphs, warmup=1)
    return found


def measure_counts(rounds: Rounds) -> dict[str, dict[str, tuple[float, float]]]:
    """(system calls, flushes) per save at 1 KB (``saves``) and per graph step at each graph size (``graph:<size>``)."""
    content = content_for(SIZES[0])
    print(f"strace: {len(cases.SAVE_CASES)} saves at 1 KB...", flush=True)
    counts = {"saves": {case: cases.syscalls_per_op(case, content, ops=rounds.ops) for case in cases.SAVE_CASES}}
    for size in rounds.graph_sizes:
        print(f"strace: graph runs at {size.label}...", flush=True)
        per_run = {
            name: cases.syscalls_per_op(f"graph:{name}", {}, size=size.target, ops=rounds.graph_ops)
            for name in ("HandoffSaver", "SqliteSaver")
        }
        steps = cases.GRAPH_STEPS
        counts[f"graph:{size.label}"] = {
            name: (calls / steps, syncs / steps) for name, (calls, syncs) in per_run.items()
        }
    return counts


# -- the tables -------------------------------------------------------------------------------------


def goal_rows(
    found: Mapping[str, Mapping[str, Sample]], counts: Mapping[str, Mapping[str, tuple[float, float]]], default: str
) -> tuple[list[list[str]], list[str]]:
    """The goals table (goal, size, ours ms, floor or peer ms, ratio, goal, verdict) and a line per miss."""
    rows, misses = [], []
    for metric, size, group, ours, base, at_most in goals(default):
        samples = found.get(group, {})
        if ours not in samples or base not in samples:
            rows.append([metric, size, NOT_MEASURED, NOT_MEASURED, NOT_MEASURED, f"<= {at_most:g}", NOT_MEASURED])
            continue
        mine, theirs = samples[ours].median, samples[base].median
        ratio = mine / theirs
        verdict = MET if ratio <= at_most else MISSED
        rows.append([metric, size, ms(mine), ms(theirs), f"{ratio:.2f}", f"<= {at_most:g}", verdict])
        if verdict == MISSED:
            misses.append(f"MISSED: {metric} at {size}: {ratio:.2f} (goal <= {at_most:g})")
    for group, per in counts.items():
        if group.startswith("graph:") and len(per) == 2:
            ours_syncs, theirs_syncs = per["HandoffSaver"][1], per["SqliteSaver"][1]
            verdict = MET if ours_syncs <= theirs_syncs else MISSED
            size = group.partition(":")[2]
            metric = "flushes per graph step ≤ SqliteSaver's"
            rows.append([metric, size, f"{ours_syncs:.2f}", f"{theirs_syncs:.2f}", "-", "<= SqliteSaver's", verdict])
            if verdict == MISSED:
                misses.append(f"MISSED: {metric} at {size}: {ours_syncs:.2f} against {theirs_syncs:.2f}")
    return rows, misses


GOAL_HEADERS: Final = ("goal", "size", "ours ms", "floor / peer ms", "ratio", "goal", "verdict")
COUNT_HEADERS: Final = ("what", "per", "system calls", "flushes (fsync family)")
COUNT_LABELS: Final = {
    "save:default": "HandoffStore.save, default durability",
    "save:journal": 'HandoffStore.save, durability="journal"',
    "save:full": 'HandoffStore.save, durability="full"',
    "floor:journal": "journal floor (append + fdatasync + 2 unsynced copies)",
    "floor:full": "full floor (new file + fsync + rename + dir fsync + 2 unsynced copies)",
    "put": "SqliteSaver.put",
}


def count_rows(counts: Mapping[str, Mapping[str, tuple[float, float]]]) -> list[list[str]]:
    """The strace table: system calls and flushes per save (1 KB) and per graph step."""
    rows = [
        [COUNT_LABELS[case], "save, 1 KB", f"{c:.1f}", f"{s:.2f}"] for case, (c, s) in counts.get("saves", {}).items()
    ]
    for group, per in counts.items():
        if group.startswith("graph:"):
            size = group.partition(":")[2]
            rows += [[name, f"graph step, {size}", f"{c:.1f}", f"{s:.2f}"] for name, (c, s) in per.items()]
    return rows


METHOD: Final = f"""\
- **Interleaved**: each group's contenders run once per round in a rotating order, `gc.collect()`
  before each timed batch; a ratio is ours' median ÷ its floor's or peer's median from the same
  rounds. Saves are timed in batches of back-to-back calls (time per call); loads one call each.
- **The journal floor**, in plain os calls: append the sealed document as one line of compact
  JSON to a log kept open, `fdatasync` it, then write the readable primary and `state.json`
  (the bytes such a store wrote) each as a temp file renamed over the old one, unsynced.
- **The full floor**: a new file in `history/` (temp, write, `fsync`, rename with nothing to
  replace, directory `fsync`), then the same two unsynced copies. Pruning is not in the floor.
- **Cold load**: `handoff_files.load` of a fresh copy of the primary each call (made before the
  rounds; a file this process never read), beside read + `orjson.loads` + BLAKE3 of another
  fresh copy. **Repeat load**: `load` of the same unchanged primary again and again.
- **Fresh processes**: wall time of a child from start to exit; the package byte-compiled first,
  as a wheel install is. `handoff show` reads a 1 KB thread; the pydantic script validates that
  thread's primary with one equivalent model (`bench.bench_goals.REFERENCE_SHOW`).
- **Graph**: {cases.GRAPH_STEPS} steps of one node rewriting a payload of the state's size, a fresh
  thread per run, `durability="sync"`; HandoffSaver and SqliteSaver at their defaults.
- **strace**: each case run in a child under `strace -f`, with 0 and N operations after the same
  set-up and three warm-ups; the difference ÷ N (÷ {cases.GRAPH_STEPS} for a graph step).
"""


def default_durability() -> str:
    """The durability a store given none saves with, as this checkout's ``HandoffStore`` says."""
    # __init__, not the class: HandoffStore.__new__ takes (path, *args, **kwargs) to open a bucket too
    return str(inspect.signature(HandoffStore.__init__).parameters["durability"].default)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the goals table and the strace counts, write the report; 0 whether goals are met or not.

    :returns: 0, or 2 when SqliteSaver cannot be had here (the bench compares with it throughout).
    """
    parser = argparse.ArgumentParser(prog="python -m bench.bench_floors", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds, 1 KB only: a smoke run, not a figure")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Markdown report to write")
    args = parser.parse_args(argv)
    reason = missing()
    if reason is not None:
        print(reason, file=sys.stderr)
        return 2
    rounds = QUICK if args.quick else FULL
    started = time.monotonic()
    default = default_durability()
    with tempfile.TemporaryDirectory(prefix="handoff-floors-") as scratch:
        root = Path(scratch)
        compiled = byte_compiled(ROOT)
        found: dict[str, dict[str, Sample]] = {}
        for size in rounds.sizes:
            found |= measure_size(size, root, rounds)
        print("command line: fresh processes...", flush=True)
        found["cli"] = measure_cli(root, rounds)
        found |= measure_graphs(root, rounds)
        no_strace = strace_missing()
        counts = measure_counts(rounds) if no_strace is None else {}
        facts = machine_facts(root)
    rows, misses = goal_rows(found, counts, default)
    strace_note = f"strace absent ({no_strace})"
    counted = count_rows(counts)
    print()
    print(text_table(GOAL_HEADERS, rows, left=2))
    print()
    print(text_table(COUNT_HEADERS, counted, left=2) if counted else f"syscall counts: {strace_note}")
    print()
    for line in misses or ["all goals met"]:
        print(line)
    facts += [
        ("default durability (a store given none)", default),
        ("bytecode", compiled),
        ("command", "make bench (runs python -m bench.bench_floors in .venv-bench)"),
        ("run time", f"{time.monotonic() - started:.0f} s"),
        run_kind(quick=args.quick),
    ]
    sections = [
        "## Goals (issue 21)\n\n" + markdown_table(GOAL_HEADERS, rows, left=2),
        "\n".join(f"- **{line}**" for line in misses) or "- all goals met",
        "## System calls and flushes (strace)\n\n"
        + (markdown_table(COUNT_HEADERS, counted, left=2) if counted else f"not counted: {strace_note}"),
        "## Method\n\n" + METHOD,
    ]
    write_report(args.out, "handoff-files: issue 21's goals against the floors", facts, sections)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
