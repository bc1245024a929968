"""Hostile input: each crafted file's parse-or-refuse time and peak memory against its size, in a fresh process.

Usage: ``python -m bench.bench_hostile [--before REV] [--timeout S] [--only NAME ...] [--out PATH]``.

Each case is a file an attacker with write access to a thread folder or an input file can leave
(issue 19): brackets by the hundred kilobyte, long lines, deep nesting one level per line, a
"billion laughs", thousands of anchors, aliases or ``%TAG`` directives, deep JSON. Each is loaded
by ``load(path)`` in a child process, as an agent's restart or ``handoff validate`` reads it;
some under a 1 MiB main-thread stack (``ulimit -s 1024``), in a 256 KiB thread, or with a raised
recursion limit, as a host process may run. The child reports the outcome (parsed, or the error
and its reason), the time ``load`` took and how far its resident memory grew (peak RSS over the
RSS before the call); a crash or a timeout is read from outside (``wait4``'s peak RSS).

``--before REV`` runs the same cases against the package as it was at *REV* (``git archive``)
in the same run, for the before/after table. ``tests/format/test_hostile_input.py`` runs every
case with a loose time bound: a crash or a hang fails it, a refusal passes.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.fresh import ROOT
from bench.report import machine_facts, markdown_table, text_table, write_report
from handoff_files.format.bounds import MAX_YAML_BYTES, MAX_YAML_NODES

__all__ = ["CASES", "Case", "Outcome", "measure"]

KB: Final = 1000
MB: Final = 1000 * KB

#: The child: warm up (imports, the first parse), then time one ``load`` and its memory growth.
CHILD: Final = r"""
import json, sys, threading, time
path, thread_kib, recursion_limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
from handoff_files import HandoffError, load
from handoff_files.format.codec import parse
import ruamel.yaml, ruamel.yaml.events  # imported before timing: a YAML load imports it on first use
parse(b"a: [1, {b: c}]\n", "warm.yaml")
parse(b'{"a": [1, {"b": "c"}]}', "warm.json")
if recursion_limit:
    sys.setrecursionlimit(recursion_limit)

def rss(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field))

result = {}

def run():
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # start the peak (VmHWM) from here: the imports' peak is not the load's
    before = rss("VmRSS:")
    started = time.perf_counter()
    try:
        load(path)
    except HandoffError as exc:
        result.update(kind="refused", error=type(exc).__name__, reason=exc.reason)
    else:
        result.update(kind="parsed", error="", reason="")
    result["seconds"] = time.perf_counter() - started
    result["peak_growth"] = rss("VmHWM:") - before

if thread_kib:
    threading.stack_size(thread_kib * 1024)
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
else:
    run()
print(json.dumps(result))
"""


@dataclass(frozen=True)
class Case:
    """One hostile file and how the process that reads it runs."""

    name: str
    what: str
    build: Callable[[], bytes]
    suffix: str = ".yaml"
    stack_kib: int = 0  # the main thread's stack (ulimit -s), 0: as inherited
    thread_kib: int = 0  # load in a thread with this stack, 0: in the main thread
    recursion_limit: int = 0  # a host that raised sys.setrecursionlimit, 0: the default
    expect: str = "refused"  # "refused" or "parsed"
    says: str = ""  # a part of the refusal's reason


@dataclass(frozen=True)
class Outcome:
    """What reading one case did: ``parsed``, ``refused``, ``crashed`` or ``timeout``."""

    kind: str
    error: str
    reason: str
    seconds: float  # load()'s own time; for a crash or a timeout, the child's whole run
    peak_growth: (
        int  # bytes of resident memory load() added at its peak; for a crash or a timeout, the child's peak RSS
    )
    size: int


def _flow_of_brackets(size: int) -> bytes:
    # many small flow lists, shallow: the shape that sent files to the pure-Python parser (> 4,096 brackets)
    return b"a: [" + b"[0], " * (size // 5) + b"0]\n"


def _lines_of_brackets(levels: int) -> bytes:
    return b"a:\n" + b"  [\n" * levels + b"  ]\n" * levels


def _billion_laughs() -> bytes:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n']
    lines += [f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)]
    return "".join(lines).encode()


def _deep_json(levels: int) -> bytes:
    return b'{"a": ' + b"[" * levels + b"]" * levels + b"}\n"


CASES: Final = (
    Case("brackets-400KB", "400 KB of small flow lists", lambda: _flow_of_brackets(400 * KB), says="values"),
    Case("brackets-4MB", "4 MB of small flow lists", lambda: _flow_of_brackets(4 * MB), says="limit for YAML"),
    Case("brackets-16MB", "16 MB of small flow lists", lambda: _flow_of_brackets(16 * MB), says="limit for YAML"),
    Case(
        "long-line-400KB",
        "one 400 KB line: a flow list of 200,000 numbers",
        lambda: b"a: [" + b"0," * (200 * KB) + b"0]\n",
        says="values",
    ),
    Case(
        "long-text-line-400KB",
        "one 400 KB line of text (a valid document; the narrative is too long)",
        lambda: b"schema_version: '2.0'\nnarrative: " + b"word " * (80 * KB) + b"\n",
        says="narrative",
    ),
    Case(
        "nested-lines-4000",
        "4,000 nested [ one per line (16 KB), 1 MiB stack",
        lambda: _lines_of_brackets(4000),
        stack_kib=1024,
        says="nested deeper",
    ),
    Case(
        "nested-1000-thread",
        "1,000 nested [ on one line, in a 256 KiB thread",
        lambda: b"a: " + b"[" * 1000 + b"]" * 1000 + b"\n",
        thread_kib=256,
        says="nested deeper",
    ),
    Case(
        "nested-100000",
        "100,000 nested [ (200 KB; a first byte other than { reads as YAML)",
        lambda: b"[" * 100_000 + b"]" * 100_000,
        suffix=".json",
        says="nested deeper",
    ),
    Case("billion-laughs", "a billion laughs (9 anchors, 81 aliases)", _billion_laughs, says="aliases"),
    Case(
        "anchors-20000",
        "20,000 anchors (240 KB)",
        lambda: b"a: [" + b", ".join(b"&a%d 0" % i for i in range(20_000)) + b"]\n",
        says="anchors",
    ),
    Case(
        "aliases-20000",
        "20,000 aliases to one scalar (80 KB)",
        lambda: b"a: &x 0\nb: [" + b", ".join([b"*x"] * 20_000) + b"]\n",
        says="aliases",
    ),
    Case(
        "values-1MB",
        "1 MB of one-line list items (262,000 values)",
        lambda: b"a:\n" + b"- 0\n" * (1_048_000 // 4),
        says="values",
    ),
    Case(
        "largest-values",
        "the most values YAML may hold: a list of 9,997 numbers (10,000 values, 30 KB), parsed in full",
        lambda: b"a: [" + b", ".join([b"0"] * (MAX_YAML_NODES - 3)) + b"]\n",
        says="schema_version",
    ),
    Case(
        "largest-bytes",
        "the most bytes YAML may hold: 1 MiB of text in a block scalar, parsed in full",
        lambda: b"a: |\n" + (b"  " + b"x" * 97 + b"\n") * (MAX_YAML_BYTES // 100 - 1),
        says="schema_version",
    ),
    Case(
        "directives-1MB",
        "1 MB of %TAG directives (36,000 lines)",
        lambda: b"".join(b"%%TAG !t%d! tag:x,%d:\n" % (i, i) for i in range(36_000)) + b"---\na: 1\n",
        says="directives",
    ),
    Case(
        "json-lists-16MiB",
        "JSON at the 16 MiB limit: 5.6 million empty lists, parsed in full (the worst shape for memory)",
        lambda: b'{"a": [' + b",".join([b"[]"] * ((16 * 1024 * 1024 - 16) // 3)) + b"]}",
        suffix=".json",
        says="schema_version",
    ),
    Case(
        "json-numbers-16MiB",
        "JSON at the 16 MiB limit: 8.4 million numbers, parsed in full",
        lambda: b'{"a": [' + b",".join([b"0"] * ((16 * 1024 * 1024 - 16) // 2)) + b"]}",
        suffix=".json",
        says="schema_version",
    ),
    Case(
        "deep-json-100000",
        "JSON nested 100,000 deep (200 KB), recursion limit raised to 1,000,000",
        lambda: _deep_json(100_000),
        suffix=".json",
        recursion_limit=1_000_000,
        says="nested deeper",
    ),
    Case(
        "deep-json-1000-thread",
        "JSON nested 1,000 deep, in a 256 KiB thread",
        lambda: _deep_json(1000),
        suffix=".json",
        thread_kib=256,
        says="nested deeper",
    ),
)


def _peak_rss(pid: int) -> int:
    """The peak resident memory of a running process (``VmHWM``), 0 if it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def measure(case: Case, directory: Path, *, env: dict[str, str], timeout: float = 60.0) -> Outcome:
    """Write *case*'s file under *directory* and read it in a child process with *env* (its ``PYTHONPATH``).

    :returns: the outcome; a child killed by a signal is ``crashed``, one past *timeout* ``timeout``.
    """
    data = case.build()
    path = directory / f"{case.name}{case.suffix}"
    path.write_bytes(data)
    argv = [sys.executable, "-c", CHILD, str(path), str(case.thread_kib), str(case.recursion_limit)]
    if case.stack_kib:
        argv = ["/bin/sh", "-c", f'ulimit -s {case.stack_kib} && exec "$@"', "sh", *argv]
    out, err = directory / f"{case.name}.out", directory / f"{case.name}.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        started = time.perf_counter()
        # run in *directory*: `-c` puts the working directory first on sys.path, ahead of PYTHONPATH
        child = subprocess.Popen(argv, env=env, cwd=directory, stdout=stdout, stderr=stderr)
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > timeout:
                peak = _peak_rss(child.pid)
                child.kill()
                os.wait4(child.pid, 0)
                child.returncode = -signal.SIGKILL  # reaped here: keep Popen from waiting again
                return Outcome(
                    "timeout", "", f"no answer in {timeout:g} s", time.perf_counter() - started, peak, len(data)
                )
            time.sleep(0.01)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if child.returncode < 0:
        name = signal.Signals(-child.returncode).name
        return Outcome("crashed", name, f"killed by {name}", wall, usage.ru_maxrss * 1024, len(data))
    text = out.read_text(encoding="utf-8").strip()
    if child.returncode or not text:
        tail = err.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
        return Outcome("crashed", f"exit {child.returncode}", " ".join(tail), wall, usage.ru_maxrss * 1024, len(data))
    result = json.loads(text)
    return Outcome(
        result["kind"], result["error"], result["reason"], result["seconds"], result["peak_growth"], len(data)
    )


def _unpack(rev: str, into: Path) -> Path:
    """The package, migrations and schemas as they were at *rev*, unpacked under *into*."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "handoff_files", "migrations", "schemas"],  # noqa: S607 -- git from PATH, as a developer runs it
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    return env


def _size(n: int) -> str:
    return f"{n / MB:.1f} MB" if n >= MB else f"{n / KB:.0f} KB" if n >= KB else f"{n} B"


def _row(case: Case, label: str, outcome: Outcome) -> list[str]:
    said = ": ".join(part for part in (outcome.error, outcome.reason) if part)
    # a crash or a timeout gives only the whole process's peak, not load()'s growth: no ratio
    whole = outcome.kind in {"crashed", "timeout"}
    return [
        case.name,
        label,
        _size(outcome.size),
        outcome.kind,
        said[:110],
        f"{outcome.seconds:.3f}",
        f"{outcome.peak_growth / MB:.1f}" + (" (process)" if whole else ""),
        "" if whole else f"{outcome.peak_growth / outcome.size:.1f}x",
    ]


HEADERS: Final = ("case", "package", "size", "outcome", "error: reason", "seconds", "memory MB", "memory / size")


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every case (or ``--only`` some), print the table and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--before", metavar="REV", help="also run the package as it was at REV (git)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a case may take (default 60)")
    parser.add_argument("--only", nargs="*", default=(), help="case names to run")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results-hostile.md")
    args = parser.parse_args(argv)
    cases = [case for case in CASES if not args.only or case.name in args.only]
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="hostile-") as scratch:
        trees = [("after", _env(ROOT))]
        if args.before:
            trees.insert(0, (f"before ({args.before})", _env(_unpack(args.before, Path(scratch) / "before"))))
        for case in cases:
            for label, env in trees:
                work = Path(tempfile.mkdtemp(dir=scratch))
                outcome = measure(case, work, env=env, timeout=args.timeout)
                rows.append(_row(case, label, outcome))
                print(text_table(HEADERS, [rows[-1]], left=5).splitlines()[-1], flush=True)
    print(text_table(HEADERS, rows, left=5))
    what = "\n".join(f"- **{case.name}**: {case.what}" for case in cases)
    figures = (
        "seconds: `load()`'s own time in the child (for a crash or a timeout, the whole run); memory: how far the "
        "child's resident memory grew over the call (for a crash or a timeout, its whole peak RSS). A case past "
        "--timeout is stopped there: run without a limit, 4 MB of brackets took 83 s and 1.95 GB, 16 MB ran "
        "155 s and crashed (issue 19). A refusal after a full parse (no `schema_version`) measures the parse."
    )
    facts = [*machine_facts(), ("timeout", f"{args.timeout:g} s a case")]
    write_report(
        args.out,
        "Hostile input: parse or refuse, time and memory",
        facts,
        ["## Cases\n\n" + what, "## Results\n\n" + figures + "\n\n" + markdown_table(HEADERS, rows, left=5)],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
