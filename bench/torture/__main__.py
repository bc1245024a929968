"""``python -m bench.torture``: run the torture parts and print the summary table."""

from __future__ import annotations

import argparse
import importlib
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.torture import Options, Row

#: part name → (module, what its count means, the default count of a full run)
PARTS: dict[str, tuple[str, str, int]] = {
    "kills": ("bench.torture.kills", "random SIGKILLs during saves", 10_000),
    "syscalls": ("bench.torture.syscalls", "SIGKILL at each system call of a save (strace)", 0),
    "faults": ("bench.torture.faults", "ENOSPC/EIO/EROFS/short write at each OS call", 0),
    "powerloss": ("bench.torture.powerloss", "simulated power-loss crash states", 1_000),
    "concurrency": ("bench.torture.concurrency", "saves per writer, 8 writers, holders killed", 1_000),
    "machines-folder": (
        "bench.torture.machines:run_folder",
        "acknowledged saves, 4 writer processes sharing only a folder, killed mid-save",
        2_000,
    ),
    "machines-bucket": (
        "bench.torture.machines:run_bucket",
        "acknowledged saves, 4 writer processes sharing only a bucket, killed mid-save; the store killed",
        2_000,
    ),
}


def _table(rows: list[Row], durability: str) -> str:
    head = ["part", "durability", "cases", "kills", "faults", "lost", "torn", "leftovers", "result"]
    body = [
        [
            row.part,
            durability,
            f"{row.cases:,}",
            f"{row.kills:,}",
            f"{row.faults:,}",
            str(row.lost),
            str(row.torn),
            str(row.leftovers),
            "ok" if row.ok else "FAIL",
        ]
        for row in rows
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    notes = [f"- {row.part}: {row.notes}" for row in rows if row.notes]
    return "\n".join(lines + (["", *notes] if notes else []))


def _progress(name: str) -> Callable[[str], None]:
    def report(line: str) -> None:
        print(f"[{name}] {line}", file=sys.stderr, flush=True)

    return report


def main(argv: list[str] | None = None) -> int:
    """Run the chosen parts; exit 1 if any lost, tore or left anything behind."""
    parser = argparse.ArgumentParser(prog="python -m bench.torture", description=__doc__)
    parser.add_argument("parts", nargs="*", metavar="PART", help=f"parts to run: {', '.join(PARTS)} (default: all)")
    parser.add_argument("--kills", type=int, help="random SIGKILLs for the kills part (default 10,000)")
    parser.add_argument("--states", type=int, help="crash states for the powerloss part (default 1,000)")
    parser.add_argument(
        "--saves",
        type=int,
        help="saves per writer for the concurrency part (default 1,000); acknowledged saves in all for machines-*",
    )
    parser.add_argument(
        "--count", type=int, help="one count for every part (its main count: see the table); overrides the others"
    )
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: a fresh one, printed)")
    parser.add_argument("--durability", choices=["full", "journal"], default="full")
    parser.add_argument("--out", type=Path, help="also write the table (markdown) to this file")
    args = parser.parse_args(argv)
    unknown = [name for name in args.parts if name not in PARTS]
    if unknown:
        parser.error(f"unknown part {unknown[0]!r}; choose from {', '.join(PARTS)}")
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    per_part = {
        "kills": args.kills,
        "powerloss": args.states,
        "concurrency": args.saves,
        "machines-folder": args.saves,
        "machines-bucket": args.saves,
    }
    chosen = args.parts or list(PARTS)
    rows: list[Row] = []
    started = time.monotonic()
    print(f"torture: seed {seed}, durability {args.durability}, parts {', '.join(chosen)}", file=sys.stderr)
    for name in chosen:
        module, what, default = PARTS[name]
        count = args.count if args.count is not None else (per_part.get(name) or default)
        with tempfile.TemporaryDirectory(prefix=f"torture-{name}-") as tmp:
            options = Options(
                count=count,
                seed=seed,
                workdir=Path(tmp),
                durability=args.durability,
                progress=_progress(name),
            )
            print(f"[{name}] {what}: count {count:,}", file=sys.stderr, flush=True)
            module_name, _, function = module.partition(":")
            row: Row = getattr(importlib.import_module(module_name), function or "run")(options)
        rows.append(row)
        for failure in row.failures:
            print(f"[{name}] FAIL {failure}", file=sys.stderr)
    table = _table(rows, args.durability)
    elapsed = time.monotonic() - started
    footer = (
        f"\nseed {seed}; {elapsed:.0f} s; `python -m bench.torture {' '.join(sys.argv[1:] if argv is None else argv)}`"
    )
    print(table + footer)
    if args.out:
        args.out.write_text(table + footer + "\n", encoding="utf-8")
    return 0 if all(row.ok for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
