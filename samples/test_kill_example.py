"""An agent author's restart-kill test: kill the agent 20 times, inside its saves; it still finishes every step once.

Run it with ``pytest samples/test_kill_example.py``. ``STEPS_AGENT`` names the agent script beside
this file (default ``steps_agent.py``; ``steps_agent_no_restore.py`` has the bug this test catches)
and ``HANDOFF_DURABILITY`` its saves (``full`` or ``journal``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from handoff_files.run.killrun import Killer

AGENT = Path(__file__).with_name(os.environ.get("STEPS_AGENT", "steps_agent.py"))
STEPS = 100


def test_the_agent_does_every_step_exactly_once_though_killed_20_times(handoff_killer: Killer) -> None:
    run = handoff_killer.run([sys.executable, str(AGENT), str(STEPS)], kills=20, when="in_save")
    run.assert_finished(steps=[f"step {k}" for k in range(1, STEPS + 1)])
