"""make demo's job: an agent under `handoff run` is SIGKILLed mid-run, restarted, acknowledges, and continues."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from handoff_files import HandoffStore
from tests.conftest import ROOT


def test_the_demo_kills_the_agent_and_it_continues_from_its_handoff(
    python: str, subprocess_env: dict[str, str]
) -> None:
    done = subprocess.run(
        [python, str(ROOT / "samples" / "demo.py")],
        capture_output=True,
        text=True,
        env=subprocess_env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for line in (
        "killing the agent",
        "handoff run: agent killed by SIGKILL",
        "handoff run: the agent acknowledged its context: resumed from generation 3 with the code",
        "continuing with step 4 instead of starting over",
        "with 8 steps, each done once",
    ):
        assert line in out, out
    assert out.count("agent: step 3/8 done") == 1
    # the thread it talked about is left for the person to look at, with a command that runs as printed
    # (the test's PATH lacks the venv's bin/, as a shell after `make demo` does)
    told = out.split("demo: the thread is left for you to look at: ", 1)[1].splitlines()[0]
    show = told.split(";")[0].split()
    thread = Path(show[-1])
    try:
        assert HandoffStore(thread).restore().generation == 8
        assert show[-2] == "show"
        shown = subprocess.run(
            [*show[:-2], "show", str(thread)], capture_output=True, text=True, cwd=ROOT, check=False, timeout=60
        )
        assert shown.returncode == 0, shown.stderr
        assert ", generation 8, sealed" in shown.stdout, shown.stdout
    finally:
        shutil.rmtree(thread.parent, ignore_errors=True)
