"""``make demo``: an agent under ``handoff run`` is killed with SIGKILL mid-run, restarted, and continues."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from handoff_files import HandoffError, HandoffStore

AGENT = Path(__file__).with_name("demo_agent.py")
KILL_AFTER_STEP = 3


def command_for_a_person() -> str:
    """How a person runs ``handoff`` after the demo: plain ``handoff`` only if it is this venv's script on PATH."""
    script = Path(sys.executable).with_name("handoff")
    if not script.is_file():
        return f"{sys.executable} -m handoff_files"
    on_path = shutil.which("handoff")
    if on_path is not None and Path(on_path).resolve() == script.resolve():
        return "handoff"
    try:
        return str(script.relative_to(Path.cwd()))  # `.venv/bin/handoff` after `make demo` in the checkout
    except ValueError:
        return str(script)


def main() -> int:
    """Run the agent under the supervisor, kill the agent after step 3, and check it continued."""
    workdir = Path(tempfile.mkdtemp(prefix="handoff-demo-"))
    thread = workdir / "importer-fix"
    kept = False
    try:
        print(f"demo: thread directory {thread}")
        print("demo: running the agent under `handoff run` (the supervisor speaks as `handoff run:`)")
        command = [sys.executable, "-m", "handoff_files", "run", str(thread), "--max-restarts", "3", "--"]
        run = subprocess.Popen(
            [*command, sys.executable, str(AGENT)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        pid, killed = None, False
        for line in run.stdout or ():
            print(line, end="", flush=True)
            if line.startswith("agent: started, pid "):
                pid = int(line.rsplit(" ", 1)[1])
            if not killed and pid is not None and f"step {KILL_AFTER_STEP}/" in line:
                print(f"demo: killing the agent (pid {pid}) with SIGKILL in the middle of its work", flush=True)
                os.kill(pid, signal.SIGKILL)
                killed = True
        run.wait()
        try:
            handoff = HandoffStore(thread).restore().handoff
        except HandoffError as exc:
            print(f"demo: FAILED: {exc}", file=sys.stderr)
            return 1
        done = handoff.state.completed_tasks
        resumed, _ = HandoffStore(thread).journal.last("resumed")
        if run.returncode != 0 or not killed or resumed is None or len(done) != len(set(done)):
            print("demo: FAILED: the agent did not continue from its handoff", file=sys.stderr)
            return 1
        print(
            f"demo: the restarted agent acknowledged generation {resumed.generation} and continued from it; "
            f"it finished at generation {handoff.generation} with {len(done)} steps, each done once"
        )
        handoff_cmd = command_for_a_person()
        print(f"demo: the thread is left for you to look at: {handoff_cmd} show {thread}; {handoff_cmd} log {thread}")
        if handoff_cmd != "handoff":
            print(f"demo: (`handoff` is in the venv: type {handoff_cmd}, or `source .venv/bin/activate` first)")
        kept = True
        return 0
    finally:
        if not kept:  # a failed demo leaves nothing behind; a good one leaves the thread it talked about
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
