"""``make demo``: an agent is killed with SIGKILL mid-run, restarted, and continues from its handoff."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from handoff_files import HandoffStore

AGENT = Path(__file__).with_name("demo_agent.py")
KILL_AFTER_STEP = 3


def main() -> int:
    """Run the agent, kill it after step 3, run it again, and check no step ran twice."""
    workdir = Path(tempfile.mkdtemp(prefix="handoff-demo-"))
    thread = workdir / "importer-fix"
    try:
        print(f"demo: thread directory {thread}")
        first = subprocess.Popen([sys.executable, str(AGENT), str(thread)], stdout=subprocess.PIPE, text=True)
        for line in first.stdout or ():
            print(line, end="")
            if f"step {KILL_AFTER_STEP}/" in line:
                first.send_signal(signal.SIGKILL)
                break
        first.wait()
        print(f"demo: killed the agent with SIGKILL (exit status {first.returncode}) in the middle of its work")
        print("demo: starting it again")
        second = subprocess.run([sys.executable, str(AGENT), str(thread)], capture_output=True, text=True, check=True)
        print(second.stdout, end="")
        handoff = HandoffStore(thread).restore().handoff
        done = handoff.state.completed_tasks
        if "continuing with step" not in second.stdout or len(done) != len(set(done)):
            print("demo: FAILED: the agent did not continue from its handoff", file=sys.stderr)
            return 1
        print(
            f"demo: the restarted agent continued from its handoff; generation {handoff.generation}, "
            f"{len(done)} steps each done once"
        )
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
