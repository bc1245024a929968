"""Issue 11's goals, before and after, in one run: every ratio, its spread, and a plain met or missed.

Usage: ``python -m bench.bench_goals [--before REV] [--quick] [--out PATH]`` (``make bench`` runs it
in ``.venv-bench``, where LangGraph's ``SqliteSaver`` is installed).

"Before" is the package at *REV* (default: the last commit before the speed work), unpacked from
git into a temporary folder; "after" is this checkout. Each tree is measured by its own worker
process (``--worker``), which imports that tree's ``handoff_files`` and measures it beside the
baselines, interleaved round by round: ``SqliteSaver.put`` / ``get_tuple`` and a minimal durable
write of the same bytes. A ratio is ours ÷ the baseline measured in the same worker, so the two
trees are each judged against their own baseline runs, not against one another's noise. The
command line (``handoff --version``, ``handoff show``) and a fresh process's restore are timed
from outside, per tree, in the same interleaved rounds as their baselines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from bench.bench_import import _runner, _unpack
from bench.fresh import ROOT, byte_compiled
from bench.report import machine_facts, markdown_table, run_kind, text_table, write_report
from bench.timing import Sample, interleaved

#: The last commit before issue 11's speed work.
BEFORE_REV: Final = "30b722f"
DEFAULT_OUT: Final = Path(__file__).resolve().parent / "results-goals.md"
SIZE_LABELS: Final = ("1 KB", "100 KB", "1 MB")

#: (metric, size, ours, baseline, kind, goal): kind "saves"/"loads" are in-process samples, "fresh" a fresh process.
GOALS: Final = (
    ("save full ÷ put", "1 KB", "save:full", "put", "saves", 2.0),
    ("save full ÷ put", "100 KB", "save:full", "put", "saves", 1.0),
    ("save full ÷ put", "1 MB", "save:full", "put", "saves", 1.0),
    ("save full ÷ minimal durable write", "1 MB", "save:full", "write", "saves", 1.5),
    ("save journal ÷ put", "1 KB", "save:journal", "put", "saves", 1.0),
    ("save journal ÷ put", "100 KB", "save:journal", "put", "saves", 1.0),
    ("save journal ÷ put", "1 MB", "save:journal", "put", "saves", 1.0),
    ("verified load ÷ get_tuple", "100 KB", "load", "get_tuple", "loads", 1.0),
    ("verified load ÷ get_tuple", "1 MB", "load", "get_tuple", "loads", 1.0),
    ("fresh restore ÷ fresh get_tuple", "100 KB", "restore", "get_tuple", "fresh", 0.5),
)

#: The command line: a fresh process each, beside its baseline (size "-": a small thread).
CLI_GOALS: Final = (
    ("handoff --version ÷ python -c pass", "-", "handoff --version", "pass", "fresh", 2.0),
    ("handoff show ÷ pydantic + equivalent model", "-", "handoff show", "pydantic + equivalent model", "fresh", 1.2),
)

FRESH_RESTORE: Final = "import sys\nimport handoff_files\nhandoff_files.HandoffStore(sys.argv[1]).restore()\n"

#: The reference for ``handoff show``: pydantic, and the 2.0 document validated with one
#: equivalent model (the same fields, types, strictness and bounds), nothing else.
REFERENCE_SHOW: Final = """\
import sys
from typing import Annotated, Any, Literal
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

Short = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
When = Annotated[AwareDatetime | None, Field(strict=False)]

class S(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

class State(S):
    session_id: int | str | None = None
    timestamp: When = None
    active_tasks: list[Short] = []
    completed_tasks: list[Short] = []
    blocked_tasks: list[Short] = []
    environment: dict[Short, str] = {}
    error_count: Annotated[int, Field(ge=0)] = 0
    energy_level: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    data: dict[str, Any] = {}

class Decision(S):
    decision: Short
    reason: Short
    alternatives_considered: list[Short] = []
    reversible: bool = True
    status: Literal["decided", "deferred", "reversed"] = "decided"

class Priority(S):
    task: Short
    urgency: Literal["first", "primary", "after_primary", "if_time_permits"]

class Warning(S):
    text: Short
    severity: Literal["info", "low", "medium", "high", "critical"] | None = None

class Message(S):
    role: str
    content: str
    timestamp: When = None
    tool_call_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = None

class Context(S):
    conversation_history: list[Message] = []
    tool_state: dict[str, Any] = {}
    metadata: dict[str, Any] = {}

class Lineage(S):
    adopted_from: dict[str, Any] | None = None
    migrated_from: dict[str, Any] | None = None

class Seal(S):
    algorithm: Literal["blake3", "blake2b", "sha256"]
    digest: str
    hmac: str | None = None
    key_id: str | None = None
    signature: str | None = None

class Handoff(S):
    schema_version: Literal["2.0", "2.1"]
    agent_id: Id
    thread_id: Id
    generation: Annotated[int, Field(ge=1)]
    created_at: Annotated[AwareDatetime, Field(strict=False)]
    parent: str | None = None
    lineage: Lineage = Lineage()
    seal: Seal | None = None
    state: State = State()
    narrative: str = ""
    decisions: list[Decision] = []
    priorities: list[Priority] = []
    warnings: list[Warning] = []
    context: Context | None = None

with open(sys.argv[1], "rb") as f:
    Handoff.model_validate_json(f.read())
"""


# -- the worker: one tree, in process -----------------------------------------------------------


def _samples_json(samples: dict[str, Sample]) -> dict[str, list[float]]:
    return {name: list(sample.seconds) for name, sample in samples.items()}


def worker(out: Path, *, quick: bool) -> None:
    """Measure the ``handoff_files`` this process imports beside the baselines; write the samples as JSON."""
    import handoff_files  # whichever tree is first on the path
    from bench import bench_vs_sqlite as vs

    rounds = vs.QUICK if quick else vs.FULL
    found: dict[str, Any] = {"package": str(Path(str(handoff_files.__file__)).parent), "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="handoff-goals-") as scratch:
        for size in vs.SIZES:
            print(f"  {size.label}: preparing...", flush=True)
            c = vs.prepare(size, Path(scratch))
            if c.saver is None:
                msg = f"SqliteSaver is not installed here: {c.notes}"
                raise RuntimeError(msg)
            batched, batch = rounds.batched[size.label]
            print(f"  {size.label}: {batched} rounds of {batch} saves and loads...", flush=True)
            saves = vs.measure_saves(c, batched, batch=batch)
            loads = vs.measure_loads(c, batched, batch=batch)
            thread = str(c.stores["full"].path)
            database = str(c.database)
            c.close()
            found["sizes"][size.label] = {
                "saves": _samples_json(saves),
                "loads": _samples_json(loads),
                "thread": thread,
                "database": database,
                "primary": str(c.primary),
            }
        out.write_text(json.dumps(found), encoding="utf-8")
        # fresh processes need the files, so they are timed here, before the scratch folder goes
        print("  fresh processes...", flush=True)
        _fresh_in_worker(found, rounds.fresh, out)


def _fresh_in_worker(found: dict[str, Any], rounds: int, out: Path) -> None:
    from bench.sqlite_saver import FRESH_GET_TUPLE, THREAD_ID

    env = dict(os.environ)  # PYTHONPATH as the parent set it: this tree first
    tree = Path(found["package"]).parent
    at = found["sizes"]["100 KB"]
    small = found["sizes"]["1 KB"]  # the command line is timed on a small thread
    cases: dict[str, Callable[[], object]] = {
        "pass": _runner([sys.executable, "-c", "pass"], env, tree),
        "restore": _runner([sys.executable, "-c", FRESH_RESTORE, at["thread"]], env, tree),
        "get_tuple": _runner([sys.executable, "-c", FRESH_GET_TUPLE, at["database"], THREAD_ID], env, tree),
        "handoff --version": _runner([sys.executable, "-m", "handoff_files", "--version"], env, tree),
        "handoff show": _runner([sys.executable, "-m", "handoff_files", "show", small["thread"]], env, tree),
        "pydantic + equivalent model": _runner([sys.executable, "-c", REFERENCE_SHOW, small["primary"]], env, tree),
    }
    fresh = interleaved(cases, repeats=max(rounds, 3), warmup=1)
    found["fresh"] = _samples_json(fresh)
    out.write_text(json.dumps(found), encoding="utf-8")


# -- the parent: both trees, one table ------------------------------------------------------------


def _measure_tree(tree: Path, out: Path, *, quick: bool) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(ROOT)])  # this tree's package, this checkout's bench
    argv = [sys.executable, "-m", "bench.bench_goals", "--worker", str(out), *(["--quick"] if quick else [])]
    subprocess.run(argv, env=env, cwd=tree, check=True)
    found: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    if Path(found["package"]).parent.resolve() != tree.resolve():
        msg = f"the worker for {tree} imported {found['package']}"
        raise RuntimeError(msg)
    return found


def _sample(found: dict[str, Any], kind: str, size: str, name: str) -> Sample:
    seconds = found["fresh"][name] if kind == "fresh" else found["sizes"][size][kind][name]
    return Sample(name, tuple(seconds))


def _ratio(found: dict[str, Any], kind: str, size: str, ours: str, base: str) -> tuple[float, Sample]:
    mine = _sample(found, kind, size, ours)
    return mine.median / _sample(found, kind, size, base).median, mine


def rows(before: dict[str, Any], after: dict[str, Any]) -> tuple[list[list[str]], list[str]]:
    """The goals table's rows and the plain-language verdicts."""
    table: list[list[str]] = []
    verdicts: list[str] = []
    goals = [*GOALS, *CLI_GOALS]
    for metric, size, ours, base, kind, goal in goals:
        was, _ = _ratio(before, kind, size, ours, base)
        now, sample = _ratio(after, kind, size, ours, base)
        met = now <= goal
        spread = f"{sample.quantile(0.1) * 1e3:.3f}-{sample.quantile(0.9) * 1e3:.3f}"
        p99 = f"{sample.quantile(0.99) * 1e3:.3f}"
        verdict = "met" if met else f"MISSED by {now / goal:.2f}x"
        table.append([metric, size, f"{was:.2f}x", f"{now:.2f}x", f"<= {goal:g}x", verdict, spread, p99])
        if not met:
            verdicts.append(f"MISSED: {metric} at {size}: {now:.2f}x (goal <= {goal:g}x; before {was:.2f}x)")
    return table, verdicts


HEADERS: Final = ("goal", "size", "before", "after", "goal", "verdict", "after p10-p90 ms", "after p99 ms")


def main(argv: Sequence[str] | None = None) -> int:
    """Measure both trees, print the goals table and write the report; 0 whether or not goals are met."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_goals", description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE_REV, help=f"the git revision to compare with (default {BEFORE_REV})")
    parser.add_argument("--quick", action="store_true", help="few rounds: a smoke run, not a figure")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Markdown report to write")
    parser.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        worker(args.worker, quick=args.quick)
        return 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="handoff-goals-") as scratch:
        root = Path(scratch)
        before_tree = _unpack(args.before, root / "before")
        compiled = [byte_compiled(tree) for tree in (before_tree, ROOT)][-1]
        print(f"before ({args.before}):", flush=True)
        before = _measure_tree(before_tree, root / "before.json", quick=args.quick)
        print("after (this checkout):", flush=True)
        after = _measure_tree(ROOT, root / "after.json", quick=args.quick)
        facts = machine_facts(root)
    table, verdicts = rows(before, after)
    print()
    print(text_table(HEADERS, table, left=2))
    print()
    for line in verdicts or ["all goals met"]:
        print(line)
    facts += [
        ("before", f"git {args.before}"),
        ("command", "make bench (runs python -m bench.bench_goals in .venv-bench)"),
        ("bytecode", f"both trees {compiled}"),
        ("run time", f"{time.monotonic() - started:.0f} s"),
        run_kind(quick=args.quick),
    ]
    method = (
        "Each ratio is a median of ours ÷ the median of the baseline measured in the same worker "
        "process, interleaved round by round (saves and loads back to back in batches; fresh "
        "processes timed from outside, restore and `SqliteSaver.get_tuple` at 100 KB). The spread "
        "and p99 are of our own case, in ms per call (per process for the fresh rows)."
    )
    sections = [
        "## Goals (issue 11)\n\n" + markdown_table(HEADERS, table, left=2),
        "\n".join(f"- **{line}**" for line in verdicts) or "- all goals met",
        "## Method\n\n" + method,
    ]
    write_report(args.out, "handoff-files: the speed goals, before and after", facts, sections)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
