"""Restore time against journal length: a restore reads the journal from its end, so length costs nothing."""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.report import machine_facts, markdown_table, ms, text_table, verdict, write_report
from bench.timing import interleaved, paired_ratio
from bench.workload import build_content
from handoff_files import HandoffStore
from handoff_files.thread.journal import Entry, _check

GOAL = 1.2
LINES = (10, 100_000)


def _thread(root: Path, lines: int) -> HandoffStore:
    """A thread with one saved 2 KB handoff and a journal of *lines* lines (the save's line last)."""
    store = HandoffStore(root / f"t{lines}")
    store.save(build_content(2048))
    saved = store.journal.path.read_bytes()
    filler = []
    for i in range(lines - 1):
        fields = Entry(
            "resumed", "2026-11-21T00:00:00.000Z", 1, None, f"resumed from generation 1 (run {i})", {}
        ).fields()
        filler.append(json.dumps({**fields, "check": _check(fields)}).encode() + b"\n")
    # written directly, past the rotation size on purpose: the bench measures the read, not rotation
    store.journal.path.write_bytes(b"".join(filler) + saved)
    return store


def main() -> None:
    """Measure restore() with a short and a long journal, interleaved, and print the ratio."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds: a smoke run")
    parser.add_argument("--out", type=Path, default=Path("bench/results-restore.md"))
    args = parser.parse_args()
    rounds = 50 if args.quick else 400
    with tempfile.TemporaryDirectory() as tmp:
        stores = {lines: _thread(Path(tmp), lines) for lines in LINES}
        sizes = {lines: store.journal.path.stat().st_size for lines, store in stores.items()}

        def restorer(path: Path) -> Callable[[], object]:
            return lambda: HandoffStore(path).restore()

        samples = interleaved(
            {f"{lines} lines": restorer(store.path) for lines, store in stores.items()}, repeats=rounds
        )
    short, long = samples[f"{LINES[0]} lines"], samples[f"{LINES[1]} lines"]
    ratio = long.median / short.median
    headers = ["journal", "bytes", "restore median ms", "p90 ms"]
    rows = [
        [
            f"{lines:,} lines",
            f"{sizes[lines]:,}",
            ms(samples[f"{lines} lines"].median),
            ms(samples[f"{lines} lines"].quantile(0.9)),
        ]
        for lines in LINES
    ]
    summary = (
        f"ratio {LINES[1]:,} / {LINES[0]} lines: {ratio:.2f}x (paired {paired_ratio(long, short):.2f}x), "
        f"goal <= {GOAL}x: {verdict(ratio, GOAL)}"
    )
    print(text_table(headers, rows))
    print(summary)
    write_report(
        args.out,
        "handoff-files: restore against journal length",
        machine_facts(),
        [markdown_table(headers, rows), summary, f"{rounds} interleaved rounds; a fresh HandoffStore per restore."],
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
