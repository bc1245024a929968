"""Start-up cost: ``import handoff_files``, ``handoff --version`` and ``handoff show``, before and after, in one run.

Usage: ``python -m bench.bench_import [--before REV] [--rounds N] [--quick] [--out PATH]``.

"Before" is the package as it was at *REV* (default: the last commit before the layered package),
unpacked from git into a temporary folder; "after" is this checkout. Every case is a fresh
process, timed from outside, interleaved round by round with two baselines measured in the same
run: ``python -c pass`` and a script that imports pydantic and defines one model. The report
prints each case's median and its ratios to both baselines, and which heavy modules each case
loads (read from ``sys.modules`` in a separate run, so the timing is not disturbed).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from bench.fresh import ROOT, byte_compiled
from bench.report import machine_facts, markdown_table, ms, run_kind, text_table, write_report
from bench.timing import interleaved

#: The last commit before the package was split into layers.
BEFORE_REV: Final = "6148e52"
#: Modules a start-up should not pay for unless it uses them.
HEAVY: Final = ("pydantic", "watchdog", "ruamel", "fsspec", "orjson", "filelock")
OURS: Final = ("inbox", "compat", "transfer", "watch", "run")

PYDANTIC_ONE_MODEL: Final = "from pydantic import BaseModel\nclass M(BaseModel):\n    x: int\n"
PROBE: Final = (
    "import json, runpy, sys\n"
    "sys.argv = sys.argv[1:]\n"
    "try:\n    {body}\nexcept SystemExit:\n    pass\n"
    "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
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


Case = tuple[list[str], dict[str, str], Path]


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root)  # ahead of the editable install's finder, which sits after the path finder
    return env


def _runner(argv: list[str], env: dict[str, str], cwd: Path) -> Callable[[], None]:
    # run in the tree's own folder too: `-c` and `-m` put the working directory first on sys.path
    def run() -> None:
        done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        if done.returncode:
            msg = f"{argv} exited {done.returncode}: {done.stderr.decode(errors='replace')[-1000:]}"
            raise RuntimeError(msg)

    return run


def _thread(scratch: Path) -> Path:
    """A small thread with two generations, written by this checkout."""
    thread = scratch / "small-thread"
    code = (
        "import sys\nfrom handoff_files import HandoffStore\n"
        "store = HandoffStore(sys.argv[1])\n"
        "for k in range(2):\n"
        "    store.save({'narrative': f'step {k}', 'state': {'data': {'k': k}},"
        " 'priorities': [{'task': 'go on', 'urgency': 'first'}]})\n"
    )
    subprocess.run([sys.executable, "-c", code, str(thread)], env=_env(ROOT), cwd=ROOT, check=True)
    return thread


def _cases(before: Path, thread: Path) -> dict[str, Case]:
    py = sys.executable
    cases: dict[str, Case] = {
        "python -c pass": ([py, "-c", "pass"], _env(ROOT), ROOT),
        "pydantic + one model": ([py, "-c", PYDANTIC_ONE_MODEL], _env(ROOT), ROOT),
    }
    for label, root in (("before", before), ("after", ROOT)):
        env = _env(root)
        cases[f"import handoff_files ({label})"] = ([py, "-c", "import handoff_files"], env, root)
        cases[f"handoff --version ({label})"] = ([py, "-m", "handoff_files", "--version"], env, root)
        cases[f"handoff show ({label})"] = ([py, "-m", "handoff_files", "show", str(thread)], env, root)
    return cases


def _loaded(argv: list[str], env: dict[str, str], cwd: Path) -> list[str]:
    """The modules a case leaves in ``sys.modules``: its argv run through the probe."""
    if argv[1] == "-c":
        body = f"exec({argv[2]!r})"
        args = ["probe"]
    else:
        body = "runpy.run_module('handoff_files', run_name='__main__')"
        args = ["handoff", *argv[3:]]
    code = PROBE.format(body=body)
    done = subprocess.run([argv[0], "-c", code, *args], env=env, cwd=cwd, capture_output=True, check=False)
    modules: list[str] = json.loads(done.stderr.decode().strip().splitlines()[-1])
    return modules


def _check_tree(root: Path) -> None:
    """Make sure a case run with *root* imports the package from *root*, not from the install."""
    code = "import handoff_files; print(handoff_files.__file__)"
    found = subprocess.run(
        [sys.executable, "-c", code], env=_env(root), cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    if not Path(found).is_relative_to(root):
        msg = f"a case meant to import {root} imported {found}"
        raise RuntimeError(msg)


def _heavy(modules: Sequence[str]) -> str:
    top = {name.split(".")[0] for name in modules}
    ours = {name.split(".")[1] for name in modules if name.startswith("handoff_files.") and name.count(".") >= 1}
    found = [name for name in HEAVY if name in top] + [f"handoff_files.{name}" for name in OURS if name in ours]
    return ", ".join(found) or "none"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print (and write) its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--before", default=BEFORE_REV, help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=40, help="interleaved rounds (default 40)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 rounds")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results-import.md")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    with tempfile.TemporaryDirectory() as scratch:
        before = _unpack(args.before, Path(scratch) / "before")
        for root in (before, ROOT):
            _check_tree(root)
            compiled = byte_compiled(root)
        cases = _cases(before, _thread(Path(scratch)))
        print(f"timing {len(cases)} cases x {rounds} rounds …", file=sys.stderr)
        samples = interleaved({name: _runner(*case) for name, case in cases.items()}, repeats=rounds, warmup=1)
        loaded = {name: _loaded(*case) for name, case in cases.items()}
    bare, model = samples["python -c pass"].median, samples["pydantic + one model"].median
    headers = ["case", "median ms", "÷ python -c pass", "÷ pydantic + one model", "modules", "heavy modules loaded"]
    rows = [
        [
            name,
            ms(sample.median, 1),
            f"{sample.median / bare:.2f}x",
            f"{sample.median / model:.2f}x",
            str(len(loaded[name])),
            _heavy(loaded[name]),
        ]
        for name, sample in samples.items()
    ]
    print(text_table(headers, rows))
    facts = [
        *machine_facts(),
        run_kind(quick=args.quick),
        ("before", f"git {args.before}"),
        ("rounds", str(rounds)),
        ("bytecode", compiled),
    ]
    title = "Start-up cost, before and after the layered package"
    write_report(args.out, title, facts, [markdown_table(headers, rows)])
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
