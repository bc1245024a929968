"""A small sample agent: works through steps, saving a handoff after each, and resumes from it on restart."""

from __future__ import annotations

import os
import sys
import time

from handoff_files import HandoffStore, NoHandoffError, brief

STEPS = [
    "read the failing test report",
    "reproduce the failure locally",
    "bisect the commit that broke it",
    "write a regression test",
    "fix the date parsing in the importer",
    "run the whole suite",
    "update the changelog",
    "open the pull request",
]


def main(thread: str, delay: float) -> int:
    """Run the agent on *thread*, sleeping *delay* seconds per step (the work)."""
    print(f"agent: started, pid {os.getpid()}", flush=True)
    store = HandoffStore(thread, agent_id="demo-agent")
    try:
        restored = store.restore()
    except NoHandoffError:
        done: list[str] = []
        print("agent: no handoff found, starting from the beginning", flush=True)
    else:
        done = list(restored.handoff.state.completed_tasks)
        # what a model would be shown first; acknowledging with the code it ends with proves it was read
        # (the supervisor waits for this journal line)
        briefing = brief(restored)
        print(f"agent: read the briefing of generation {briefing.generation} ({len(briefing.text)} chars)", flush=True)
        store.acknowledge(restored, code=briefing.code)
        print(
            f"agent: restored generation {restored.generation} from the {restored.source}; "
            f"{len(done)} of {len(STEPS)} steps already done, continuing with step {len(done) + 1} "
            "instead of starting over",
            flush=True,
        )
    for step in STEPS[len(done) :]:
        time.sleep(delay)  # the real work would happen here
        done.append(step)
        remaining = STEPS[len(done) :]
        receipt = store.save(
            {
                "state": {
                    "active_tasks": remaining[:1],
                    "completed_tasks": done,
                    "data": {"step": len(done), "of": len(STEPS)},
                },
                "narrative": f"Working through the importer bug. Just finished: {step}.",
                "priorities": [
                    {"task": task, "urgency": "first" if i == 0 else "after_primary"}
                    for i, task in enumerate(remaining)
                ],
                "warnings": [{"text": "the importer reads dates in local time", "severity": "high"}],
                "decisions": [{"decision": "fix the parser, not the data", "reason": "the data is right"}],
            }
        )
        print(f"agent: step {len(done)}/{len(STEPS)} done ({step}); saved generation {receipt.generation}", flush=True)
    print(f"agent: all {len(STEPS)} steps done", flush=True)
    return 0


if __name__ == "__main__":
    # under `handoff run` the thread comes from HANDOFF_DIR; alone, from the command line
    thread_dir = os.environ.get("HANDOFF_DIR") or sys.argv[1]
    sys.exit(main(thread_dir, float(os.environ.get("DEMO_DELAY", "0.3"))))
