"""Fresh processes: the wall time of a short Python run, and the syncs it makes per operation (strace).

A restarted agent pays for the interpreter, its imports and the read: :func:`python_run` times
all three as the wall time of ``python -c CODE``. :func:`syncs_per_op` counts what durability
really costs, the fsync-family system calls a snippet makes per operation, so a table can say
"one fdatasync per commit" from a measurement rather than from documentation.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

__all__ = ["SYNC_CALLS", "byte_compiled", "child_env", "python_run", "strace_missing", "syncs_per_op"]

ROOT: Final = Path(__file__).resolve().parent.parent
#: The system calls that make data durable (``msync`` and ``sync_file_range`` count: a library could use them).
SYNC_CALLS: Final = ("fsync", "fdatasync", "syncfs", "sync_file_range", "msync")
# one line per call; a call strace saw interrupted appears again as "<... fsync resumed>", not counted twice
_SYNC_LINE: Final = re.compile(rf"^\d+\s+(?:{'|'.join(SYNC_CALLS)})\(", re.MULTILINE)


def byte_compiled(tree: Path) -> str:
    """Byte-compile the package under *tree* (its ``__pycache__``), as installing a wheel does; say so.

    An editable install compiles nothing ahead, and where ``PYTHONDONTWRITEBYTECODE`` is set (as
    on the reference machine) nothing is ever cached: every fresh process would compile ~40
    modules from source, ~30 ms no installed copy pays. Timing fresh processes without this
    would measure the machine's setting, not the package.

    :returns: a line for the report, naming the setting this machine has.
    :raises RuntimeError: if compileall fails.
    """
    done = subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", "handoff_files"],
        cwd=tree,
        capture_output=True,
        check=False,
    )
    if done.returncode:
        msg = f"compileall in {tree} exited {done.returncode}: {done.stdout.decode(errors='replace')[-1000:]}"
        raise RuntimeError(msg)
    setting = os.environ.get("PYTHONDONTWRITEBYTECODE")
    return "byte-compiled before timing, as a wheel install does" + (
        f" (this machine sets PYTHONDONTWRITEBYTECODE={setting})" if setting else ""
    )


def child_env() -> dict[str, str]:
    """The environment for child processes: they import this checkout (``bench`` and ``handoff_files``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if done.returncode:
        # a contender that failed has measured nothing: stop the run rather than time an error path
        msg = f"{argv[:3]}... exited {done.returncode}: {done.stderr.decode(errors='replace').strip()[-2000:]}"
        raise RuntimeError(msg)


def python_run(code: str, *args: str, python: str = sys.executable) -> Callable[[], None]:
    """A callable that runs ``python -c code args…`` to its end and raises if it exits non-zero.

    Timed from outside, one call is what a restart costs: interpreter start, imports, the work
    and the exit.
    """
    env = child_env()
    argv = [python, "-c", code, *args]
    return lambda: _run(argv, env)


def strace_missing() -> str | None:
    """Why syncs cannot be counted here (no ``strace``, or ptrace refused), or ``None`` when they can."""
    strace = shutil.which("strace")
    if strace is None:
        return "strace is not installed (apt-get install strace), so syncs were not counted"
    done = subprocess.run([strace, "-qq", "-o", os.devnull, "true"], capture_output=True, check=False)
    if done.returncode:
        return f"strace cannot trace here ({done.stderr.decode(errors='replace').strip()[:200]})"
    return None


def _count_syncs(code: str, workdir: Path, args: tuple[str, ...], ops: int) -> int:
    strace = shutil.which("strace")
    if strace is None:
        msg = "strace is not installed"
        raise RuntimeError(msg)
    trace = workdir.with_suffix(".strace")
    argv = [strace, "-f", "-qq", "-e", f"trace={','.join(SYNC_CALLS)}", "-o", str(trace)]
    _run([*argv, sys.executable, "-c", code, str(workdir), *args, str(ops)], child_env())
    return len(_SYNC_LINE.findall(trace.read_text(encoding="utf-8", errors="replace")))


def syncs_per_op(code: str, *args: str, ops: int = 10) -> float:
    """The fsync-family calls *code* makes per operation, counted with strace.

    *code* is run as ``python -c code WORKDIR args… N``: it sets up in ``WORKDIR`` (a fresh path,
    not yet created), warms up as it likes, then performs N operations. It runs twice, with N=0
    and N=*ops*, and the difference in sync calls, divided by *ops*, is the answer: set-up,
    warm-up, imports and exit cancel out.

    :raises RuntimeError: if strace is missing or the snippet fails.
    """
    with tempfile.TemporaryDirectory(prefix="bench-syncs-") as scratch:
        base = _count_syncs(code, Path(scratch) / "zero", args, 0)
        counted = _count_syncs(code, Path(scratch) / "many", args, ops)
    return (counted - base) / ops
