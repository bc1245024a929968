"""A sample agent for restart-kill tests: a task of N steps, each done exactly once however often it is killed.

Run it on a thread (``HANDOFF_DIR``, as ``handoff run`` and the ``handoff_killer`` fixture set it)::

    HANDOFF_DIR=threads/t1 python samples/steps_agent.py 40

It restores its handoff, reads its briefing (what a model would be shown first), acknowledges it
with the briefing's code, and carries on from the steps the handoff records as done
(``--skip-briefing``: it acknowledges without reading the briefing, which a check for the code
catches). A step is done by saving it: the handoff's ``completed_tasks`` lists every step done, so
"done" and "saved" are one atomic fact, and a kill before the save leaves the step to do again.
``HANDOFF_DURABILITY=full`` makes its saves full (the default is journal-first). It prints ``RESUMED GEN g DONE d``,
``STEP k GEN g`` after each save and ``FINISHED`` at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from handoff_files import HandoffStore, NoHandoffError, brief


def say(line: str) -> None:
    """Print one line in one write: a kill leaves it whole or absent, never half a line."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def content(done: list[str], steps: int) -> dict[str, Any]:
    """The handoff once the steps in *done* are done: the list itself is what a restart resumes from."""
    remaining = [f"step {k}" for k in range(len(done) + 1, min(len(done) + 4, steps + 1))]
    return {
        "state": {"active_tasks": remaining[:1], "completed_tasks": done, "data": {"steps": steps}},
        "narrative": f"Done {len(done)} of {steps} steps. A step counts as done once its save returns.",
        "priorities": [
            {"task": task, "urgency": "first" if i == 0 else "after_primary"} for i, task in enumerate(remaining)
        ],
        "warnings": [{"text": "do each step once: the completed list is the record", "severity": "medium"}],
        "decisions": [],
    }


def open_store() -> HandoffStore:
    """The agent's thread, from ``HANDOFF_DIR``; ``HANDOFF_DURABILITY=full`` asks for full saves (default: journal)."""
    thread = os.environ["HANDOFF_DIR"]
    return HandoffStore(thread, durability="full" if os.environ.get("HANDOFF_DURABILITY") == "full" else "journal")


def do_steps(store: HandoffStore, done: list[str], steps: int, delay: float) -> None:
    """Do the steps after those in *done*, saving each as it is done."""
    while len(done) < steps:
        time.sleep(delay)  # the step's work; it counts as done once the save below returns
        done = [*done, f"step {len(done) + 1}"]
        receipt = store.save(content(done, steps))
        say(f"STEP {len(done)} GEN {receipt.generation}")
    say("FINISHED")


def arguments(argv: list[str] | None) -> argparse.Namespace:
    """The task's size and pace from the command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("steps", type=int, help="how many steps the task has")
    parser.add_argument("--delay", type=float, default=0.002, help="seconds of work per step (default 0.002)")
    parser.add_argument("--skip-briefing", action="store_true", help="acknowledge without reading the briefing")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Restore, acknowledge, and do the remaining steps; returns the exit status."""
    args = arguments(argv)
    store = open_store()
    try:
        restored = store.restore()
    except NoHandoffError:
        done: list[str] = []
        say("RESUMED GEN 0 DONE 0")
    else:
        done = list(restored.handoff.state.completed_tasks)
        # the proof the context reached this process: the journal's "resumed" line, with the code
        # only the briefing carries
        store.acknowledge(restored, code=None if args.skip_briefing else brief(restored).code)
        say(f"RESUMED GEN {restored.generation} DONE {len(done)}")
    do_steps(store, done, args.steps, args.delay)
    return 0


if __name__ == "__main__":
    sys.exit(main())
