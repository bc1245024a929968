"""A sample agent made for ``handoff run``: it restores, acknowledges its context, then does each step exactly once.

Run it under the supervisor::

    handoff run THREAD -- python samples/acking_agent.py 20

It reads its thread from ``HANDOFF_DIR`` (the supervisor sets it), restores the last handoff,
acknowledges it (the journal's "resumed" line the supervisor waits for), and carries on from the
step the handoff records. Each step is done by saving it: a kill before the save leaves the step
to do again, a kill after it leaves it done, so across restarts every step is done exactly once.
It prints one line per event, for a person watching and for tests:
``RESTORED GEN g STEP s EXPECTED e``, ``ACKED GEN g``, ``STEP k GEN g``, ``DONE STEP n GEN g``.
``--no-ack`` skips the acknowledgement: the bug the supervisor exists to catch.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from handoff_files import HandoffStore, NoHandoffError


def say(line: str) -> None:
    """Print one line in one write: a kill leaves it whole or absent, never half a line."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def content(step: int, steps: int) -> dict[str, Any]:
    """The handoff after *step* of *steps*: the step count is the state that makes a restart resume."""
    remaining = [f"step {k}" for k in range(step + 1, min(step + 4, steps + 1))]
    return {
        "state": {
            "active_tasks": remaining[:1],
            "completed_tasks": [f"step {step}"] if step else [],
            "data": {"step": step, "steps": steps},
        },
        "narrative": f"Finished step {step} of {steps}. Each step is done once, and counts as done once saved.",
        "priorities": [
            {"task": task, "urgency": "first" if i == 0 else "after_primary"} for i, task in enumerate(remaining)
        ],
        "warnings": [{"text": "a step is done only once its save returns", "severity": "medium"}],
        "decisions": [],
    }


def write_pidfile(path: Path) -> None:
    """Write this process's id to *path* by rename, so a reader sees the old id or the new one, never half."""
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    temp.write_text(f"{os.getpid()}\n")
    temp.replace(path)


def main(argv: list[str] | None = None) -> int:
    """Restore, acknowledge, and do the remaining steps; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("steps", type=int, help="how many steps the task has")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds of work per step (default 0.2)")
    parser.add_argument("--no-ack", action="store_true", help="skip the acknowledgement (the bug to catch)")
    parser.add_argument("--pidfile", type=Path, help="write this process's id here on start")
    args = parser.parse_args(argv)
    if args.pidfile is not None:
        write_pidfile(args.pidfile)
    thread = os.environ.get("HANDOFF_DIR")
    if not thread:
        print("acking_agent: HANDOFF_DIR is not set; run me under `handoff run THREAD -- ...`", file=sys.stderr)
        return 2
    expected = os.environ.get("HANDOFF_GENERATION", "?")
    store = HandoffStore(thread)
    try:
        restored = store.restore()
    except NoHandoffError:
        step = generation = 0
        say(f"RESTORED GEN 0 STEP 0 EXPECTED {expected}")
    else:
        step, generation = int(restored.handoff.state.data["step"]), restored.generation
        say(f"RESTORED GEN {restored.generation} STEP {step} EXPECTED {expected}")
        if not args.no_ack:
            # the proof the supervisor waits for: the context is in this process's memory now
            store.acknowledge(restored)
            say(f"ACKED GEN {restored.generation}")
    while step < args.steps:
        time.sleep(args.delay)  # the step's work; it counts as done once the save below returns
        receipt = store.save(content(step + 1, args.steps))
        step += 1
        generation = receipt.generation
        say(f"STEP {step} GEN {generation}")
    say(f"DONE STEP {step} GEN {generation}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
