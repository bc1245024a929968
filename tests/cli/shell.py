"""``python -m handoff_files ARGS`` as a person's shell runs it: what the CLI itself prints, and its exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

#: An ISO 8601 time in UTC, ending in Z, as every ``--json`` output writes times.
UTC_Z: Final = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"


def handoff(
    *argv: str | Path, env: dict[str, str], stdin: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a child process (this checkout, by *env*); never raises on a failing exit code."""
    return subprocess.run(
        [sys.executable, "-m", "handoff_files", *map(str, argv)],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def machine(done: subprocess.CompletedProcess[str]) -> Any:
    """The one JSON document a ``--json`` run printed on stdout (the test fails on anything else)."""
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)
