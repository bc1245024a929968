"""A step's writes as a thread grows: ``put_writes`` at 10, 1,000 and 3,000 checkpoints, beside SqliteSaver.

Usage: ``python -m bench.bench_writes [--quick] [--out PATH]`` (``make bench`` runs it in
``.venv-bench``, where ``langgraph-checkpoint-sqlite`` is installed).

LangGraph stores a step's writes on one thread while the next checkpoint's ``put`` runs on
another, so the writes often arrive after that put returned: for the checkpoint just before the
newest. Each round here does that, in that order: ``put`` of a new checkpoint (untimed), then
``put_writes`` of one small write for the checkpoint before it (timed), on a thread already
holding N checkpoints. Both savers at their defaults, rounds interleaved (each saver once per
round, in rotating order), medians. The floor of the promise is one append and one flush, which
both savers make; what this measures is whether a write's cost grows with the thread.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from bench.report import machine_facts, markdown_table, ms, run_kind, text_table, write_report
from bench.sqlite_saver import missing

LENGTHS: Final = (10, 1_000, 3_000)
QUICK_LENGTHS: Final = (10, 200)
DEFAULT_OUT: Final = Path(__file__).resolve().parent / "results-writes.md"
#: The goal: a write at the longest thread within this of the same saver's at the shortest.
FLAT: Final = 1.5


class _Thread:
    """One saver's thread: checkpoints put one after another, and a write for the one before the newest."""

    def __init__(self, saver: Any, thread_id: str) -> None:
        from langgraph.checkpoint.base import empty_checkpoint

        self.saver = saver
        self.config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        self.before: Any = None
        self.checkpoint = empty_checkpoint()
        self.count = 0

    def put(self) -> None:
        from langgraph.checkpoint.base import create_checkpoint

        self.checkpoint = create_checkpoint(self.checkpoint, None, self.count)
        metadata = {"source": "loop", "step": self.count, "parents": {}}
        self.before, self.config = self.config, self.saver.put(self.config, self.checkpoint, metadata, {})
        self.count += 1

    def write(self) -> None:
        """One small write for the checkpoint before the newest (the timed operation)."""
        self.saver.put_writes(self.before, [("payload", f"write {self.count}")], f"task-{self.count}")


def _savers(root: Path) -> dict[str, Any]:
    from handoff_files.langgraph import HandoffSaver

    # by name: langgraph-checkpoint-sqlite is in .venv-bench only, where mypy does not look
    module: Any = importlib.import_module("langgraph.checkpoint.sqlite")
    sqlite = module.SqliteSaver(sqlite3.connect(root / "graphs.sqlite", check_same_thread=False))
    sqlite.setup()
    return {"HandoffSaver": HandoffSaver(root / "graphs"), "SqliteSaver": sqlite}


def measure(root: Path, lengths: tuple[int, ...], rounds: int) -> list[list[str]]:
    """One row per thread length: each saver's median late write, the ratio, and each against its shortest."""
    savers = _savers(root)
    rows: list[list[str]] = []
    first: dict[str, float] = {}
    for length in lengths:
        threads = {name: _Thread(saver, f"writes-{length}") for name, saver in savers.items()}
        for thread in threads.values():
            for _ in range(length):
                thread.put()
        found = _late_writes(threads, rounds)
        ours, theirs = statistics.median(found["HandoffSaver"]), statistics.median(found["SqliteSaver"])
        first.setdefault("HandoffSaver", ours)
        first.setdefault("SqliteSaver", theirs)
        flat = ours / first["HandoffSaver"]
        rows.append(
            [
                f"{length:,}",
                ms(ours),
                ms(theirs),
                f"{ours / theirs:.2f}x",
                f"{flat:.2f}x / {theirs / first['SqliteSaver']:.2f}x",
                f"<= {FLAT:g}x {'met' if flat <= FLAT else 'MISSED'}",
            ]
        )
    return rows


def _late_writes(threads: dict[str, _Thread], rounds: int) -> dict[str, list[float]]:
    """Per saver, the seconds of each round's write; each round puts first (untimed), savers in rotating order."""
    names = list(threads)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds + 1):  # the first round warms up
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            thread = threads[name]
            thread.put()
            gc.collect()
            start = time.perf_counter_ns()
            thread.write()
            elapsed = time.perf_counter_ns() - start
            if round_:
                times[name].append(elapsed / 1e9)
    return times


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table and write the report."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_writes", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short threads, few rounds: a smoke run, not a figure")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    missing_sqlite = missing()
    if missing_sqlite is not None:
        print(missing_sqlite, file=sys.stderr)
        return 1
    lengths, rounds = (QUICK_LENGTHS, 5) if args.quick else (LENGTHS, 60)
    with tempfile.TemporaryDirectory(prefix="handoff-writes-") as scratch:
        rows = measure(Path(scratch), lengths, rounds)
        facts = machine_facts(Path(scratch))
    headers = ["checkpoints", "HandoffSaver ms", "SqliteSaver ms", "÷ SqliteSaver", "÷ at fewest (H / S)", "goal"]
    print(text_table(headers, rows, left=1))
    method = (
        "Each round puts a new checkpoint (untimed), then times `put_writes` of one small write for the "
        "checkpoint before it, the order LangGraph's threads often make them in; on a thread of N "
        "checkpoints (grown by one per round), both savers at their defaults (HandoffSaver: journal "
        "durability, every checkpoint kept; SqliteSaver: WAL, synchronous=FULL), savers in rotating order, "
        f"`gc.collect()` before each timed write, {rounds} rounds after one warm-up, medians. The goal: the "
        f"write at the longest thread within {FLAT:g}x of the same saver's at the shortest (it listed "
        "`history/` before: 4.8 ms at 1,500 checkpoints against 0.3 ms at the start)."
    )
    write_report(
        args.out,
        "A step's writes as a thread grows: HandoffSaver beside SqliteSaver",
        [*facts, run_kind(quick=args.quick), ("rounds", str(rounds))],
        [markdown_table(headers, rows, left=1), "## Method\n\n" + method],
    )
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
